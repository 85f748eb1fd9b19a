"""``is_expected_bookmarks`` on hand-made bookmark roots, with the score OSWorld's function gives and why.

The expected scores were also checked by running OSWorld's own function on the same
inputs (outside this repository); they differ only where OSWorld crashes (a missing
file, a rule the task got wrong), which scores 0 or stops the evaluator here.
"""

from __future__ import annotations

import pytest
from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators import METRICS, ZeroScore

check = METRICS.get("is_expected_bookmarks").fn


def url(u: str) -> dict:
    return {"type": "url", "url": u, "name": u}


def folder(name: str, *children: dict) -> dict:
    return {"type": "folder", "name": name, "children": list(children)}


ROOTS = {
    "bookmark_bar": folder(
        "Bookmarks bar",
        folder("Favorites"),
        url("https://a.example/"),
        folder("Liked Authors", url("https://jimfan.me/"), url("https://yukezhu.me/")),
    )
}


def test_folder_names_and_urls_on_the_bar_as_sets():
    assert (
        check(ROOTS, {"type": "bookmark_bar_folders_names", "names": ["Liked Authors", "Favorites"]}) == 1.0
    )
    # Every folder on the bar counts: {"Favorites", "Liked Authors"} != {"Favorites"}.
    assert check(ROOTS, {"type": "bookmark_bar_folders_names", "names": ["Favorites"]}) == 0.0
    assert check(ROOTS, {"type": "bookmark_bar_websites_urls", "urls": ["https://a.example/"]}) == 1.0
    # No Bookmarks file (the getter's []) or an empty roots dict: 0.
    assert check([], {"type": "bookmark_bar_folders_names", "names": []}) == 0.0


def test_liked_authors_one_url_of_each_alternative():
    rule = {
        "type": "liked_authors_websites_urls",
        "urls": [
            ["https://jimfan.me/", "https://research.nvidia.com/person/linxi-jim-fan"],
            "https://yukezhu.me/",
        ],
    }
    assert check(ROOTS, rule) == 1.0
    # The folder holds exactly the chosen set: an extra alternative makes no combination equal.
    assert check(ROOTS, {**rule, "urls": [["https://jimfan.me/"]]}) == 0.0
    bare = {"bookmark_bar": folder("Bookmarks bar", folder("Favorites"))}
    assert check(bare, rule) == 0.0  # no "Liked Authors" folder


def test_broken_bookmarks_and_rules():
    # An url entry without "url": OSWorld's comprehension raises KeyError.
    broken = {"bookmark_bar": folder("Bookmarks bar", {"type": "url", "name": "x"})}
    with pytest.raises(ZeroScore):
        check(broken, {"type": "bookmark_bar_websites_urls", "urls": []})
    with pytest.raises(EvaluationError):
        check(ROOTS, {"type": "reading_list"})

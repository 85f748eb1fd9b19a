"""Chromium metrics and Preferences getters on hand-made inputs, with the value OSWorld's code gives and why.

The expected scores were also checked by running OSWorld's own function on the same
inputs (outside this repository); they differ only where OSWorld crashes (a missing
file, a rule the task got wrong), which scores 0 or stops the evaluator here.
"""

from __future__ import annotations

import json

import pytest
from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators import METRICS, ZeroScore
from osworld_mcp_env.evaluators.getters.chrome import from_preferences, omnibox_text
from osworld_mcp_env.urls import compare_urls

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


# --- tabs, extensions and url equality ---------------------------------------------
# Expected values follow OSWorld's functions read line by line (metrics/chrome.py,
# metrics/utils.py compare_urls with tldextract, getters/chrome.py's Preferences getters).


def metric(name: str):
    return METRICS.get(name).fn


def test_compare_urls_normalises_like_osworld():
    # A lone www, the public suffix, the port, a "/" path and a missing scheme (http) go.
    assert compare_urls("https://www.airbnb.com.sg/", "https://airbnb.com")
    assert compare_urls("example.com/a", "http://www.example.org/a")
    assert compare_urls("http://127.0.0.1:8000/a", "http://127.0.0.1/a")
    # The scheme, the path, a query and a fragment count (full=True).
    assert not compare_urls("https://example.com/a", "http://example.com/a")
    assert not compare_urls("https://example.com/a?x=1", "https://example.com/a?x=2")
    assert compare_urls("https://example.com/a?x=1", "https://example.com/a?x=2", full=False)
    # A subdomain other than a lone www stays; file urls compare by path.
    assert not compare_urls("https://docs.example.com/", "https://example.com/")
    assert compare_urls("file:///home/user/a.html", "file:///home/user/a.html")
    assert not compare_urls("file:///home/user/a.html", "file:///home/user/b.html")
    assert compare_urls(None, None) and not compare_urls(None, "x")


def test_active_tab_exact_and_approximate():
    rule = {"type": "url", "url": "https://www.example.com/search?q=1"}
    tab = {"title": "t", "url": "https://example.com/search?q=1", "content": ""}
    assert metric("is_expected_active_tab")(tab, rule) == 1.0
    # active_url_from_accessTree's plain string is compared too.
    assert metric("is_expected_active_tab")("https://example.com/search?q=1", rule) == 1.0
    assert metric("is_expected_active_tab")({**tab, "url": "https://example.com/search?q=2"}, rule) == 0.0
    assert metric("is_expected_active_tab")(None, rule) == 0.0
    # approximate: the query is dropped but nothing is normalised, so "www." matters.
    approx = metric("is_expected_active_tab_approximate")
    assert approx({**tab, "url": "https://www.example.com/search?q=9"}, rule) == 1.0
    assert approx(tab, rule) == 0.0
    with pytest.raises(EvaluationError):
        approx(tab, {"type": "title", "title": "t"})


def test_expected_tabs_count_and_membership():
    rule = {"type": "url", "urls": ["https://a.example.com/", "file:///home/user/b.html"]}
    tabs = [{"url": "file:///home/user/b.html"}, {"url": "https://a.example.org"}]
    assert metric("is_expected_tabs")(tabs, rule) == 1.0  # any order, suffix ignored
    assert metric("is_expected_tabs")([*tabs, {"url": "about:blank"}], rule) == 0.0  # one too many
    # Same count, one expected url twice: are_lists_equal only asks each to be among them.
    assert metric("is_expected_tabs")(tabs, {"type": "url", "urls": [rule["urls"][1]] * 2}) == 1.0
    assert metric("is_expected_tabs")([], rule) == 0.0


def test_installed_extensions_subset_with_aliases():
    check_ext = metric("is_expected_installed_extensions")
    installed = ["uBlock Origin", "Zoom for Google Chrome"]
    assert check_ext(installed, {"expected": ["Zoom Chrome Extension"]}) == 1.0
    assert check_ext(installed, {"expected": ["uBlock Origin", "Dark Reader"]}) == 0.0
    # The getter's "Google" on a broken Preferences is iterated letter by letter, as there.
    assert check_ext("Google", {"expected": ["G"]}) == 1.0


PREFS = {
    "enable_do_not_track": True,
    "profile": {"name": "Thomas", "default_content_setting_values": {"cookies": 4}},
    "default_search_provider_data": {"template_url_data": {"short_name": "Microsoft Bing"}},
    "browser": {"theme": {"color_scheme2": 2}},
    "webkit": {"webprefs": {"default_font_size": 20}},
    "extensions": {"settings": {"abc": {"path": "/home/user/ext", "manifest": {"name": "Helper"}}}},
}


@pytest.mark.parametrize(
    ("getter", "value", "empty", "missing_file"),
    [
        ("enable_do_not_track", "true", "false", "false"),
        ("profile_name", "Thomas", None, None),
        ("default_search_engine", "Microsoft Bing", "Google", "Google"),
        # No "profile" key raises KeyError in OSWorld, whose except returns "Google".
        ("data_delete_automacally", "true", "Google", "Google"),
        ("chrome_appearance_mode_ui", "dark", "system", "system"),
        ("find_unpacked_extension_path", ["/home/user/ext"], [], "Google"),
        ("find_installed_extension_name", ["Helper"], [], "Google"),
        (
            "chrome_font_size",
            {"default_font_size": 20},
            {"default_fixed_font_size": 13, "default_font_size": 16, "minimum_font_size": 13},
            {"default_fixed_font_size": 13, "default_font_size": 16},
        ),
    ],
)
def test_preferences_getters(getter, value, empty, missing_file):
    assert from_preferences(getter, json.dumps(PREFS).encode()) == value
    assert from_preferences(getter, b"{}") == empty
    assert from_preferences(getter, None) == missing_file
    assert from_preferences(getter, b"{not json") == missing_file


def test_appearance_reads_color_scheme_and_system_theme():
    def mode(prefs: dict) -> str:
        return from_preferences("chrome_appearance_mode_ui", json.dumps(prefs).encode())

    assert mode({"browser": {"theme": {"color_scheme": 1}}}) == "light"
    assert (
        mode({"browser": {"theme": {"color_scheme2": 0, "color_scheme": 2}}}) == "system"
    )  # 2 wins only alone
    # The GTK theme switched off reads as light whatever the scheme.
    assert (
        mode({"browser": {"theme": {"color_scheme2": 2}}, "extensions": {"theme": {"system_theme": 0}}})
        == "light"
    )
    assert mode({"profile": {"default_content_setting_values": None}}) == "system"
    assert from_preferences("data_delete_automacally", b'{"profile": {}}') == "false"


def test_omnibox_text_drops_http_schemes_and_www():
    assert omnibox_text("https://www.example.com/a") == "example.com/a"
    assert omnibox_text("http://example.com/") == "example.com/"
    assert omnibox_text("file:///home/user/a.html") == "file:///home/user/a.html"
    assert omnibox_text("chrome://settings/appearance") == "chrome://settings/appearance"

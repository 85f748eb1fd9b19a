"""Chromium metrics over the bookmarks, tab and extension getters, with OSWorld's semantics.

Urls are equal as OSWorld's ``compare_urls`` says (:mod:`osworld_mcp_env.urls`).
A rule type OSWorld does not know logs an error there and scores 0; here it is the
task's mistake, reported as such (:class:`EvaluationError`).
"""

from __future__ import annotations

import itertools
import urllib.parse
from collections.abc import Mapping
from typing import Any

from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric
from osworld_mcp_env.urls import compare_urls

BOOKMARK_RULES = ("bookmark_bar_folders_names", "bookmark_bar_websites_urls", "liked_authors_websites_urls")


def _bar(roots: Mapping[str, Any], kind: str, field: str) -> list[Any]:
    return [b[field] for b in roots["bookmark_bar"]["children"] if b["type"] == kind]


@register_metric("is_expected_bookmarks")
def is_expected_bookmarks(result: Any, expected: Any, **options: Any) -> float:
    """1 when the bookmarks bar holds what the rule names.

    ``bookmark_bar_folders_names``: the set of folder names on the bar equals ``names``.
    ``bookmark_bar_websites_urls``: the set of urls on the bar equals ``urls``.
    ``liked_authors_websites_urls``: the bar's "Liked Authors" folder holds, as a set,
    one url of each of ``urls``' alternatives (a str counts as a list of one).
    """
    if not isinstance(expected, Mapping) or expected.get("type") not in BOOKMARK_RULES:
        raise EvaluationError(
            f"is_expected_bookmarks: rule type must be one of {BOOKMARK_RULES}: {expected!r}"
        )
    if not result:
        return 0.0
    kind = expected["type"]
    try:
        if kind == "bookmark_bar_folders_names":
            return float(set(_bar(result, "folder", "name")) == set(expected["names"]))
        if kind == "bookmark_bar_websites_urls":
            return float(set(_bar(result, "url", "url")) == set(expected["urls"]))
        folder = next(
            (
                b
                for b in result["bookmark_bar"]["children"]
                if b["type"] == "folder" and b["name"] == "Liked Authors"
            ),
            None,
        )
        if folder is None:
            return 0.0
        urls = {b["url"] for b in folder["children"] if b["type"] == "url"}
        choices = [[u] if isinstance(u, str) else u for u in expected["urls"]]
        return float(any(set(combo) == urls for combo in itertools.product(*choices)))
    except (KeyError, TypeError) as exc:
        raise ZeroScore(f"is_expected_bookmarks: OSWorld raises on these bookmarks: {exc!r}") from exc


def _url_rule(metric: str, rule: Any, key: str) -> Any:
    if not isinstance(rule, Mapping) or rule.get("type") != "url" or key not in rule:
        raise EvaluationError(f"{metric}: the rule must be {{'type': 'url', {key!r}: ...}}, got {rule!r}")
    return rule[key]


def _active_url(result: Any) -> Any:
    """OSWorld takes a dict's ``url``, or the value itself (``active_url_from_accessTree``'s string)."""
    return result.get("url", None) if isinstance(result, Mapping) else result


@register_metric("is_expected_active_tab")
def is_expected_active_tab(result: Any, expected: Any, **options: Any) -> float:
    """1 when the active tab's url equals ``rules["url"]`` by ``compare_urls``."""
    url = _url_rule("is_expected_active_tab", expected, "url")
    if not result:
        return 0.0
    return float(compare_urls(url, _active_url(result)))


def _without_query(url: str) -> str:
    return urllib.parse.urlunparse(urllib.parse.urlparse(url)._replace(query=""))


@register_metric("is_expected_active_tab_approximate")
def is_expected_active_tab_approximate(result: Any, expected: Any, **options: Any) -> float:
    """1 when the active tab's url equals ``rules["url"]`` once both lose their query string.

    The comparison is of the raw urls (no ``compare_urls`` normalisation), as in OSWorld.
    """
    url = _url_rule("is_expected_active_tab_approximate", expected, "url")
    if not result:
        return 0.0
    actual = _active_url(result)
    if actual is None:
        raise ZeroScore("is_expected_active_tab_approximate: the active tab has no url (OSWorld raises)")
    return float(_without_query(url) == _without_query(actual))


@register_metric("is_expected_tabs")
def is_expected_tabs(result: Any, expected: Any, **options: Any) -> float:
    """1 when the open tabs' urls match ``rules["urls"]``: same count, each expected url among them.

    OSWorld's ``are_lists_equal``: order and duplicates do not matter beyond the count.
    """
    urls = _url_rule("is_expected_tabs", expected, "urls")
    if not result:
        return 0.0
    actual = [tab["url"] for tab in result]
    return float(len(urls) == len(actual) and all(any(compare_urls(u, a) for a in actual) for u in urls))


# Names the Chrome Web Store gave the same extension over time (OSWorld's alias table).
EXTENSION_ALIASES = (frozenset({"Zoom Chrome Extension", "Zoom for Google Chrome"}),)


def _extension_name(name: str) -> str:
    return next((min(group) for group in EXTENSION_ALIASES if name in group), name)


@register_metric("is_expected_installed_extensions")
def is_expected_installed_extensions(result: Any, expected: Any, **options: Any) -> float:
    """1 when every name of ``rules["expected"]`` is among the installed extensions' names."""
    if not isinstance(expected, Mapping) or "expected" not in expected:
        raise EvaluationError(f"is_expected_installed_extensions: the rule needs 'expected': {expected!r}")
    if not result:
        return 0.0
    wanted = {_extension_name(n) for n in expected["expected"]}
    return float(wanted <= {_extension_name(n) for n in result})

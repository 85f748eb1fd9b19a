"""Chromium metrics: ``is_expected_bookmarks`` over the ``bookmarks`` getter's roots."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric

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

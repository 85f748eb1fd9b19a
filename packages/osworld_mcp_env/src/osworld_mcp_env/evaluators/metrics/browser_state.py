"""Metrics over Chromium's stored state and the desktop's launchers: history, cookies, a cart, shortcuts.

Each takes the getter's rows as OSWorld's getters return them (``history``: rows whose
first field is the url; ``cookie_data``: rows of Chromium's ``cookies`` table, the host
in the second field; ``page_info``: a dict with the page's ``content``;
``shortcuts_on_desktop``: ``{path: file text}``) and a rule. A rule type OSWorld does
not implement raises there; here it is the task's mistake (:class:`EvaluationError`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric
from osworld_mcp_env.urls import compare_urls


def _rule(metric: str, rule: Any, kind: str, key: str) -> Any:
    if not isinstance(rule, Mapping) or rule.get("type") != kind or key not in rule:
        raise EvaluationError(
            f"{metric}: the rule must be {{'type': {kind!r}, {key!r}: ...}}, got {rule!r:.200}"
        )
    return rule[key]


def _rows(metric: str, rows: Any) -> Sequence[Any]:
    if not isinstance(rows, Sequence) or isinstance(rows, str):
        raise ZeroScore(f"{metric}: no rows to read, got {type(rows).__name__} (OSWorld raises)")
    return rows


@register_metric("check_history_deleted")
def check_history_deleted(result: Any, expected: Any, **options: Any) -> float:
    """1 when no history url contains any of ``rules["keywords"]`` (plain substring, case-sensitive)."""
    keywords = _rule("check_history_deleted", expected, "keywords", "keywords")
    urls = [row[0] for row in _rows("check_history_deleted", result)]
    return float(not any(word in url for word in keywords for url in urls))


@register_metric("is_cookie_deleted")
def is_cookie_deleted(result: Any, expected: Any, **options: Any) -> float:
    """1 when no cookie's host equals one of ``rules["domains"]`` by OSWorld's ``compare_urls``.

    Hosts are compared as urls (:mod:`osworld_mcp_env.urls`): ``.amazon.com``,
    ``amazon.com`` and ``www.amazon.com`` are one site, ``smile.amazon.com`` another.
    """
    domains = _rule("is_cookie_deleted", expected, "domains", "domains")
    hosts = [row[1] for row in _rows("is_cookie_deleted", result)]
    return float(not any(compare_urls(domain, host) for domain in domains for host in hosts))


@register_metric("is_added_to_steam_cart")
def is_added_to_steam_cart(result: Any, expected: Any, **options: Any) -> float:
    """1 when every name of ``rules["items"]`` occurs in the page's text (``result["content"]``)."""
    if not isinstance(expected, Mapping) or "items" not in expected:
        raise EvaluationError(f"is_added_to_steam_cart: the rule needs 'items', got {expected!r:.200}")
    if not isinstance(result, Mapping) or not isinstance(result.get("content"), str):
        raise ZeroScore("is_added_to_steam_cart: the page has no text content (OSWorld raises)")
    return float(all(item in result["content"] for item in expected["items"]))


@register_metric("is_shortcut_on_desktop")
def is_shortcut_on_desktop(result: Any, expected: Any, **options: Any) -> float:
    """1 when some desktop launcher has the line ``Name=<rules["name"]>`` (newline-terminated).

    OSWorld implements only the ``name`` rule; ``url`` and ``id`` raise there.
    """
    name = _rule("is_shortcut_on_desktop", expected, "name", "name")
    if not isinstance(result, Mapping):
        raise ZeroScore(f"is_shortcut_on_desktop: expected {{path: text}}, got {type(result).__name__}")
    line = f"Name={name}\n"
    return float(any(line in str(text) for text in result.values()))

"""``compare_htmls``: two HTML files walked node by node, as OSWorld walks them with BeautifulSoup.

Both files are parsed by BeautifulSoup's ``lxml`` builder and their descendants (tags
and strings, in document order) are paired. A pair of tags must agree on name, stripped
text and attributes; any other pair must be equal. The walk stops at the shorter
document, so a page that is a prefix of the other passes: OSWorld's verdict too.
"""

from __future__ import annotations

from typing import Any

from bs4 import BeautifulSoup, Tag

from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric


def _soup(path: Any) -> BeautifulSoup:
    try:
        with open(path, encoding="utf-8") as f:
            return BeautifulSoup(f, "lxml")
    except (OSError, UnicodeDecodeError, TypeError) as exc:
        raise ZeroScore(f"compare_htmls: cannot read {path!r} (OSWorld raises): {exc}") from exc


def _same_node(a: Any, b: Any) -> bool:
    if not (isinstance(a, Tag) and isinstance(b, Tag)):
        return bool(a == b)
    return a.name == b.name and a.text.strip() == b.text.strip() and a.attrs == b.attrs


@register_metric("compare_htmls")
def compare_htmls(result: Any, expected: Any, **options: Any) -> float:
    """1 when every paired node of the two documents agrees (see the module docstring)."""
    mine, theirs = _soup(result), _soup(expected)
    return float(all(_same_node(a, b) for a, b in zip(mine.descendants, theirs.descendants, strict=False)))

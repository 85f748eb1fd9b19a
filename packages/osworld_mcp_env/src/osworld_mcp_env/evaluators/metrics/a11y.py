"""``check_accessibility_tree``: XPath or CSS selectors over the AT-SPI tree, scored as OSWorld does.

The tree is the XML of the ``accessibility_tree`` getter (OSWorld's ``/accessibility``
format, namespaced attributes under OSWorld's "ubuntu" namespace URIs). CSS selectors
are translated by ``lxml.cssselect``, which needs the ``cssselect`` package.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import lxml.etree
from rapidfuzz import fuzz

from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric

# The prefixes task rules use (``attr|id=...``, ``st:focused``), bound as OSWorld binds them on Ubuntu.
A11Y_NAMESPACES = {
    prefix: f"https://accessibility.ubuntu.example.org/ns/{path}"
    for prefix, path in {
        "st": "state",
        "attr": "attributes",
        "cp": "component",
        "doc": "document",
        "docattr": "document/attributes",
        "txt": "text",
        "val": "value",
        "act": "action",
    }.items()
}


def _select(tree: Any, rule: Mapping[str, Any]) -> list[Any]:
    """The elements a rule's ``xpath`` (which wins) or joined ``selectors`` pick."""
    try:
        if "xpath" in rule:
            return list(tree.xpath(rule["xpath"], namespaces=A11Y_NAMESPACES))
        if "selectors" in rule:
            try:
                from lxml.cssselect import CSSSelector
            except ImportError as exc:
                raise EvaluationError(
                    "check_accessibility_tree: CSS selectors need the 'cssselect' package"
                ) from exc
            return list(CSSSelector(", ".join(rule["selectors"]), namespaces=A11Y_NAMESPACES)(tree))
    except (lxml.etree.XPathError, SyntaxError) as exc:  # cssselect's SelectorError is a SyntaxError
        raise EvaluationError(f"check_accessibility_tree: bad selector in {dict(rule)!r}: {exc}") from exc
    raise EvaluationError(f"check_accessibility_tree: a rule needs 'xpath' or 'selectors': {dict(rule)!r}.")


@register_metric("check_accessibility_tree")
def check_accessibility_tree(result: Any, expected: Any, **options: Any) -> float:
    """The product over rules of each rule's best match; 0 as soon as a rule selects nothing.

    A rule without ``text`` scores 1 once it selects something. With ``text``,
    ``exact: true`` scores 1 when some element's text equals it, ``exact: false`` the
    best ``rapidfuzz`` ratio / 100 (an element without text counts as None: ratio 0).
    """
    if not isinstance(expected, Sequence) or isinstance(expected, str):
        raise EvaluationError(f"check_accessibility_tree: expected a list of rules, got {expected!r:.200}.")
    if result is None:
        return 0.0
    try:
        tree = lxml.etree.fromstring(result.encode() if isinstance(result, str) else result)
    except lxml.etree.XMLSyntaxError as exc:
        raise ZeroScore(f"check_accessibility_tree: the tree is not XML (OSWorld raises): {exc}") from exc
    total = 1.0
    for rule in expected:
        elements = _select(tree, rule)
        if not elements:
            return 0.0
        if "text" in rule:
            want = rule["text"]
            if rule["exact"]:
                score = float(any(want == (e.text or None) for e in elements))
            else:
                # An element without text is OSWorld's ratio(want, None): 0, even for an empty ``want``.
                score = max(fuzz.ratio(want, e.text) / 100.0 if e.text else 0.0 for e in elements)
            total *= score
    return total

"""Thunderbird metrics over ``prefs.js`` and ``msgFilterRules.dat``, read line by line as OSWorld does."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators.metrics.cells import match_rule
from osworld_mcp_env.evaluators.metrics.general import record_matches
from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric

_PREF = re.compile(r'^user_pref\("(?P<key>(?:[^"]|\\")+)", (?P<val>.+)\);$')
# One condition of a filter: "AND (subject,contains,discount)", or the catch-all "ALL".
_CONDITION = re.compile(
    r"""\b(?:AND|OR) \((?:[\w ]+),(?:[\w ']+),(?:"(?:(?:[^"]|")+)"|(?:[^)]+))\)|\bALL\b"""
)


def _lines(path: Any, metric: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as f:
            return list(f)
    except (OSError, UnicodeDecodeError, TypeError) as exc:
        raise ZeroScore(f"{metric}: cannot read {path!r} (OSWorld raises): {exc}") from exc


@register_metric("check_thunderbird_prefs")
def check_thunderbird_prefs(result: Any, expected: Any, **options: Any) -> float:
    """1 when every ``expect`` pref matches its value rule and no ``unexpect`` pref does.

    Values are the JSON after ``user_pref("key", `` on each line; the last line of a key
    decides. A pref in ``expect`` that no line sets fails; a key in both maps counts
    for ``expect`` only.
    """
    if not isinstance(expected, Mapping):
        raise EvaluationError(f"check_thunderbird_prefs: expected rules, got {expected!r:.200}.")
    if result is None:
        return 0.0
    expect, unexpect = expected.get("expect", {}), expected.get("unexpect", {})
    found = dict.fromkeys(expect, False)
    clean = True
    try:
        for line in _lines(result, "check_thunderbird_prefs"):
            match = _PREF.match(line.strip())
            if match is None:
                continue
            key, value = match.group("key"), json.loads(match.group("val"))
            if key in expect:
                found[key] = match_rule(value, expect[key])
            elif key in unexpect:
                clean = clean and not match_rule(value, unexpect[key])
    except (ValueError, TypeError, AttributeError) as exc:  # json.JSONDecodeError is a ValueError
        raise ZeroScore(f"check_thunderbird_prefs: OSWorld raises on this prefs.js: {exc}") from exc
    return float(all(found.values()) and clean)


def _unescape(value: str) -> str:
    return value.replace('\\"', '"').replace("\\\\", "\\")


# Line prefix -> (filter key, characters to drop in front); every value ends in '"\n'.
_FILTER_KEYS = {
    "enabled=": ("enabled", 9),
    "type=": ("type", 6),
    "action=": ("action", 8),
    "actionValue=": ("actionValue", 13),
}


def read_filters(lines: list[str]) -> list[dict[str, Any]]:
    """The filters of a ``msgFilterRules.dat``, as OSWorld collects them.

    ``name=`` starts a filter; ``condition=`` ends it (a filter without a condition line
    is never collected). Values are sliced as OSWorld slices them: ``line[len(prefix)+1:-2]``,
    which assumes the closing quote and a newline (the last line without a newline
    loses its last character, as there).
    """
    filters: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in lines:
        if line.startswith("name="):
            current = {"name": _unescape(line[6:-2])}
            continue
        prefix = next((p for p in (*_FILTER_KEYS, "condition=") if line.startswith(p)), None)
        if prefix is None:
            continue
        if current is None:
            raise ZeroScore(
                f"check_thunderbird_filter: {prefix!r} before any name= (OSWorld raises NameError)"
            )
        if prefix == "condition=":
            current["condition"] = _CONDITION.findall(_unescape(line[11:-2]))
            filters.append(current)
        else:
            key, start = _FILTER_KEYS[prefix]
            current[key] = _unescape(line[start:-2])
    return filters


@register_metric("check_thunderbird_filter")
def check_thunderbird_filter(result: Any, expected: Any, **options: Any) -> float:
    """1 when each ``expect`` record matches some filter and no ``unexpect`` record matches any.

    A record matches a filter when each of its keys (``name``, ``enabled``, ``type``,
    ``action``, ``actionValue``, ``condition``: a list of condition strings) is equal.
    """
    if not isinstance(expected, Mapping):
        raise EvaluationError(f"check_thunderbird_filter: expected rules, got {expected!r:.200}.")
    if result is None:
        return 0.0
    filters = read_filters(_lines(result, "check_thunderbird_filter"))
    expect, unexpect = expected.get("expect", []), expected.get("unexpect", [])
    found = all(any(record_matches(r, f) for f in filters) for r in expect)
    clean = not any(record_matches(r, f) for f in filters for r in unexpect)
    return float(found and clean)


def _folder_digest(text: str, options: Mapping[str, Any]) -> str:
    """What OSWorld compares of a folder file: its ``FROM - `` chunks, as its loop keeps them.

    OSWorld's loop skips every chunk that has text (its test reads ``if mail.strip():
    continue``), so only blank chunks survive, each as the bare ``"FROM - "``: a file
    starting with ``FROM - `` or holding two in a row yields one, a Thunderbird mbox
    (whose separators are ``From - ``) none. Its deleted-status and normalising options
    act on those blank chunks only and so never change the result; ``remove_duplicate``
    (default on) keeps one.
    """
    kept = ["FROM - " for chunk in text.strip().split("FROM - ") if not chunk.strip()]
    if options.get("remove_duplicate", True):
        kept = list(set(kept))
    return "\n".join(sorted(kept))


@register_metric(
    "check_thunderbird_folder", options=("ignore_status", "ignore_keys", "remove_deleted", "remove_duplicate")
)
def check_thunderbird_folder(result: Any, expected: Any, **options: Any) -> float:
    """1 when each result folder file has the same digest (:func:`_folder_digest`) as its gold file.

    A single path or lists of paths, paired in order (extra ones on either side are not
    read, as zip does there). A missing result scores 0; an unreadable file is OSWorld's crash.
    """
    results, golds = (result, expected) if isinstance(expected, list) else ([result], [expected])
    for got, gold in zip(results, golds, strict=False):
        if got is None:
            return 0.0
        mine = _folder_digest("".join(_lines(got, "check_thunderbird_folder")), options)
        theirs = _folder_digest("".join(_lines(gold, "check_thunderbird_folder")), options)
        if mine != theirs:
            return 0.0
    return 1.0

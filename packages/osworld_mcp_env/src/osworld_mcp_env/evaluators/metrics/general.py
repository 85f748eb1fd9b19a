"""Text and record metrics: ``exact_match``, ``check_include_exclude``, ``compare_text_file``, ...

Each takes ``(result, expected, **options)``. A None ``result`` (the agent's file
or output does not exist) scores 0. A malformed *expected* side (the task's own
rules) raises :class:`~osworld_mcp_env.errors.EvaluationError`.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping
from typing import Any

from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators.registry import register_metric


def _rules(expected: Any, metric: str, *keys: str) -> Mapping[str, Any]:
    if not isinstance(expected, Mapping) or not any(k in expected for k in keys):
        raise EvaluationError(f"{metric}: expected rules with one of {keys}, got {expected!r:.200}.")
    return expected


@register_metric("exact_match")
def exact_match(result: Any, expected: Any, **options: Any) -> float:
    """1 when ``result == rules["expected"]`` (strings compared verbatim, newlines included)."""
    rules = _rules(expected, "exact_match", "expected")
    if result is None:
        return 0.0
    return float(result == rules["expected"])


@register_metric("check_include_exclude")
def check_include_exclude(result: Any, expected: Any, **options: Any) -> float:
    """1 when every ``rules["include"]`` string is in ``result`` and no ``rules["exclude"]`` one is."""
    rules = _rules(expected, "check_include_exclude", "include", "exclude")
    if result is None:
        return 0.0
    text = str(result)
    include = rules.get("include", [])
    exclude = rules.get("exclude", [])
    return float(all(s in text for s in include) and all(s not in text for s in exclude))


def _read_text(path: str | None) -> str | None:
    """The file's text, or None when there is no path (the getter found nothing) or no file."""
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return None


@register_metric("compare_text_file", options=("ignore_blanks", "ignore_case"))
def compare_text_file(result: Any, expected: Any, **options: Any) -> float:
    """1 when two text files are equal.

    Options:
        ignore_blanks: Collapse runs of whitespace and strip the ends first.
        ignore_case: Compare case-insensitively.
    """
    if result is None:
        return 0.0
    if expected is None:
        raise EvaluationError("compare_text_file needs an expected file.")
    got = _read_text(result)
    want = _read_text(expected)
    if want is None:
        raise EvaluationError(f"compare_text_file: expected file {expected!r} does not exist.")
    if got is None:
        return 0.0
    if options.get("ignore_blanks", False):
        got, want = (re.sub(r"\s+", " ", t).strip() for t in (got, want))
    if options.get("ignore_case", False):
        got, want = got.lower(), want.lower()
    return float(got == want)


def record_matches(pattern: Mapping[str, Any], record: Mapping[str, Any]) -> bool:
    """OSWorld's ``_match_record``: every key of ``pattern`` is in ``record`` with an equal value."""
    return all(k in record and record[k] == v for k, v in pattern.items())


@register_metric("check_csv")
def check_csv(result: Any, expected: Any, **options: Any) -> float:
    """1 when each ``rules["expect"]`` pattern matches a CSV row and no ``rules["unexpect"]`` one does.

    Rows are read with the first line as header; a pattern matches a row when every
    one of its keys has that value.
    """
    rules = _rules(expected, "check_csv", "expect", "unexpect")
    if result is None:
        return 0.0
    expect = list(rules.get("expect", []))
    unexpect = list(rules.get("unexpect", []))
    found = [False] * len(expect)
    try:
        with open(result, newline="", encoding="utf-8", errors="replace") as f:
            for record in csv.DictReader(f):
                found = [hit or record_matches(p, record) for hit, p in zip(found, expect, strict=True)]
                if any(record_matches(p, record) for p in unexpect):
                    return 0.0
    except FileNotFoundError:
        return 0.0
    return float(all(found))


@register_metric("file_contains")
def file_contains(result: Any, expected: Any, **options: Any) -> float:
    """1 when the text file contains every string of ``rules["expected"]``."""
    rules = _rules(expected, "file_contains", "expected")
    text = _read_text(result)
    if text is None:
        return 0.0
    return float(all(s in text for s in rules["expected"]))


_TIME = re.compile(r"([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)")


@register_metric("check_line_number")
def check_line_number(result: Any, expected: Any, **options: Any) -> float:
    """1 when the number of lines holding a ``HH:MM:SS`` time equals ``int(rules["expected"])``."""
    rules = _rules(expected, "check_line_number", "expected")
    text = _read_text(result)
    if text is None:
        return 0.0
    # OSWorld iterates the file: lines end at "\n" only, not at str.splitlines' \f, \x1c, \u2028...
    count = sum(1 for line in io.StringIO(text) if _TIME.search(line))
    return float(count == int(rules["expected"]))

"""Spreadsheet metrics: ``compare_table`` (xlsx, rule-based) and ``compare_csv``.

``compare_table(result, expected, rules=[...])`` passes when every rule passes.
Supported rule types (checked when a task loads): ``sheet_name``, ``sheet_data``
(cell values of two sheets, formulas compared by their cached values; options
``precision`` and ``ignore_case``), ``sheet_fuzzy``, ``check_cell`` (``value``
prop), ``freeze`` and ``zoom``. Sheet indices follow OSWorld: an int picks a sheet of
the result by position; ``"RI<n>"``/``"RN<name>"`` the result's by index/name;
``"EI<n>"``/``"EN<name>"`` the expected file's.

Differences from OSWorld, on purpose: cells are compared from openpyxl's values, not
through pandas, so ``15`` and ``15.0`` are equal (pandas' ``DataFrame.equals``
would compare column dtypes); trailing empty rows and columns are ignored, as
pandas does when it reads a sheet.
"""

from __future__ import annotations

import difflib
import operator
import re
import zipfile
from collections.abc import Callable, Mapping
from typing import Any

import openpyxl
from openpyxl.utils import range_boundaries
from openpyxl.utils.exceptions import InvalidFileException
from openpyxl.workbook.workbook import Workbook
from openpyxl.worksheet.worksheet import Worksheet

from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators.registry import register_metric

_UNREADABLE = (InvalidFileException, zipfile.BadZipFile, KeyError, OSError, ValueError)


class _ResultUnusable(Exception):
    """The agent's workbook lacks what a rule needs: the rule fails (score 0)."""


def _load(path: str, *, data_only: bool) -> Workbook:
    return openpyxl.load_workbook(path, data_only=data_only)


class _Books:
    """The result and expected workbooks, each loaded lazily in both modes."""

    def __init__(self, result: str, expected: str | None) -> None:
        self._paths = {"R": result, "E": expected}
        self._cache: dict[tuple[str, bool], Workbook] = {}

    def book(self, side: str, *, data_only: bool = True) -> Workbook:
        key = (side, data_only)
        if key not in self._cache:
            path = self._paths[side]
            if path is None:
                raise EvaluationError("compare_table: a rule names the expected file, but there is none.")
            try:
                self._cache[key] = _load(path, data_only=data_only)
            except _UNREADABLE as exc:
                if side == "R":
                    raise _ResultUnusable(f"result {path!r} is not a readable xlsx: {exc}") from exc
                raise EvaluationError(f"compare_table: expected file {path!r} is unreadable: {exc}") from exc
        return self._cache[key]

    def sheet(self, idx: Any, *, data_only: bool = True) -> Worksheet:
        side, by, key = _parse_idx(idx)
        wb = self.book(side, data_only=data_only)
        names = wb.sheetnames
        name = names[key] if by == "I" and -len(names) <= key < len(names) else key if by == "N" else None
        if name not in names:
            if side == "R":
                raise _ResultUnusable(f"result has no sheet {idx!r} (sheets: {names})")
            raise EvaluationError(f"compare_table: expected file has no sheet {idx!r} (sheets: {names}).")
        return wb[name]


_IDX = re.compile(r"^(R|E)(I|N)(.+)$")


def _parse_idx(idx: Any) -> tuple[str, str, Any]:
    if isinstance(idx, int) and not isinstance(idx, bool):
        return "R", "I", idx
    m = _IDX.match(str(idx))
    if not m:
        raise EvaluationError(
            f"compare_table: bad sheet index {idx!r}; use an int, RI<n>, RN<name>, EI<n>, EN<name>."
        )
    side, by, rest = m.groups()
    if by == "I":
        try:
            return side, by, int(rest)
        except ValueError:
            raise EvaluationError(f"compare_table: bad sheet index {idx!r}.") from None
    return side, by, rest


def _grid(ws: Worksheet) -> list[list[Any]]:
    rows = [list(r) for r in ws.iter_rows(values_only=True)]
    rows = [[None if v == "" else v for v in r] for r in rows]
    while rows and all(v is None for v in rows[-1]):
        rows.pop()
    width = max((max((i + 1 for i, v in enumerate(r) if v is not None), default=0) for r in rows), default=0)
    return [r[:width] + [None] * (width - len(r)) for r in rows]


def _norm(value: Any, precision: int | None, ignore_case: bool) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        v = float(value)
        return round(v, precision) if precision is not None else v
    if isinstance(value, str) and ignore_case:
        return value.lower()
    return value


def _rule_sheet_data(books: _Books, rule: Mapping[str, Any]) -> bool:
    precision = rule.get("precision")
    ignore_case = bool(rule.get("ignore_case", False))
    a = _grid(books.sheet(rule["sheet_idx0"]))
    b = _grid(books.sheet(rule["sheet_idx1"]))
    return [[_norm(v, precision, ignore_case) for v in r] for r in a] == [
        [_norm(v, precision, ignore_case) for v in r] for r in b
    ]


def _rule_sheet_name(books: _Books, rule: Mapping[str, Any]) -> bool:
    return books.book("R").sheetnames == books.book("E").sheetnames


def _fuzzy_cell(a: str, b: str, spec: Mapping[str, Any]) -> bool:
    for src, dst in spec.get("normalization", []):
        a, b = a.replace(src, dst), b.replace(src, dst)
    if spec.get("trim_leadings"):
        a, b = a.lstrip(spec["trim_leadings"]), b.lstrip(spec["trim_leadings"])
    if spec.get("trim_trailings"):
        a, b = a.rstrip(spec["trim_trailings"]), b.rstrip(spec["trim_trailings"])
    if spec.get("ignore_case"):
        a, b = a.lower(), b.lower()
    kind = spec.get("type", "exact_match")
    if kind == "exact_match":
        return a == b
    if kind == "includes":
        return b in a
    if kind == "included_by":
        return a in b
    if kind == "fuzzy_match":
        return difflib.SequenceMatcher(None, a, b).ratio() * 100 >= float(spec.get("threshold", 85))
    raise EvaluationError(f"compare_table: unknown sheet_fuzzy comparison {kind!r}.")


def _rule_sheet_fuzzy(books: _Books, rule: Mapping[str, Any]) -> bool:
    ra, rb = books.sheet(rule["sheet_idx0"]), books.sheet(rule["sheet_idx1"])
    for spec in rule["rules"]:
        for rng in spec["range"]:
            min_col, min_row, max_col, max_row = range_boundaries(rng)
            for row in range(min_row, max_row + 1):
                for col in range(min_col, max_col + 1):
                    va = ra.cell(row=row, column=col).value
                    vb = rb.cell(row=row, column=col).value
                    sa, sb = ("" if va is None else str(va)), ("" if vb is None else str(vb))
                    if not _fuzzy_cell(sa, sb, spec):
                        return False
    return True


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
}


def match_value(value: Any, method: str, ref: Any) -> bool:
    """Applies OSWorld's value rule ``method`` with reference ``ref`` to a cell value.

    Methods: ``eq``/``ne``/``lt``/``le``/``gt``/``ge``, ``approx:<tol>``, ``re``/``re.<FLAGS>``
    (search), ``str_list_eq`` (comma list), ``str_set_eq``.
    """
    if method in _OPS:
        try:
            return _OPS[method](value, ref)
        except TypeError:
            return False
    if method.startswith("approx:"):
        try:
            return abs(float(value) - float(ref)) <= float(method.split(":", 1)[1])
        except (TypeError, ValueError):
            return False
    if method == "re" or method.startswith("re."):
        flags = 0
        for name in method.split(".")[1:]:
            flags |= getattr(re, name)
        return value is not None and re.search(ref, str(value), flags) is not None
    if method == "str_list_eq":
        return value is not None and str(value).split(",") == list(ref)
    if method == "str_set_eq":
        return value is not None and set(str(value).split(",")) == set(ref)
    raise EvaluationError(f"compare_table: unknown value method {method!r}.")


_METHOD_RE = re.compile(r"^(eq|ne|lt|le|gt|ge|re(\.[A-Z]+)*|approx:[0-9.eE+-]+|str_list_eq|str_set_eq)$")


def _rule_check_cell(books: _Books, rule: Mapping[str, Any]) -> bool:
    # OSWorld reads check_cell values without data_only: a formula cell yields its formula text.
    ws = books.sheet(rule["sheet_idx"], data_only=False)
    cell = ws[rule["coordinate"]]
    return all(match_value(cell.value, p["method"], p.get("ref")) for _, p in rule["props"].items())


def _rule_freeze(books: _Books, rule: Mapping[str, Any]) -> bool:
    return books.sheet(rule["sheet_idx0"]).freeze_panes == books.sheet(rule["sheet_idx1"]).freeze_panes


def _rule_zoom(books: _Books, rule: Mapping[str, Any]) -> bool:
    zoom = books.sheet(rule["sheet_idx"]).sheet_view.zoomScale
    return match_value(float(zoom or 100), rule["method"], rule["ref"])


_RULES: dict[str, tuple[Callable[[_Books, Mapping[str, Any]], bool], tuple[str, ...]]] = {
    "sheet_name": (_rule_sheet_name, ()),
    "sheet_data": (_rule_sheet_data, ("sheet_idx0", "sheet_idx1")),
    "sheet_fuzzy": (_rule_sheet_fuzzy, ("sheet_idx0", "sheet_idx1", "rules")),
    "check_cell": (_rule_check_cell, ("sheet_idx", "coordinate", "props")),
    "freeze": (_rule_freeze, ("sheet_idx0", "sheet_idx1")),
    "zoom": (_rule_zoom, ("sheet_idx", "method", "ref")),
}


def check_table_options(options: Mapping[str, Any]) -> list[str]:
    """Load-time check of ``compare_table`` options: known rule types, required keys."""
    rules = options.get("rules")
    if not isinstance(rules, list) or not rules:
        return ["compare_table: options.rules must be a non-empty list."]
    problems = []
    for i, rule in enumerate(rules):
        kind = rule.get("type") if isinstance(rule, Mapping) else None
        if kind not in _RULES:
            known = ", ".join(sorted(_RULES))
            msg = f"compare_table: unsupported rule type {kind!r} in rules[{i}]. Known: {known}."
            close = difflib.get_close_matches(str(kind), list(_RULES), n=1)
            problems.append(msg + (f" Did you mean {close[0]!r}?" if close else ""))
            continue
        missing = [k for k in _RULES[kind][1] if k not in rule]
        if missing:
            problems.append(f"compare_table: rules[{i}] ({kind}) lacks {missing}.")
        if kind == "check_cell" and isinstance(rule.get("props"), Mapping):
            for prop, spec in rule["props"].items():
                if prop != "value":
                    problems.append(
                        f"compare_table: check_cell prop {prop!r} is not supported (only 'value')."
                    )
                elif not isinstance(spec, Mapping) or not _METHOD_RE.match(str(spec.get("method"))):
                    problems.append(f"compare_table: check_cell value method {spec!r} is not supported.")
    return problems


@register_metric("compare_table", check_options=check_table_options)
def compare_table(result: Any, expected: Any, **options: Any) -> float:
    """1 when every rule of ``options["rules"]`` passes on the result (and expected) xlsx.

    A missing or unreadable result file, or one that lacks a sheet a rule names,
    scores 0. A missing or unreadable expected file raises ``EvaluationError``.
    """
    if result is None:
        return 0.0
    problems = check_table_options(options)
    if problems:
        raise EvaluationError("; ".join(problems))
    books = _Books(result, expected)
    try:
        if expected is not None:
            books.book("E")
        books.book("R")
        return float(all(_RULES[r["type"]][0](books, r) for r in options["rules"]))
    except _ResultUnusable:
        return 0.0


@register_metric("compare_csv")
def compare_csv(result: Any, expected: Any, **options: Any) -> float:
    """1 when two CSV files have the same lines.

    Options:
        strict: When False, strip each line first (default True).
        ignore_case: Compare case-insensitively (default False).
    """
    if result is None:
        return 0.0
    if expected is None:
        raise EvaluationError("compare_csv needs an expected file.")
    try:
        with open(expected, encoding="utf-8", errors="replace") as f:
            want = f.read().splitlines()
    except FileNotFoundError as exc:
        raise EvaluationError(f"compare_csv: expected file {expected!r} does not exist.") from exc
    try:
        with open(result, encoding="utf-8", errors="replace") as f:
            got = f.read().splitlines()
    except FileNotFoundError:
        return 0.0
    if not options.get("strict", True):
        got, want = [s.strip() for s in got], [s.strip() for s in want]
    if options.get("ignore_case", False):
        got, want = [s.lower() for s in got], [s.lower() for s in want]
    return float(got == want)

"""Spreadsheet metrics: ``compare_table`` (xlsx, rule based) and ``compare_csv``, scored as OSWorld does.

``compare_table(result, expected, rules=[...])`` passes when every rule passes, in
order, stopping at the first that fails. Each rule reads the books the way OSWorld's
does, so the same file gets the same score:

* ``sheet_data`` reads both sheets with pandas (first row as header, ``N/A`` as
  missing, numeric text as numbers), rounds numbers to ``precision`` decimals
  (default 4) and compares with ``DataFrame.equals`` (dtypes included).
* ``check_cell`` reads ``value`` from the sheet XML (the value LibreOffice cached for a
  formula, see :mod:`.cells`) and style props from openpyxl.
* ``sheet_fuzzy`` compares cell texts from the sheet XML (an empty cell reads
  ``"None"``), with OSWorld's normalisation options and rapidfuzz ratios.
* ``sheet_print`` compares the CSV exports ``<book>-<sheet>.csv`` beside each book
  (a task's postconfig makes them), last line first, lines stripped.
* ``freeze`` compares the frozen column/row counts, not the scroll-dependent top cell.

The rule types holding charts, pivot tables and the like live in :mod:`.table_objects`.
Sheet indices follow OSWorld: an int picks a result sheet by position; ``RI<n>``/``RN<name>``
the result's by index/name; ``EI<n>``/``EN<name>`` the expected file's.
"""

from __future__ import annotations

import itertools
import re
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openpyxl
import pandas as pd
from openpyxl.utils import get_column_letter
from openpyxl.workbook.workbook import Workbook
from openpyxl.worksheet.cell_range import MultiCellRange
from openpyxl.worksheet.worksheet import Worksheet
from rapidfuzz import fuzz

from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators.metrics.cells import (
    CELL_STYLE_PROPS,
    METHOD_RE,
    match_rule,
    read_cell_style,
    read_cell_value,
)
from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric
from osworld_mcp_env.registry import Registry

_IDX = re.compile(r"^(RI|RN|EI|EN)")


class Books:
    """The result and expected workbooks, opened as OSWorld opens them (openpyxl and pandas).

    A sheet that cannot be found resolves to the name ``""``, as in OSWorld, and each
    rule then does what OSWorld's does with a missing sheet.
    """

    def __init__(self, result: str, expected: str | None) -> None:
        self.paths = {"R": result, "E": expected}
        self.xl: dict[str, Workbook] = {}
        self.pd: dict[str, pd.ExcelFile] = {}
        self.names: dict[str, list[str]] = {}

    def open(self, side: str) -> None:
        """Opens one side; errors propagate (the caller decides what they score)."""
        path = self.paths[side]
        self.xl[side] = openpyxl.load_workbook(path)
        self.pd[side] = pd.ExcelFile(path)
        self.names[side] = list(self.pd[side].sheet_names)

    def locate(self, idx: Any) -> tuple[str, str]:
        """(side, sheet name) of a sheet index; the name is ``""`` where OSWorld finds none."""
        if isinstance(idx, int) and not isinstance(idx, bool):
            names = self.names["R"]
            return "R", names[idx] if names and idx < len(names) else ""
        side, by, rest = idx[0], idx[1], idx[2:]
        if side == "E" and "E" not in self.names:
            # OSWorld indexes None here and stops: the task needs an expected file.
            raise ZeroScore(f"sheet index {idx!r} names the expected book, but the check has none")
        if by == "N":
            return side, rest
        try:
            return side, self.names[side][int(rest)]
        except (ValueError, IndexError):
            return side, ""

    def frame(self, idx: Any) -> pd.DataFrame | None:
        """The sheet as pandas reads it, or None where OSWorld's read fails."""
        side, name = self.locate(idx)
        try:
            return pd.read_excel(self.pd[side], name)
        except (ValueError, KeyError, IndexError, TypeError):
            return None

    def sheet(self, idx: Any) -> Worksheet | None:
        """The openpyxl sheet (formulas as written), or None."""
        side, name = self.locate(idx)
        return self.xl[side][name] if name in self.xl[side].sheetnames else None

    def cell_source(self, idx: Any) -> tuple[str, str]:
        """(book path, sheet name) for :func:`.cells.read_cell_value`."""
        side, name = self.locate(idx)
        return self.paths[side] or "", name


# --- rules --------------------------------------------------------------------------------------------


def _sheet_name(books: Books, rule: Mapping[str, Any]) -> bool:
    return books.names["R"] == books.names.get("E")


def _sheet_data(books: Books, rule: Mapping[str, Any]) -> bool:
    # OSWorld's sheet_data reads no ignore_case; it is accepted and ignored, as there.
    precision = rule.get("precision", 4)
    first = books.frame(rule["sheet_idx0"])
    if first is None:
        return False
    second = books.frame(rule["sheet_idx1"])
    if second is None:
        raise ZeroScore(f"sheet {rule['sheet_idx1']!r} cannot be read (OSWorld raises on it)")
    return bool(first.round(precision).equals(second.round(precision)))


def _csv_lines(book: str, sheet: str) -> list[str] | None:
    path = Path(f"{Path(book).with_suffix('')}-{sheet}.csv") if book else None
    if path is None or not path.is_file():
        return None
    data = path.read_bytes()
    for encoding in ("utf-8-sig", "latin-1"):  # OSWorld's encoding chain stops at latin-1
        try:
            text = data.decode(encoding)
            break
        except UnicodeDecodeError:
            continue
    lines = (line.strip() for line in reversed(text.splitlines()))
    return list(itertools.dropwhile(lambda line: not line, lines))


def _sheet_print(books: Books, rule: Mapping[str, Any]) -> bool:
    first = _csv_lines(*books.cell_source(rule["sheet_idx0"]))
    if first is None:
        return False
    second = _csv_lines(*books.cell_source(rule["sheet_idx1"]))
    if second is None:
        if rule.get("ignore_case", False):
            raise ZeroScore(f"no CSV export for {rule['sheet_idx1']!r} (OSWorld raises on it)")
        return False
    if rule.get("ignore_case", False):
        first, second = [s.lower() for s in first], [s.lower() for s in second]
    return first == second


def _fuzzy_pair(a: str, b: str, spec: Mapping[str, Any]) -> bool:
    for old, new in spec.get("normalization", []):
        a, b = a.replace(old, new), b.replace(old, new)
    if "trim_leadings" in spec:
        a, b = a.lstrip(spec["trim_leadings"]), b.lstrip(spec["trim_leadings"])
    if "trim_trailings" in spec:
        a, b = a.rstrip(spec["trim_trailings"]), b.rstrip(spec["trim_trailings"])
    if "ignore_chars" in spec:
        drop = set(spec["ignore_chars"])
        a, b = "".join(c for c in a if c not in drop), "".join(c for c in b if c not in drop)
    if spec.get("ignore_case", False):
        a, b = a.lower(), b.lower()
    kind = spec["type"]
    if kind == "includes":
        return b in a
    if kind == "included_by":
        return a in b
    if kind == "fuzzy_match":
        return fuzz.ratio(a, b) >= spec.get("threshold", 85.0)
    return a == b  # exact_match


def _sheet_fuzzy(books: Books, rule: Mapping[str, Any]) -> bool:
    first, second = books.cell_source(rule["sheet_idx0"]), books.cell_source(rule["sheet_idx1"])
    for spec in rule["rules"]:
        for rng in MultiCellRange(spec["range"]):
            for row, col in rng.cells:
                coord = f"{get_column_letter(col)}{row}"
                a, b = str(read_cell_value(*first, coord)), str(read_cell_value(*second, coord))
                if not _fuzzy_pair(a, b, spec):
                    return False
    return True


def _check_cell(books: Books, rule: Mapping[str, Any]) -> bool:
    sheet = books.sheet(rule["sheet_idx"])
    if sheet is None:
        return False
    cell = sheet[rule["coordinate"]]
    for prop, value_rule in rule["props"].items():
        if prop == "value":
            value = read_cell_value(*books.cell_source(rule["sheet_idx"]), rule["coordinate"])
        else:
            value = read_cell_style(prop, cell)
        try:
            if not match_rule(value, value_rule):
                return False
        except (TypeError, AttributeError, ValueError):
            # OSWorld catches any error of check_cell and scores the whole table 0.
            return False
    return True


def _freeze_key(sheet: Worksheet) -> tuple[Any, ...]:
    pane = sheet.sheet_view.pane
    if pane is None:
        return ("none",)
    xs, ys = int(pane.xSplit or 0), int(pane.ySplit or 0)
    if (pane.state or "").lower() in ("frozen", "frozensplit"):
        return ("frozen", xs, ys)
    return ("other", xs, ys, pane.topLeftCell)


def _freeze(books: Books, rule: Mapping[str, Any]) -> bool:
    first = books.sheet(rule["sheet_idx0"])
    if first is None:
        return False
    second = books.sheet(rule["sheet_idx1"])
    if second is None:
        raise ZeroScore(f"sheet {rule['sheet_idx1']!r} does not exist (OSWorld raises on it)")
    return _freeze_key(first) == _freeze_key(second)


def _zoom(books: Books, rule: Mapping[str, Any]) -> bool:
    sheet = books.sheet(rule["sheet_idx"])
    if sheet is None:
        return False
    return match_rule(sheet.sheet_view.zoomScale or 100.0, rule)


@dataclass(frozen=True)
class TableRule:
    """One ``compare_table`` rule type: its check, the keys it needs and accepts, and its load-time check."""

    check: Callable[[Books, Mapping[str, Any]], bool]
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    problems: Callable[[Mapping[str, Any]], list[str]] | None = None


PAIR = ("sheet_idx0", "sheet_idx1")
TABLE_RULES: Registry[TableRule] = Registry("compare_table rule type")
"""Rule types by name; :mod:`.table_objects` adds the object rules (chart, pivot_table, ...)."""
TABLE_RULES.add("sheet_name", TableRule(_sheet_name, ()))
TABLE_RULES.add("sheet_data", TableRule(_sheet_data, PAIR, ("precision", "ignore_case")))
TABLE_RULES.add("sheet_print", TableRule(_sheet_print, PAIR, ("ignore_case",)))
TABLE_RULES.add("sheet_fuzzy", TableRule(_sheet_fuzzy, (*PAIR, "rules")))
TABLE_RULES.add("check_cell", TableRule(_check_cell, ("sheet_idx", "coordinate", "props")))
TABLE_RULES.add("freeze", TableRule(_freeze, PAIR))
TABLE_RULES.add("zoom", TableRule(_zoom, ("sheet_idx", "method", "ref")))

_FUZZY_KEYS = {"range", "type", "threshold", "ignore_case", "ignore_chars", "trim_leadings"}
_FUZZY_KEYS |= {"trim_trailings", "normalization"}
_FUZZY_TYPES = {"includes", "included_by", "fuzzy_match", "exact_match"}


def _index_ok(idx: Any) -> bool:
    return (isinstance(idx, int) and not isinstance(idx, bool)) or bool(_IDX.match(str(idx)))


def _rule_problems(i: int, rule: Any) -> list[str]:
    at = f"compare_table: rules[{i}]"
    kind = rule.get("type") if isinstance(rule, Mapping) else None
    if not isinstance(kind, str) or kind not in TABLE_RULES:
        return [f"{at}: {TABLE_RULES.unknown_message(kind)}"]
    at += f" ({kind})"
    spec = TABLE_RULES.get(kind)
    out = [f"{at} lacks {k!r}." for k in spec.required if k not in rule]
    known = {"type", *spec.required, *spec.optional}
    out += [f"{at}: option {k!r} is not implemented." for k in rule if k not in known]
    out += [
        f"{at}: bad sheet index {rule[k]!r}; use an int, RI<n>, RN<name>, EI<n>, EN<name>."
        for k in ("sheet_idx", "sheet_idx0", "sheet_idx1")
        if k in rule and not _index_ok(rule[k])
    ]
    if kind == "check_cell" and isinstance(rule.get("props"), Mapping):
        for prop, value_rule in rule["props"].items():
            if prop != "value" and prop not in CELL_STYLE_PROPS:
                out.append(f"{at}: cell prop {prop!r} is not implemented.")
            if not isinstance(value_rule, Mapping) or not METHOD_RE.match(str(value_rule.get("method"))):
                out.append(f"{at}: value rule {value_rule!r} is not implemented.")
    for spec_ in rule.get("rules", []) if kind == "sheet_fuzzy" else []:
        out += [f"{at}: option {k!r} is not implemented." for k in spec_ if k not in _FUZZY_KEYS]
        if spec_.get("type") not in _FUZZY_TYPES:
            out.append(f"{at}: comparison {spec_.get('type')!r} is unknown.")
    if kind == "zoom" and not METHOD_RE.match(str(rule.get("method"))):
        out.append(f"{at}: method {rule.get('method')!r} is not implemented.")
    if spec.problems is not None:
        out += [f"{at}: {p}" for p in spec.problems(rule)]
    return out


def check_table_options(options: Mapping[str, Any]) -> list[str]:
    """Load-time check of ``compare_table`` options: known rule types, keys, sheet indices."""
    rules = options.get("rules")
    if not isinstance(rules, list) or not rules:
        return ["compare_table: options.rules must be a non-empty list."]
    return [p for i, rule in enumerate(rules) for p in _rule_problems(i, rule)]


_UNREADABLE = (zipfile.BadZipFile, KeyError, OSError, ValueError, TypeError)


@register_metric("compare_table", options=None, check_options=check_table_options)
def compare_table(result: Any, expected: Any, **options: Any) -> float:
    """1 when every rule of ``options["rules"]`` passes on the result (and expected) xlsx.

    A missing or unreadable result scores 0, as in OSWorld; an unreadable expected
    file raises ``EvaluationError`` (the task's file is broken, not the agent's).
    """
    if result is None or not Path(result).exists():
        return 0.0
    problems = check_table_options(options)
    if problems:
        raise EvaluationError("; ".join(problems))
    books = Books(result, expected)
    try:
        books.open("R")
    except _UNREADABLE:
        return 0.0
    if expected is not None:
        try:
            books.open("E")
        except _UNREADABLE as exc:
            raise EvaluationError(f"compare_table: expected file {expected!r} is unreadable: {exc}") from exc
    return float(all(TABLE_RULES.get(r["type"]).check(books, r) for r in options["rules"]))


def _csv_text_lines(path: str) -> list[str] | None:
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    try:
        return data.decode("utf-8-sig").splitlines()
    except UnicodeDecodeError:
        return data.decode("latin-1").splitlines()


@register_metric("compare_csv", options=("strict", "ignore_case"))
def compare_csv(result: Any, expected: Any, **options: Any) -> float:
    """1 when the result CSV has the same lines as the expected one, or as any of a list of them.

    Options:
        strict: When False, strip each line first (default True).
        ignore_case: Compare case-insensitively (default False).

    An expected file that does not exist is skipped, as OSWorld does.
    """
    if result is None:
        return 0.0
    got = _csv_text_lines(result)
    if got is None:
        return 0.0
    for path in [expected] if isinstance(expected, str) else list(expected or []):
        want = _csv_text_lines(path)
        if want is None:
            continue
        a, b = got, want
        if not options.get("strict", True):
            a, b = [s.strip() for s in a], [s.strip() for s in b]
        if options.get("ignore_case", False):
            a, b = [s.lower() for s in a], [s.lower() for s in b]
        if a == b:
            return 1.0
    return 0.0

"""``compare_table`` rules over sheet objects, read as OSWorld's ``load_*`` helpers read them.

The objects: charts, pivot tables, styles, rows and columns, data validation,
autofilters and sparklines.

Each rule reads the same description of both sheets and compares them with ``==``
(data validation checks the result sheet against the rule's properties instead). A
sheet that does not exist describes as ``{}``, as in OSWorld. Where OSWorld's reader
raises (a bar direction asked of a line chart, a font without a colour in a ``style``
rule), the table scores 0 with the reason (:class:`~osworld_mcp_env.evaluators.registry.ZeroScore`).

Conditional formats in a ``style`` rule: OSWorld evaluates their formulas with the
``formulas`` engine. Here a ``cellIs`` rule whose operands are literals (numbers,
quoted text, booleans) is evaluated the same way; one whose operand refers to cells
is skipped (OSWorld's compiled formula cannot be called without its inputs, and it
skips the rule too), except that a single absolute reference (``$B$2``) scores 0, as
OSWorld raises building its cell range; any other conditional format stops the evaluator with an
:class:`~osworld_mcp_env.errors.EvaluationError` naming it: this package has no
formula engine, and a silently different score is worse than none.
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
import zipfile
from collections.abc import Callable, Mapping
from typing import Any
from xml.etree import ElementTree

from openpyxl.cell.cell import MergedCell
from openpyxl.utils import coordinate_to_tuple, get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators.metrics.cells import CELL_STYLE_PROPS, METHOD_RE, match_rule, read_cell_value
from osworld_mcp_env.evaluators.metrics.table import PAIR, TABLE_RULES, Books, TableRule
from osworld_mcp_env.evaluators.registry import ZeroScore


def _sheet(books: Books, idx: Any) -> Worksheet | None:
    side, name = books.locate(idx)
    return books.xl[side][name] if name in books.xl[side].sheetnames else None


def _both(books: Books, rule: Mapping[str, Any], load: Callable[..., Any]) -> bool:
    """``load(first) == load(second)``; OSWorld's reader errors become a 0 with the reason."""
    try:
        return load(books, rule["sheet_idx0"], rule) == load(books, rule["sheet_idx1"], rule)
    except (AttributeError, KeyError, TypeError, ValueError, IndexError, OSError) as exc:
        raise ZeroScore(f"{rule['type']}: OSWorld's reader raises here: {type(exc).__name__}: {exc}") from exc


# --- charts -------------------------------------------------------------------------------------------

CHART_PROPS = (
    "title",
    "legend",
    "anchor",
    "width",
    "height",
    "type",
    "direction",
    "xtitle",
    "ytitle",
    "ztitle",
)


def _rich_text(read: Callable[[], Any]) -> Any:
    try:
        return read().tx.rich.p[0].r[0].t
    except Exception:  # OSWorld's bare except around each title: any failure is None
        return None


def _ref(ser_part: Any) -> str:
    for kind in ("numRef", "strRef"):
        ref = getattr(ser_part, kind, None)
        if ref is not None and hasattr(ref, "f"):
            return ref.f
    return ""


def _charts(books: Books, idx: Any, rule: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Charts keyed by their series (``values,categories;...``), with the asked properties."""
    sheet = _sheet(books, idx)
    if sheet is None:
        return {}
    props = set(rule.get("chart_props", []))
    out: dict[str, dict[str, Any]] = {}
    for chart in sheet._charts:
        series = ";".join(f"{_ref(s.val)},{_ref(s.cat)}" for s in chart.series)
        info: dict[str, Any] = {}
        if "title" in props:
            info["title"] = _rich_text(functools.partial(operator.attrgetter("title"), chart))
        if "legend" in props:
            info["legend"] = chart.legend.position if chart.legend is not None else None
        if "anchor" in props:
            a = chart.anchor  # OSWorld lists to.row twice and never from.row; kept
            info["anchor"] = [a.editAs, a._from.col, a.to.row, a.to.col, a.to.row]
        if "width" in props:
            info["width"] = chart.width
        if "height" in props:
            info["height"] = chart.height
        if "type" in props:
            info["type"] = chart.tagname
        if "direction" in props:
            info["direction"] = chart.barDir  # AttributeError on a non-bar chart, as in OSWorld
        for axis in ("x", "y", "z"):
            if f"{axis}title" in props:
                info[f"{axis}title"] = _rich_text(
                    functools.partial(operator.attrgetter(f"{axis}_axis.title"), chart)
                )
        out[series] = info
    return out


# --- pivot tables -------------------------------------------------------------------------------------

PIVOT_PROPS = (
    "name", "show_total", "show_empty_row", "show_empty_col", "show_headers", "location", "selection",
    "ordered", "filter", "col_fields", "row_fields", "data_fields", "data_fields_name",
)  # fmt: skip


def _pivots(books: Books, idx: Any, rule: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Pivot tables keyed by their source range (trimmed of fields no item selects)."""
    sheet = _sheet(books, idx)
    if sheet is None:
        return {}
    props = set(rule.get("pivot_props", []))
    out: dict[str, dict[str, Any]] = {}
    for pivot in sheet._pivots:
        raw = [[(item.h, item.x) for item in f.items if item.x is not None] for f in pivot.pivotFields]
        trimmed = list(itertools.dropwhile(lambda r: not r, raw))
        left = len(raw) - len(trimmed)
        selection = list(itertools.dropwhile(lambda r: not r, reversed(trimmed)))[::-1]
        right = len(trimmed) - len(selection)
        source = pivot.cache.cacheSource
        first, last = source.worksheetSource.ref.split(":")
        r1, c1 = coordinate_to_tuple(first)
        r2, c2 = coordinate_to_tuple(last)
        key = f"{source.type};{(r1, c1 + left)}:{(r2, c2 - right)};{source.worksheetSource.sheet}"
        info: dict[str, Any] = {}
        for prop, attr in (
            ("name", "name"),
            ("show_total", "visualTotals"),
            ("show_empty_row", "showEmptyRow"),
            ("show_empty_col", "showEmptyCol"),
            ("show_headers", "showHeaders"),
            ("location", "location"),
        ):
            if prop in props:
                info[prop] = getattr(pivot, attr)
        if "filter" in props or "selection" in props:
            info["selection"] = selection if "ordered" in props else [set(r) for r in selection]
        if "filter" in props:
            info["filter_fields"] = {f.fld for f in pivot.pageFields}
        if "col_fields" in props:
            info["col_fields"] = [f.x - left for f in pivot.colFields]
        if "row_fields" in props:
            info["row_fields"] = [f.x - left for f in pivot.rowFields]
        if "data_fields" in props:
            named = "data_fields_name" in props
            info["data_fields"] = [
                f"{f.fld - left:d};{f.name if named else ''};{f.subtotal};{f.showDataAs}"
                for f in pivot.dataFields
            ]
        out[key] = info
    return out


# --- styles -------------------------------------------------------------------------------------------


_FONT_ATTRS = {
    "font_name": "name",
    "font_family": "family",
    "font_bold": "bold",
    "font_italic": "italic",
    "font_underline": "underline",
    "font_size": "size",
}


def _style(prop: str, cell: Any, dxf: Any = None) -> Any:
    """OSWorld's ``_read_cell_style``, errors included (only fills are guarded there).

    ``dxf``, a conditional format's differential style, replaces the cell's font,
    number format and fill (its *background* colour) for these reads.
    """
    if prop == "merge":
        return isinstance(cell, MergedCell)
    if prop in ("fill_type", "bgcolor", "fgcolor"):
        try:
            if dxf is None:
                return CELL_STYLE_PROPS[prop](cell)
            return dxf.fill.tagname if prop == "fill_type" else dxf.fill.bgColor.rgb
        except AttributeError:
            return None
    if dxf is None or prop == "hyperlink":
        return CELL_STYLE_PROPS[prop](cell)
    if prop == "number_format":
        return dxf.numFmt.formatCode if cell.value is not None and cell.data_type == "n" else None
    if cell.value is None:
        return None
    if prop == "font_color":
        return dxf.font.color.rgb
    return getattr(dxf.font, _FONT_ATTRS[prop])


_CF_OPERATORS: dict[str, Callable[[Any, list[Any]], bool]] = {
    "lessThanOrEqual": lambda v, r: v <= r[0],
    "lessThan": lambda v, r: v < r[0],
    "equal": lambda v, r: v == r[0],
    "greaterThanOrEqual": lambda v, r: v >= r[0],
    "notEqual": lambda v, r: v != r[0],
    "greaterThan": lambda v, r: v > r[0],
    "between": lambda v, r: min(r) <= v <= max(r),
    "notBetween": lambda v, r: v < min(r) or v > max(r),
}
_ABSOLUTE_REF = re.compile(r"\$[A-Z]{1,3}\$\d+(?P<range>:\$[A-Z]{1,3}\$\d+)?")
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_CELL_REF = re.compile(r"\$?[A-Za-z]{1,3}\$?\d+")


def _literal(formula: str) -> tuple[bool, Any]:
    """(True, value) for a number, boolean or quoted-text formula; (False, None) for one that refers to cells.

    These are the values the ``formulas`` engine gives OSWorld for such formulas (checked:
    ``=5`` -> 5, ``=5.5`` -> 5.5, ``="abc"`` -> "abc", ``=TRUE`` -> True; ``=$B$2`` needs an input).
    """
    text = formula.strip()
    if _NUMBER.match(text):
        return True, float(text) if any(c in text for c in ".eE") else int(text)
    if text.upper() in ("TRUE", "FALSE"):
        return True, text.upper() == "TRUE"
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return True, text[1:-1].replace('""', '"')
    if _CELL_REF.search(text):
        return False, None
    raise EvaluationError(f"style: conditional format operand {formula!r} needs a formula engine")


def _cell_is(rule: Any) -> Callable[[Any], bool] | None:
    """The activity test of a ``cellIs`` rule; None when OSWorld skips the rule."""
    operands = [_literal(f) for f in rule.formula]
    if not all(ok for ok, _ in operands):
        return None
    refs = [v for _, v in operands]
    test = _CF_OPERATORS.get(rule.operator)
    if test is None:
        # OSWorld's operator function then fails for every cell, and its caller reads that as inactive.
        return None

    def active(value: Any) -> bool:
        try:
            return test(value, refs)
        except (TypeError, IndexError):
            return False

    return active


def _styles(books: Books, idx: Any, rule: Mapping[str, Any]) -> dict[str, list[Any]]:
    """Each cell's asked style props, conditional formats applied where they hold."""
    sheet = _sheet(books, idx)
    if sheet is None:
        return {}
    props = list(rule.get("props", []))
    out = {c.coordinate: [_style(p, c) for p in props] for col in sheet.iter_cols() for c in col}
    book, name = books.cell_source(idx)
    for fmt in sheet.conditional_formatting:
        for cf in fmt.rules:
            if any(m.group("range") is None for f in cf.formula for m in _ABSOLUTE_REF.finditer(f)):
                # OSWorld reads each absolute reference's cells, and builds "B2:" for a single one.
                raise ZeroScore(
                    f"style: conditional format {cf.formula!r} (OSWorld raises on a single $A$1 reference)"
                )
            if cf.type != "cellIs":
                raise EvaluationError(f"style: conditional format type {cf.type!r} needs a formula engine")
            active = _cell_is(cf)
            if active is None:
                continue
            hits, blanks = [], 0
            for rng in fmt.cells:
                for row, col in rng.cells:
                    value = read_cell_value(book, name, f"{get_column_letter(col)}{row}")
                    if value is None:
                        # OSWorld's "contiguous" blank count is never reset: past 50 blanks in the
                        # rule, each range stops at its next blank.
                        blanks += 1
                        if blanks > 50:
                            break
                        continue
                    if active(value):
                        hits.append(sheet.cell(row=row, column=col))
            for cell in hits:
                out[cell.coordinate] = [_style(p, cell, cf.dxf) for p in props]
    return out


# --- rows, columns, filters, sparklines ---------------------------------------------------------------

ROW_PROPS = ("hidden", "collapsed", "height")
COL_PROPS = ("width", "auto_size", "hidden", "collapsed", "min", "max")


def _dimensions(kind: str) -> Callable[[Books, Any, Mapping[str, Any]], dict[Any, dict[str, Any]]]:
    def load(books: Books, idx: Any, rule: Mapping[str, Any]) -> dict[Any, dict[str, Any]]:
        sheet = _sheet(books, idx)
        if sheet is None:
            return {}
        props = set(rule.get("props", []))
        holder = getattr(sheet, f"{kind}_dimensions")
        return {key: {p: getattr(dim, p) for p in props} for key, dim in holder.items()}

    return load


def _filters(books: Books, idx: Any, rule: Mapping[str, Any]) -> dict[str, Any]:
    """The autofilter's range, its column filters (by column) and its sort state."""
    sheet = _sheet(books, idx)
    if sheet is None:
        return {}
    auto = sheet.auto_filter
    columns = []
    for column in auto.filterColumn:
        entry: dict[str, Any] = {
            "col_id": column.colId,
            "hidden_button": column.hiddenButton,
            "show_button": column.showButton,
        }
        if column.filters is not None:
            entry["filters_blank"] = column.filters.blank
            entry["filters"] = set(column.filters.filter)
        if column.customFilters is not None:
            entry["custom_filters_op"] = column.customFilters._and
            entry["custom_filters"] = {(f.operator, f.val) for f in column.customFilters.customFilter}
        columns.append(entry)
    out: dict[str, Any] = {
        "ref": auto.ref,
        "filter_column": sorted(columns, key=operator.itemgetter("col_id")),
    }
    sort = auto.sortState
    if sort is not None:
        out["sort_state"] = {
            "sort": sort.columnSort,
            "case": sort.caseSensitive,
            "method": sort.sortMethod,
            "ref": sort.ref,
            "condition": [
                {
                    "descending": c.descending,
                    "key": c.sortBy,
                    "ref": c.ref,
                    "custom_list": c.customList,
                    "dxf_id": c.dxfId,
                    "icon": c.iconSet,
                    "iconid": c.iconId,
                }
                for c in sort.sortCondition
            ],
        }
    return out


_X14 = "{http://schemas.microsoft.com/office/spreadsheetml/2009/9/main}"
_XM = "{http://schemas.microsoft.com/office/excel/2006/main}"
_MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"


def _sparklines(books: Books, idx: Any, rule: Mapping[str, Any]) -> dict[str | None, str | None]:
    """``{cell range: data range}`` of the sheet's sparklines, read from the sheet XML (None: absent)."""
    book, name = books.cell_source(idx)
    try:
        with zipfile.ZipFile(book) as z:
            workbook = ElementTree.fromstring(z.read("xl/workbook.xml"))
            ids = {s.get("name"): s.get("sheetId") for s in workbook.iter(f"{_MAIN}sheet")}
            sheet = ElementTree.fromstring(z.read(f"xl/worksheets/sheet{ids[name]}.xml"))
    except zipfile.BadZipFile:
        return {}
    return {s.findtext(f"{_XM}sqref"): s.findtext(f"{_XM}f") for s in sheet.iter(f"{_X14}sparkline")}


# --- data validation ----------------------------------------------------------------------------------

DV_ATTRIBUTES = (
    "ranges", "type", "formula1", "formula2", "operator", "allowBlank", "showDropDown", "showInputMessage",
    "showErrorMessage", "error", "errorTitle", "errorStyle", "prompt", "promptTitle", "imeMode",
)  # fmt: skip


def _data_validation(books: Books, rule: Mapping[str, Any]) -> bool:
    """Every validation of the sheet matches one of ``dv_props``, and there are at least as many."""
    sheet = _sheet(books, rule["sheet_idx"])
    if sheet is None:
        return False
    validations = sheet.data_validations.dataValidation
    wanted = rule["dv_props"]
    if len(validations) < len(wanted):
        return False
    try:
        return all(
            any(all(match_rule(getattr(dv, attr), mr) for attr, mr in props.items()) for props in wanted)
            for dv in validations
        )
    except (TypeError, AttributeError, ValueError) as exc:
        raise ZeroScore(f"data_validation: OSWorld's value rule raises here: {exc}") from exc


# --- load-time checks and registration ---------------------------------------------------------------


def _listed(key: str, known: tuple[str, ...] | dict[str, Any]) -> Callable[[Mapping[str, Any]], list[str]]:
    def problems(rule: Mapping[str, Any]) -> list[str]:
        values = rule.get(key, [])
        if not isinstance(values, list):
            return [f"{key!r} must be a list, got {values!r}."]
        return [
            f"{key} entry {v!r} is not implemented (known: {sorted(known)})."
            for v in values
            if v not in known
        ]

    return problems


def _dv_problems(rule: Mapping[str, Any]) -> list[str]:
    out = []
    for props in rule.get("dv_props", []):
        for attr, value_rule in props.items():
            if attr not in DV_ATTRIBUTES:
                out.append(f"dv_props attribute {attr!r} is not implemented.")
            if not isinstance(value_rule, Mapping) or not METHOD_RE.match(str(value_rule.get("method"))):
                out.append(f"dv_props value rule {value_rule!r} is not implemented.")
    return out


def _pair(load: Callable[..., Any]) -> Callable[[Books, Mapping[str, Any]], bool]:
    return lambda books, rule: _both(books, rule, load)


TABLE_RULES.add(
    "chart", TableRule(_pair(_charts), PAIR, ("chart_props",), _listed("chart_props", CHART_PROPS))
)
TABLE_RULES.add(
    "pivot_table", TableRule(_pair(_pivots), PAIR, ("pivot_props",), _listed("pivot_props", PIVOT_PROPS))
)
TABLE_RULES.add("style", TableRule(_pair(_styles), PAIR, ("props",), _listed("props", CELL_STYLE_PROPS)))
TABLE_RULES.add(
    "row_props", TableRule(_pair(_dimensions("row")), PAIR, ("props",), _listed("props", ROW_PROPS))
)
TABLE_RULES.add(
    "col_props", TableRule(_pair(_dimensions("column")), PAIR, ("props",), _listed("props", COL_PROPS))
)
TABLE_RULES.add("filter", TableRule(_pair(_filters), PAIR))
TABLE_RULES.add("sparkline", TableRule(_pair(_sparklines), PAIR))
TABLE_RULES.add("data_validation", TableRule(_data_validation, ("sheet_idx", "dv_props"), (), _dv_problems))

"""Reading one xlsx cell the way OSWorld's spreadsheet metrics do, and its value rules.

OSWorld reads cell *values* straight from the sheet XML (``read_cell_value``), not
through openpyxl: a formula cell yields the value LibreOffice cached in the file, a
number is always a float, an absent cell or sheet is None. It finds the sheet's XML
part by the sheet's ``sheetId`` (``xl/worksheets/sheet<sheetId>.xml``), which is right
for files LibreOffice writes; the same lookup is kept here so both score the same.

Cell *styles* come from openpyxl's cell (``read_cell_style``), and value rules
(``{"method": "approx:0.1", "ref": 42}``) from :func:`match_rule`.
"""

from __future__ import annotations

import builtins
import operator
import re
import zipfile
from collections.abc import Mapping
from functools import reduce
from typing import Any
from xml.etree import ElementTree

from openpyxl.cell.cell import MergedCell
from openpyxl.worksheet.cell_range import MultiCellRange

_NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}


def _shared_strings(z: zipfile.ZipFile) -> list[str]:
    try:
        root = ElementTree.fromstring(z.read("xl/sharedStrings.xml"))
    except (KeyError, ElementTree.ParseError):
        # OSWorld falls back to no shared strings when the part is absent or odd.
        return []
    strings = []
    for si in root.findall("m:si", _NS):
        parts = [t.text for t in si.iter(f"{{{_NS['m']}}}t")]
        if None in parts:
            return []  # an empty <t/>: OSWorld's join fails on it and falls back the same way
        strings.append("".join(p for p in parts if p is not None))
    return strings


def read_cell_value(path: str, sheet_name: str, coordinate: str) -> Any:
    """The value of ``coordinate`` as OSWorld's ``read_cell_value`` returns it.

    Returns:
        A float for numbers (cached formula results included), a str for text and
        errors, None for a missing file, sheet, cell or value (and for booleans and
        dates, which OSWorld does not decode).
    """
    try:
        with zipfile.ZipFile(path) as z:
            shared = _shared_strings(z)
            book = ElementTree.fromstring(z.read("xl/workbook.xml"))
            ids = {s.get("name"): s.get("sheetId") for s in book.iterfind("m:sheets/m:sheet", _NS)}
            sheet = ElementTree.fromstring(z.read(f"xl/worksheets/sheet{ids[sheet_name]}.xml"))
    except (OSError, zipfile.BadZipFile, KeyError, ElementTree.ParseError):
        return None
    cell = next((c for c in sheet.iterfind("m:sheetData/m:row/m:c", _NS) if c.get("r") == coordinate), None)
    if cell is None:
        return None
    kind = cell.get("t", "n")
    v = cell.find("m:v", _NS)
    text = v.text if v is not None else None
    try:
        if kind == "n":
            return float(text) if text is not None else None
        if kind == "s":
            return shared[int(text)] if text is not None else None
        if kind in ("str", "e"):
            return text
        if kind == "inlineStr":
            t = cell.find("m:is/m:t", _NS)
            return t.text if t is not None else None
    except ValueError:
        return None
    return None


def read_cell_style(prop: str, cell: Any) -> Any:
    """The style property ``prop`` of an openpyxl cell, as OSWorld's ``_read_cell_style`` reads it.

    Most properties are None on an empty cell. A property whose object is missing
    (a font without a colour) is None, as OSWorld's caller turns that error into None.

    Raises:
        KeyError: ``prop`` is not one OSWorld knows (checked when a task loads).
    """
    if prop not in CELL_STYLE_PROPS:
        raise KeyError(prop)
    if prop == "merge":
        return isinstance(cell, MergedCell)
    try:
        return CELL_STYLE_PROPS[prop](cell)
    except AttributeError:
        return None


def _if_value(read: Any) -> Any:
    return lambda c: read(c) if c.value is not None else None


CELL_STYLE_PROPS: dict[str, Any] = {
    "number_format": lambda c: c.number_format if c.value is not None and c.data_type == "n" else None,
    "font_name": _if_value(lambda c: c.font.name),
    "font_family": _if_value(lambda c: c.font.family),
    "font_color": _if_value(lambda c: c.font.color.rgb),
    "font_bold": _if_value(lambda c: c.font.bold),
    "font_italic": _if_value(lambda c: c.font.italic),
    "font_underline": _if_value(lambda c: c.font.underline),
    "font_size": _if_value(lambda c: c.font.size),
    "fill_type": lambda c: c.fill.tagname,
    # OSWorld reads the cell's *foreground* fill colour for both names.
    "bgcolor": lambda c: c.fill.fgColor.rgb,
    "fgcolor": lambda c: c.fill.fgColor.rgb,
    "hyperlink": _if_value(lambda c: c.hyperlink or ""),
    "merge": None,
}
"""Style properties OSWorld's ``check_cell`` and ``style`` rules know."""


_CMP = {"eq", "ne", "le", "lt", "ge", "gt"}
METHOD_RE = re.compile(
    r"^(eq|ne|le|lt|ge|gt|re(\.[A-Z]+)*|approx:[0-9.eE+-]+|range\.[te][te]|str_list_eq|str_set_eq"
    r"|spreadsheet_range)$"
)
"""The value-rule methods of OSWorld's ``_match_value_to_rule``."""


def match_rule(value: Any, rule: Mapping[str, Any]) -> bool:
    """OSWorld's ``_match_value_to_rule``: does ``value`` satisfy ``{"method", "ref"}``?

    Raises:
        TypeError, AttributeError, ValueError: Where OSWorld's code raises too (a regex
            on a float, ``lt`` between a str and a float); callers decide what that scores.
    """
    method = str(rule["method"])
    ref: Any = rule.get("ref")  # any JSON value; its shape depends on the method
    if method.startswith("re"):
        flags = reduce(operator.or_, (getattr(re, f) for f in method.split(".")[1:]), re.RegexFlag(0))
        return re.search(ref, value, flags) is not None
    if method in _CMP:
        return getattr(operator, method)(value, ref)
    if method.startswith("approx"):
        try:
            value = float(value)
        except (TypeError, ValueError):
            return False
        return abs(value - ref) <= float(method.split(":")[1])
    if method == "spreadsheet_range":
        inner, outer = MultiCellRange(ref[0]), MultiCellRange(ref[1])
        return all(r in value for r in inner) and all(r in outer for r in value)
    if method.startswith("range."):
        left, right = method[6], method[7]
        return getattr(operator, "l" + left)(ref[0], value) and getattr(operator, "l" + right)(value, ref[1])
    if method in ("str_list_eq", "str_set_eq"):
        kind = getattr(builtins, method[4:-3])
        return kind(value.strip("\"'").split(",")) == kind(ref)
    raise ValueError(f"unknown value-rule method {method!r}")

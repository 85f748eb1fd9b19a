"""``compare_table`` object rules (charts, pivots, styles, rows/columns, validation, filters, sparklines).

Hand-made books (openpyxl) and books LibreOffice itself wrote (pivot tables and charts
made through UNO by ``data/make_calc_objects.py``), with the score OSWorld's
``compare_table`` gives and why. Every expected score here was also checked by running
OSWorld's own ``compare_table`` on the same books (outside this repository).
"""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import openpyxl
import pytest
from openpyxl.chart import BarChart, LineChart, Reference
from openpyxl.formatting.rule import CellIsRule, FormulaRule
from openpyxl.styles import Font, PatternFill
from openpyxl.worksheet.datavalidation import DataValidation
from osworld_mcp_env.errors import EvaluationError, TaskError
from osworld_mcp_env.evaluators import METRICS, ZeroScore
from osworld_mcp_env.tasks import load_task

compare_table = METRICS.get("compare_table").fn
DATA = [["k", "v"], ["a", 1], ["b", 7], ["c", 3]]


def book(path: Path, edit=None) -> str:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet1"
    for row in DATA:
        ws.append(row)
    if edit is not None:
        edit(ws)
    wb.save(path)
    return str(path)


def pair(rule_type: str, **keys) -> dict:
    return {"type": rule_type, "sheet_idx0": 0, "sheet_idx1": "EI0", **keys}


def score(result: str, expected: str, *rules: dict) -> float:
    return compare_table(result, expected, rules=list(rules))


def chart(kind, title: str | None = "Sales"):
    def add(ws):
        ch = kind()
        if title is not None:
            ch.title = title
        ch.add_data(Reference(ws, min_col=2, min_row=1, max_row=4), titles_from_data=True)
        ch.set_categories(Reference(ws, min_col=1, min_row=2, max_row=4))
        ws.add_chart(ch, "D2")

    return add


def test_chart_type_title_and_direction(tmp_path: Path):
    bar = book(tmp_path / "bar.xlsx", chart(BarChart))
    bar2 = book(tmp_path / "bar2.xlsx", chart(BarChart))
    line = book(tmp_path / "line.xlsx", chart(LineChart))
    untitled = book(tmp_path / "untitled.xlsx", chart(BarChart, None))
    plain = book(tmp_path / "plain.xlsx")
    props = {"chart_props": ["type", "title"]}
    # Charts are keyed by their series' references; the same chart -> equal dicts -> 1.
    assert score(bar, bar2, pair("chart", **props)) == 1.0
    assert score(bar, line, pair("chart", **props)) == 0.0  # barChart != lineChart
    assert score(bar, untitled, pair("chart", **props)) == 0.0  # "Sales" != None
    assert score(bar, untitled, pair("chart", chart_props=["type"])) == 1.0
    assert score(plain, bar, pair("chart", **props)) == 0.0  # {} != one chart
    # barDir exists on bar charts only: OSWorld's reader raises on a line chart.
    assert score(bar, bar2, pair("chart", chart_props=["direction"])) == 1.0
    with pytest.raises(ZeroScore):
        score(line, bar, pair("chart", chart_props=["direction"]))


def test_row_and_column_properties(tmp_path: Path):
    def hide_row(ws):
        ws.row_dimensions[3].hidden = True

    def widen(ws):
        ws.column_dimensions["B"].width = 30

    hidden = book(tmp_path / "hidden.xlsx", hide_row)
    shown = book(tmp_path / "shown.xlsx")
    assert score(hidden, book(tmp_path / "h2.xlsx", hide_row), pair("row_props", props=["hidden"])) == 1.0
    # The unhidden book has no dimension entry for row 3: {} != {3: {"hidden": True}}.
    assert score(hidden, shown, pair("row_props", props=["hidden"])) == 0.0
    wide = book(tmp_path / "wide.xlsx", widen)
    assert score(wide, book(tmp_path / "w2.xlsx", widen), pair("col_props", props=["width"])) == 1.0
    assert score(wide, shown, pair("col_props", props=["width"])) == 0.0


DV_RULE = {
    "type": "data_validation",
    "sheet_idx": 0,
    "dv_props": [
        {
            "ranges": {"method": "spreadsheet_range", "ref": ["D2:D29", "D1:D1048576"]},
            "type": {"method": "eq", "ref": "list"},
            "formula1": {"method": "str_set_eq", "ref": ["Pass", "Fail", "Held"]},
        }
    ],
}  # as OSWorld's calc task ecb0df7a writes it


def validation(sqref: str, formula: str = '"Pass,Fail,Held"'):
    return lambda ws: ws.add_data_validation(DataValidation(type="list", formula1=formula, sqref=sqref))


def test_data_validation_against_the_rules_properties(tmp_path: Path):
    assert score(book(tmp_path / "ok.xlsx", validation("D2:D29")), None, DV_RULE) == 1.0
    # The list's order does not matter for str_set_eq; the range may grow within column D.
    assert score(book(tmp_path / "o2.xlsx", validation("D2:D40", '"Held,Pass,Fail"')), None, DV_RULE) == 1.0
    # Fewer validations than dv_props -> 0.
    assert score(book(tmp_path / "none.xlsx"), None, DV_RULE) == 0.0
    # D2:D29 must be inside the validated range: D2:D10 is too small.
    assert score(book(tmp_path / "small.xlsx", validation("D2:D10")), None, DV_RULE) == 0.0
    assert score(book(tmp_path / "other.xlsx", validation("D2:D29", '"Pass,Fail"')), None, DV_RULE) == 0.0


def test_autofilter_and_its_columns(tmp_path: Path):
    def filtered(values):
        def edit(ws):
            ws.auto_filter.ref = "A1:B4"
            ws.auto_filter.add_filter_column(0, values)

        return edit

    a = book(tmp_path / "a.xlsx", filtered(["a", "b"]))
    # Filter values are compared as a set.
    assert score(a, book(tmp_path / "b.xlsx", filtered(["b", "a"])), pair("filter")) == 1.0
    assert score(a, book(tmp_path / "c.xlsx", filtered(["a"])), pair("filter")) == 0.0
    assert score(a, book(tmp_path / "d.xlsx"), pair("filter")) == 0.0


def test_style_of_cells(tmp_path: Path):
    def green(ws):
        ws["B3"].font = Font(color="FF00FF00")

    def red_fill(ws):
        ws["A2"].fill = PatternFill("solid", fgColor="FFFF0000")

    g = book(tmp_path / "g.xlsx", green)
    assert score(g, book(tmp_path / "g2.xlsx", green), pair("style", props=["font_color"])) == 1.0
    assert score(g, book(tmp_path / "plain.xlsx"), pair("style", props=["font_color"])) == 0.0
    r = book(tmp_path / "r.xlsx", red_fill)
    # bgcolor reads the cell's fill *foreground* colour, as OSWorld does.
    assert score(r, book(tmp_path / "r2.xlsx", red_fill), pair("style", props=["bgcolor"])) == 1.0
    assert score(r, g, pair("style", props=["bgcolor"])) == 0.0


def test_style_with_conditional_formats(tmp_path: Path):
    def direct(ws):  # B3 (7) painted green by hand
        ws["B3"].font = Font(color="FF00FF00")

    def conditional(ws):  # values > 5 painted green by a cellIs rule: only B3 (7)
        ws.conditional_formatting.add(
            "B2:B4", CellIsRule(operator="greaterThan", formula=["5"], font=Font(color="FF00FF00"))
        )

    def by_reference(reference: str):  # a formula that needs cell inputs
        def edit(ws):
            green = Font(color="FF00FF00")
            ws.conditional_formatting.add(
                "B2:B4", CellIsRule(operator="greaterThan", formula=[reference], font=green)
            )

        return edit

    gold = book(tmp_path / "gold.xlsx", direct)
    rule = pair("style", props=["font_color"])
    assert score(book(tmp_path / "cf.xlsx", conditional), gold, rule) == 1.0
    # A relative reference: OSWorld cannot call the compiled formula without inputs and skips the rule.
    assert score(book(tmp_path / "ref.xlsx", by_reference("B2")), gold, rule) == 0.0
    # A single absolute reference: OSWorld builds the range "B2:" for it and raises.
    with pytest.raises(ZeroScore):
        score(book(tmp_path / "abs.xlsx", by_reference("$B$2")), gold, rule)
    expression = book(
        tmp_path / "expr.xlsx",
        lambda ws: ws.conditional_formatting.add(
            "B2:B4", FormulaRule(formula=["B2>5"], font=Font(color="FF00FF00"))
        ),
    )
    with pytest.raises(EvaluationError, match="formula engine"):
        score(expression, gold, rule)


SPARKLINES = (
    '<extLst><ext uri="{05C60535-1F16-4fd2-B633-F4F36F0B64E0}" '
    'xmlns:x14="http://schemas.microsoft.com/office/spreadsheetml/2009/9/main">'
    '<x14:sparklineGroups xmlns:xm="http://schemas.microsoft.com/office/excel/2006/main">'
    "<x14:sparklineGroup><x14:sparklines>BODY</x14:sparklines></x14:sparklineGroup>"
    "</x14:sparklineGroups></ext></extLst>"
)


def with_sparklines(path: Path, lines: dict[str, str]) -> str:
    book(path)
    with zipfile.ZipFile(path) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    body = "".join(
        f"<x14:sparkline><xm:f>{f}</xm:f><xm:sqref>{at}</xm:sqref></x14:sparkline>" for at, f in lines.items()
    )
    sheet = (
        parts["xl/worksheets/sheet1.xml"]
        .decode()
        .replace("</worksheet>", SPARKLINES.replace("BODY", body) + "</worksheet>")
    )
    parts["xl/worksheets/sheet1.xml"] = sheet.encode()
    with zipfile.ZipFile(path, "w") as z:
        for name, data in parts.items():
            z.writestr(name, data)
    return str(path)


@pytest.mark.filterwarnings(
    "ignore:Sparkline Group extension:UserWarning"
)  # openpyxl drops them; OSWorld reads XML
def test_sparklines_by_cell_and_source(tmp_path: Path):
    a = with_sparklines(tmp_path / "a.xlsx", {"C2": "Sheet1!A2:B2"})
    assert score(a, with_sparklines(tmp_path / "b.xlsx", {"C2": "Sheet1!A2:B2"}), pair("sparkline")) == 1.0
    assert score(a, with_sparklines(tmp_path / "c.xlsx", {"C2": "Sheet1!A3:B3"}), pair("sparkline")) == 0.0
    assert score(a, book(tmp_path / "d.xlsx"), pair("sparkline")) == 0.0


@pytest.fixture(scope="module")
def libreoffice_books(tmp_path_factory) -> Path:
    python = shutil.which("python3", path="/usr/bin")
    if shutil.which("soffice") is None or python is None:
        pytest.skip("LibreOffice or the system python3 is missing")
    if subprocess.run([python, "-c", "import uno"], capture_output=True).returncode != 0:
        pytest.skip("the system python3 has no uno module")
    out = tmp_path_factory.mktemp("books")
    script = Path(__file__).parents[1] / "data" / "make_calc_objects.py"
    subprocess.run(
        [python, str(script), str(out), str(out / "profile")], check=True, timeout=300, capture_output=True
    )
    return out


PIVOT = {
    "type": "pivot_table",
    "sheet_idx0": "RNSheet2",
    "sheet_idx1": "ENSheet2",
    "pivot_props": ["col_fields", "filter", "row_fields", "data_fields"],
}  # as OSWorld's five pivot tasks write it


def test_pivot_tables_and_charts_libreoffice_wrote(libreoffice_books: Path):
    region, again, product = (
        str(libreoffice_books / f"{n}.xlsx") for n in ("region", "region_again", "product")
    )
    # The same pivot (rows: Region, data: sum of Sales) built twice -> 1.
    assert score(region, again, PIVOT) == 1.0
    # Rows by Product instead: row_fields [1] != [0] -> 0.
    assert score(region, product, PIVOT) == 0.0
    # Pivots are keyed by their source range trimmed to the fields that select items
    # (Region: A..A, Product: B..B): even the names alone, both "pivot", compare 0.
    assert score(region, product, {**PIVOT, "pivot_props": ["name"]}) == 0.0
    assert score(region, again, {**PIVOT, "pivot_props": ["name"]}) == 1.0
    charts = pair("chart", chart_props=["type"])
    assert score(region, again, charts) == 1.0
    assert score(region, product, charts) == 0.0  # barChart vs lineChart


def test_object_rules_check_their_keys_at_load():
    def task(rule):
        ev = {"func": "compare_table", "result": {"type": "vm_file", "path": "/a.xlsx", "dest": "a.xlsx"}}
        return {"id": "t", "instruction": "x", "evaluator": {**ev, "options": {"rules": [rule]}}}

    load_task(task(PIVOT))
    load_task(task(DV_RULE))
    with pytest.raises(TaskError, match="chart_props entry 'colour' is not implemented"):
        load_task(task(pair("chart", chart_props=["colour"])))
    with pytest.raises(TaskError, match="props entry 'depth' is not implemented"):
        load_task(task(pair("row_props", props=["depth"])))
    with pytest.raises(TaskError, match="dv_props attribute 'colour' is not implemented"):
        load_task(task({**DV_RULE, "dv_props": [{"colour": {"method": "eq", "ref": 1}}]}))

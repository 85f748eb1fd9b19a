"""libreoffice_calc tools against a real LibreOffice; effects read back with openpyxl."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import openpyxl
import pytest
from mcp_sandbox import Sandbox, ToolCaller

pytestmark = [pytest.mark.desktop, pytest.mark.timeout(90)]
NS = "libreoffice_calc."


@pytest.fixture
def book(sandbox: Sandbox, request: pytest.FixtureRequest) -> Iterator[Path]:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Data"
    for row in (
        ["Name", "Score", "Team"],
        ["ann", 3, "x"],
        ["bob", 1, "y"],
        ["cid", 2, "x"],
        ["dan", "N/A", "y"],
    ):
        ws.append(row)
    wb.create_sheet("Other")
    data = io.BytesIO()
    wb.save(data)
    yield sandbox.open_document(f"{request.node.name}.xlsx", data.getvalue())


@pytest.fixture(scope="module")
def call(sandbox: Sandbox) -> ToolCaller:
    return sandbox.call


def saved(call: ToolCaller, path: Path) -> openpyxl.Workbook:
    effect = call.effect(NS + "save")
    assert (
        effect["kind"] == "changed" and effect["unit"] == "bytes" and effect["count"] == path.stat().st_size
    )
    return openpyxl.load_workbook(path)


def test_set_cell_value_writes_and_a_repeat_reports_zero_effect(call: ToolCaller, book: Path) -> None:
    effect = call.effect(NS + "set_cell_value", cell="D1", value="42")
    assert effect == {
        "kind": "changed",
        "changed": True,
        "count": 1,
        "unit": "cells",
        "targets": ["D1"],
        "details": {"before": "", "after": "42"},
    }
    again = call(NS + "set_cell_value", cell="D1", value="42")
    assert again.exec_ok
    assert again.effect["kind"] == "none" and again.effect["count"] == 0
    assert again.text.startswith("No effect:")
    call.effect(NS + "set_cell_value", cell="E2", value="=B2*2")
    ws = saved(call, book)["Data"]
    assert ws["D1"].value == 42 and ws["E2"].value == "=B2*2"


def test_read_only_tools_return_the_sheet(call: ToolCaller, book: Path) -> None:
    info = call.data(NS + "get_workbook_info")
    assert (
        info["sheets"] == ["Data", "Other"]
        and info["active_sheet"] == "Data"
        and info["file_path"] == f"/home/user/{book.name}"
    )
    assert call.data(NS + "get_column_data", column_name="A") == ["Name", "ann", "bob", "cid", "dan"]
    env = call.data(NS + "env_info")
    assert env["headers"] == ["Name", "Score", "Team"] and env["data"][0] == ["ann", 3, "x"]
    assert call.data(NS + "env_info", sheet_name="Other")["sheet_name"] == "Other"


def test_column_writes_sort_and_transpose(call: ToolCaller, book: Path) -> None:
    assert call.effect(NS + "set_column_values", column_name="D", data=[1, 2, 3])["count"] == 3
    assert call.effect(NS + "sort_column", column_name="D", ascending=False)["count"] == 2  # 1,2,3 -> 3,2,1
    assert call.effect(NS + "transpose_range", source_range="A1:B2", target_cell="F1")["count"] == 4
    ws = saved(call, book)["Data"]
    assert [ws[f"D{r}"].value for r in (2, 3, 4)] == [3, 2, 1]
    assert [[ws["F1"].value, ws["G1"].value], [ws["F2"].value, ws["G2"].value]] == [
        ["Name", "ann"],
        ["Score", 3],
    ]


def test_formatting_tools(call: ToolCaller, book: Path) -> None:
    assert call.effect(NS + "highlight_range", range_str="A1:B1")["count"] == 2
    assert call.effect(NS + "highlight_range", range_str="A1:B1")["kind"] == "none"
    assert (
        call.effect(
            NS + "format_range", range_str="C1:C2", font_color="#0000ff", bold=True, alignment="center"
        )["count"]
        == 2
    )
    assert call.effect(NS + "set_number_format", range_str="B2:B4", format_type="percentage")["count"] == 3
    assert call.effect(NS + "merge_cells", range_str="A7:B7")["count"] == 1
    assert call.effect(NS + "adjust_column_width", columns="A:B", width=20)["count"] == 2
    assert call.effect(NS + "adjust_row_height", rows="1:2", height=30)["count"] == 2
    assert call.effect(NS + "hide_row_data")["targets"] == ["5"]
    wb = saved(call, book)
    ws = wb["Data"]
    assert ws["A1"].fill.fgColor.rgb.endswith("FF0000")
    assert (
        ws["C1"].font.b
        and ws["C1"].font.color.rgb.endswith("0000FF")
        and ws["C1"].alignment.horizontal == "center"
    )
    assert "%" in ws["B2"].number_format
    assert "A7:B7" in {str(r) for r in ws.merged_cells.ranges}
    assert ws.column_dimensions["A"].width > 15 and ws.row_dimensions[1].height == pytest.approx(30, abs=1)
    assert ws.row_dimensions[5].hidden


def test_sheet_tools(call: ToolCaller, book: Path) -> None:
    assert call.effect(NS + "switch_active_sheet", sheet_name="New")["details"]["created"] is True
    assert call.effect(NS + "switch_active_sheet", sheet_name="New")["kind"] == "none"
    assert call.effect(NS + "rename_sheet", old_name="Other", new_name="Renamed")["count"] == 1
    assert call.effect(NS + "copy_sheet", source_sheet="Data", new_sheet_name="Copy")["count"] == 1
    assert call.effect(NS + "reorder_sheets", sheet_name="New", position=0)["details"]["order"][0] == "New"
    assert saved(call, book).sheetnames == ["New", "Data", "Copy", "Renamed"]


def test_view_tools(call: ToolCaller, book: Path) -> None:
    assert call.effect(NS + "freeze_panes", rows=1, columns=1)["count"] == 1
    assert call.effect(NS + "set_zoom_level", zoom_percentage=150)["details"]["after"] == 150
    ws = saved(call, book)["Data"]
    assert ws.freeze_panes == "B2"
    assert ws.sheet_view.zoomScale == 150


def test_chart_pivot_and_reorder_columns(call: ToolCaller, book: Path) -> None:
    assert (
        call.effect(NS + "create_chart", chart_type="bar", data_range="A1:B4", title="Scores")["count"] == 1
    )
    call.effect(NS + "switch_active_sheet", sheet_name="Other")
    effect = call.effect(
        NS + "create_pivot_table",
        source_sheet="Data",
        table_name="P1",
        row_fields=["Team"],
        value_fields=["C"],
        aggregation_function="count",
    )
    assert effect["count"] > 0
    call.effect(NS + "switch_active_sheet", sheet_name="Data")
    assert call.effect(NS + "reorder_columns", column_order=["C", "A", "B"])["count"] > 0
    wb = saved(call, book)
    assert len(wb["Data"]._charts) == 1
    assert [wb["Data"]["A1"].value, wb["Data"]["B1"].value] == ["Team", "Name"]
    values = [c.value for row in wb["Other"].iter_rows() for c in row if c.value is not None]
    assert "x" in values and "y" in values


def test_calc2_tools(call: ToolCaller, book: Path, sandbox: Sandbox) -> None:
    call.effect(NS + "set_cell_value", cell="B3", value="")
    assert call.effect(NS + "fill_blank_down", columns=["B"])["targets"] == ["B3"]
    assert call.effect(NS + "set_cell_value", cell="E2", value="2500000")["count"] == 1
    assert call.effect(NS + "format_numbers_to_human_readable", cell_range="E2:E3")["count"] == 1
    call.effect(NS + "set_column_values", column_name="F", data=[2, 4], start_index=1)
    assert call.effect(NS + "auto_fill_down", source_range="F1:F2", rows_to_fill=2)["count"] == 2
    assert (
        call.effect(
            NS + "copy_cells_between_sheets",
            source_range="A1:B2",
            target_sheet_name="Other",
            target_start_cell="C3",
        )["count"]
        == 4
    )
    pdf = book.with_name("first.pdf")
    assert (
        call.effect(NS + "scale_first_sheet_and_export_pdf", output_path=sandbox.inner(pdf))["count"]
        == pdf.stat().st_size
    )
    assert pdf.read_bytes().startswith(b"%PDF")
    wb = saved(call, book)
    ws = wb["Data"]
    assert ws["B3"].value == 3 and ws["E2"].value == "2.5M" and [ws["F3"].value, ws["F4"].value] == [6, 8]
    assert wb["Other"]["C3"].value == "Name" and wb["Other"]["D4"].value == 3


def test_exports_write_files(call: ToolCaller, book: Path, sandbox: Sandbox) -> None:
    csv = call.effect(NS + "export_to_csv")
    assert csv["count"] > 0 and book.with_suffix(".csv").read_text().startswith("Name,Score,Team")
    pdf = book.with_name("some.pdf")
    assert (
        call.effect(NS + "export_to_pdf", file_path=sandbox.inner(pdf), sheets=["Data"])["count"]
        == pdf.stat().st_size
    )


def test_bad_names_are_tool_errors_that_name_the_fix(call: ToolCaller, book: Path) -> None:
    assert "sheets are ['Data', 'Other']" in call.error(NS + "rename_sheet", old_name="Nope", new_name="x")
    assert "column letter" in call.error(NS + "get_column_data", column_name="1A")
    assert "10..400" in call.error(NS + "set_zoom_level", zoom_percentage=5)


def test_work_over_the_cell_limit_is_refused_before_any_cell_is_touched(call: ToolCaller, book: Path) -> None:
    """A whole-sheet range is 17 billion UNO round trips; the office serves one call at a time."""
    whole_sheet = call.error(NS + "highlight_range", range_str="A1:XFD1048576")
    assert "17179869184 cells" in whole_sheet and "at most 100000" in whole_sheet
    assert "at most 100000" in call.error(NS + "auto_fill_down", source_range="B2:B3", rows_to_fill=10**9)
    assert "at most 100000" in call.error(NS + "transpose_range", source_range="A1:Z10000", target_cell="AA1")
    assert call.data(NS + "get_column_data", column_name="B")[:2] == ["Score", 3]

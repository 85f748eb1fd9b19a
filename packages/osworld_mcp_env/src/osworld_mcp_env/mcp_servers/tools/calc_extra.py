"""``libreoffice_calc``: charts, pivot tables and OSWorld-MCP's ``libreoffice_calc2`` tools.

They register on :data:`~osworld_mcp_env.mcp_servers.tools.calc.calc`; the namespace table
(``LIBREOFFICE_CALC.modules``) lists this module after ``calc``, so serving the namespace
imports both and ``calc`` never imports this one.
"""

from __future__ import annotations

import itertools
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from osworld_mcp_env.mcp_servers.effects import ToolOutput, changed, no_effect
from osworld_mcp_env.mcp_servers.tools.calc import (
    active_sheet,
    calc,
    cell_range,
    cells_of,
    limit_cells,
    range_shape,
    read_block,
    sheet_by_name,
    used_area,
    write_cell,
)
from osworld_mcp_env.mcp_servers.tools.calc import (
    cell_range as range_of,  # for tools whose ``cell_range`` argument shadows the function
)
from osworld_mcp_env.mcp_servers.tools.office_common import cell_name, column_index, export_document
from osworld_mcp_env.mcp_servers.tools.uno_conn import OfficeApp

_CHARTS = {
    "bar": ("com.sun.star.chart.BarDiagram", {"Vertical": True}),
    "column": ("com.sun.star.chart.BarDiagram", {"Vertical": False}),
    "line": ("com.sun.star.chart.LineDiagram", {}),
    "pie": ("com.sun.star.chart.PieDiagram", {}),
    "scatter": ("com.sun.star.chart.XYDiagram", {}),
    "area": ("com.sun.star.chart.AreaDiagram", {}),
}


@calc.tool()
def create_chart(
    app: OfficeApp,
    chart_type: str,
    data_range: str,
    title: str | None = None,
    x_axis_title: str | None = None,
    y_axis_title: str | None = None,
) -> ToolOutput:
    """Insert a chart of a data range into the active sheet."""
    import uno

    kind = chart_type.lower().strip()
    if kind not in _CHARTS:
        raise ToolError(f"chart_type must be one of {sorted(_CHARTS)}, got {chart_type!r}")
    sheet = active_sheet(app)
    addr = cell_range(sheet, data_range).getRangeAddress()
    charts = sheet.getCharts()
    n = charts.getCount() + 1
    name = f"Chart{n}"
    while charts.hasByName(name):
        n += 1
        name = f"Chart{n}"
    rect = uno.createUnoStruct("com.sun.star.awt.Rectangle")
    last_col, _ = used_area(sheet)
    anchor = sheet.getCellByPosition(last_col + 2, 0).Position
    rect.X, rect.Y, rect.Width, rect.Height = anchor.X, anchor.Y, 12000, 8000
    charts.addNewByName(name, rect, (addr,), True, True)
    chart = charts.getByName(name).getEmbeddedObject()
    service, props = _CHARTS[kind]
    diagram = chart.createInstance(service)
    chart.setDiagram(diagram)
    for prop, value in props.items():
        diagram.setPropertyValue(prop, value)
    if title:
        chart.HasMainTitle = True
        chart.getTitle().String = title
    if kind != "pie":
        if x_axis_title:
            diagram.HasXAxisTitle = True
            diagram.getXAxisTitle().String = x_axis_title
        if y_axis_title:
            diagram.HasYAxisTitle = True
            diagram.getYAxisTitle().String = y_axis_title
    return changed(f"Inserted {kind} chart {name!r} of {data_range}.", 1, "charts", [name], chart_type=kind)


_FUNCTIONS = {
    "sum": "SUM",
    "count": "COUNT",
    "average": "AVERAGE",
    "avg": "AVERAGE",
    "min": "MIN",
    "max": "MAX",
}


@calc.tool()
def create_pivot_table(
    app: OfficeApp,
    source_sheet: str,
    table_name: str,
    value_fields: list[str],
    row_fields: list[str] | None = None,
    col_fields: list[str] | None = None,
    aggregation_function: str = "sum",
    target_cell: str = "A1",
) -> ToolOutput:
    """Create a pivot table in the active sheet from the used area of ``source_sheet``.

    Fields are column letters (``A``) or header texts of the source's first row.
    """
    import uno

    func = _FUNCTIONS.get(aggregation_function.lower().strip())
    if func is None:
        raise ToolError(
            f"aggregation_function must be one of {sorted(_FUNCTIONS)}, got {aggregation_function!r}"
        )
    src = sheet_by_name(app, source_sheet)
    last_col, last_row = used_area(src)
    headers = [str(h) if h is not None else "" for h in read_block(src, last_col, 0)[0]]

    def field_index(field: str) -> int:
        if field in headers:
            return headers.index(field)
        index = column_index(field)
        if index > last_col:
            raise ToolError(f"Field {field!r} is neither a header {headers} nor a used column")
        return index

    target = active_sheet(app)
    tables = target.getDataPilotTables()
    if tables.hasByName(table_name):
        raise ToolError(f"A pivot table named {table_name!r} already exists on {target.getName()!r}")
    desc = tables.createDataPilotDescriptor()
    desc.setSourceRange(src.getCellRangeByPosition(0, 0, last_col, last_row).getRangeAddress())
    fields = desc.getDataPilotFields()
    orient = "com.sun.star.sheet.DataPilotFieldOrientation"
    for names, orientation in (
        (row_fields or [], "ROW"),
        (col_fields or [], "COLUMN"),
        (value_fields, "DATA"),
    ):
        for name in names:
            field = fields.getByIndex(field_index(name))
            field.Orientation = uno.Enum(orient, orientation)
            if orientation == "DATA":
                field.Function = uno.Enum("com.sun.star.sheet.GeneralFunction", func)
    dest = cell_range(target, target_cell).getCellByPosition(0, 0).getCellAddress()
    tables.insertNewByName(table_name, dest, desc)
    out = tables.getByName(table_name).getOutputRange()
    size = (out.EndColumn - out.StartColumn + 1) * (out.EndRow - out.StartRow + 1)
    rng = f"{cell_name(out.StartColumn, out.StartRow)}:{cell_name(out.EndColumn, out.EndRow)}"
    return changed(f"Created pivot table {table_name!r} at {rng}.", size, "cells", [rng], table=table_name)


@calc.tool()
def scale_first_sheet_and_export_pdf(
    app: OfficeApp, output_path: str, pages_x: int = 1, pages_y: int = 1
) -> ToolOutput:
    """Fit the first sheet on pages_x x pages_y pages and export only it to PDF."""
    if pages_x < 1 or pages_y < 1:
        raise ToolError("pages_x and pages_y must be >= 1")
    doc = app.doc()
    sheets = doc.getSheets()
    first = sheets.getByIndex(0)
    style = doc.getStyleFamilies().getByName("PageStyles").getByName(first.PageStyle)
    style.ScaleToPagesX = pages_x
    style.ScaleToPagesY = pages_y
    hidden = []
    for i in range(1, sheets.getCount()):
        sh = sheets.getByIndex(i)
        if sh.IsVisible:
            sh.IsVisible = False
            hidden.append(sh)
    try:
        out = export_document(app, doc, Path(output_path), "calc_pdf_Export")
    finally:
        for sh in hidden:
            sh.IsVisible = True
    out.effect.details.update(scale_to_pages_x=pages_x, scale_to_pages_y=pages_y, sheet=first.getName())
    return out


@calc.tool()
def fill_blank_down(app: OfficeApp, columns: list[str] | None = None) -> ToolOutput:
    """Fill blank cells below the header with the value above, in some or all used columns."""
    sheet = active_sheet(app)
    last_col, last_row = used_area(sheet)
    indices = [column_index(c) for c in columns] if columns else list(range(last_col + 1))
    limit_cells(app, len(indices), last_row + 1, "The filled columns")
    targets = []
    for col in indices:
        values = [row[0] for row in sheet.getCellRangeByPosition(col, 0, col, last_row).getFormulaArray()]
        previous = None
        for r in range(1, len(values)):
            if values[r] == "" and previous not in (None, ""):
                sheet.getCellByPosition(col, r).setFormula(previous)
                targets.append(cell_name(col, r))
            else:
                previous = values[r]
    return changed("Filled blank cells downwards.", len(targets), "cells", targets)


@calc.tool()
def copy_cells_between_sheets(
    app: OfficeApp, source_range: str, target_sheet_name: str, target_start_cell: str
) -> ToolOutput:
    """Copy a range of the active sheet (values, formulas, formats) to another sheet."""
    source = active_sheet(app)
    target = sheet_by_name(app, target_sheet_name)
    src = cell_range(source, source_range)
    limit_cells(app, *range_shape(src), source_range)
    src_addr = src.getRangeAddress()
    dest = cell_range(target, target_start_cell).getCellByPosition(0, 0).getCellAddress()
    width = src_addr.EndColumn - src_addr.StartColumn
    height = src_addr.EndRow - src_addr.StartRow
    dest_rng = target.getCellRangeByPosition(dest.Column, dest.Row, dest.Column + width, dest.Row + height)
    before = dest_rng.getFormulaArray()
    target.copyRange(dest, src_addr)
    after = dest_rng.getFormulaArray()
    targets = [
        cell_name(dest.Column + c, dest.Row + r)
        for r, (old, new) in enumerate(zip(before, after, strict=True))
        for c, (a, b) in enumerate(zip(old, new, strict=True))
        if a != b
    ]
    return changed(
        f"Copied {source_range} to {target_sheet_name}!{target_start_cell}.",
        len(targets),
        "cells",
        targets,
        copied=(width + 1) * (height + 1),
    )


def _human(value: float) -> str | None:
    for threshold, suffix in ((1e9, "B"), (1e6, "M")):
        if abs(value) >= threshold:
            scaled = Decimal(str(value / threshold)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
            return f"{scaled}{suffix}"
    return None


@calc.tool()
def format_numbers_to_human_readable(app: OfficeApp, cell_range: str) -> ToolOutput:
    """Replace numbers >= 1 million in a range by text like ``1.2M`` / ``3.4B``."""
    targets = []
    for c, name in cells_of(app, range_of(active_sheet(app), cell_range), cell_range):
        if c.getType().value == "VALUE":
            text = _human(c.getValue())
            if text is not None:
                c.setString(text)
                targets.append(name)
    return changed(f"Rewrote large numbers in {cell_range}.", len(targets), "cells", targets)


def _series(seed: list[Any], n: int) -> list[Any]:
    numbers = [v for v in seed if isinstance(v, float)]
    if len(seed) >= 2 and len(numbers) == len(seed):
        steps = {round(b - a, 12) for a, b in itertools.pairwise(seed)}
        if len(steps) == 1:
            step = steps.pop()
            return [seed[-1] + step * (i + 1) for i in range(n)]
    if len(seed) == 1 and isinstance(seed[0], float):
        return [seed[0]] * n
    return [seed[i % len(seed)] for i in range(n)]


@calc.tool()
def auto_fill_down(app: OfficeApp, source_range: str, rows_to_fill: int) -> ToolOutput:
    """Continue an arithmetic series, or repeat the pattern, below a seed range."""
    if rows_to_fill < 1:
        raise ToolError(f"rows_to_fill must be a positive integer, got {rows_to_fill}")
    sheet = active_sheet(app)
    rng = cell_range(sheet, source_range)
    cols, seed_rows = range_shape(rng)
    limit_cells(app, cols, seed_rows + rows_to_fill, f"{source_range} and {rows_to_fill} rows below")
    addr = rng.getRangeAddress()
    seeds = rng.getDataArray()
    if not seeds or all(v == "" for row in seeds for v in row):
        return no_effect(f"{source_range} is empty; nothing to fill from.", "cells")
    targets = []
    for c in range(addr.EndColumn - addr.StartColumn + 1):
        values = _series([row[c] for row in seeds], rows_to_fill)
        for i, value in enumerate(values):
            col, row = addr.StartColumn + c, addr.EndRow + 1 + i
            if write_cell(sheet.getCellByPosition(col, row), value):
                targets.append(cell_name(col, row))
    return changed(f"Filled {rows_to_fill} rows below {source_range}.", len(targets), "cells", targets)

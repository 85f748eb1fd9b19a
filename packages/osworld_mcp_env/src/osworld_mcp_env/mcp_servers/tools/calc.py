"""``libreoffice_calc``: the open Calc spreadsheet, through UNO.

Every writing tool compares each touched cell (or property) before and after, so
its effect counts what actually changed, not what was asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from osworld_mcp_env.mcp_host.namespaces import LIBREOFFICE_CALC
from osworld_mcp_env.mcp_servers.effects import ToolOutput, changed, no_effect, read
from osworld_mcp_env.mcp_servers.registry import ToolRegistry
from osworld_mcp_env.mcp_servers.tools.office_common import (
    cell_name,
    column_index,
    column_letter,
    default_export_path,
    document_path,
    export_document,
    parse_colour,
    save_document,
)
from osworld_mcp_env.mcp_servers.tools.uno_conn import CALC, OfficeApp, office_lifespan

calc: ToolRegistry[OfficeApp] = ToolRegistry(LIBREOFFICE_CALC, office_lifespan(CALC))

MAX_ROWS_READ = 1000  # env_info / get_column_data cap, so one call cannot return a million rows


# ----------------------------------------------------------------------------- helpers


def active_sheet(app: OfficeApp) -> Any:
    """Returns the active sheet of the open spreadsheet."""
    return app.doc().getCurrentController().getActiveSheet()


def sheet_by_name(app: OfficeApp, name: str) -> Any:
    """Returns a sheet by name, or raises with the known names."""
    sheets = app.doc().getSheets()
    if not sheets.hasByName(name):
        raise ToolError(f"No sheet named {name!r}; sheets are {list(sheets.getElementNames())}")
    return sheets.getByName(name)


def used_area(sheet: Any) -> tuple[int, int]:
    """Returns ``(last_col, last_row)`` (0-based) of the sheet's used area."""
    cursor = sheet.createCursor()
    cursor.gotoEndOfUsedArea(False)
    addr = cursor.getRangeAddress()
    return addr.EndColumn, addr.EndRow


def cell_range(sheet: Any, range_str: str) -> Any:
    """Returns a cell range by A1 name, or raises a readable error."""
    try:
        return sheet.getCellRangeByName(range_str.strip())
    except Exception as exc:
        raise ToolError(f"Invalid range {range_str!r}; expected A1 notation such as 'A1:B10'") from exc


def limit_cells(app: OfficeApp, cols: int, rows: int, what: str) -> None:
    """Refuses work on more than ``max_range_cells`` cells (each one is a UNO round trip).

    Raises:
        ToolError: Naming the size and the limit.
    """
    limit = app.config.limits.max_range_cells
    if cols * rows > limit:
        raise ToolError(
            f"{what} spans {cols * rows} cells ({cols} columns x {rows} rows); "
            f"a Calc tool handles at most {limit} cells"
        )


def range_shape(rng: Any) -> tuple[int, int]:
    """Returns ``(columns, rows)`` of a cell range."""
    addr = rng.getRangeAddress()
    return addr.EndColumn - addr.StartColumn + 1, addr.EndRow - addr.StartRow + 1


def cells_of(app: OfficeApp, rng: Any, what: str) -> list[tuple[Any, str]]:
    """Returns ``[(cell, 'B3'), ...]`` for every cell of a range, row by row (within the cell limit)."""
    limit_cells(app, *range_shape(rng), what)
    addr = rng.getRangeAddress()
    out = []
    for r in range(addr.EndRow - addr.StartRow + 1):
        for c in range(addr.EndColumn - addr.StartColumn + 1):
            out.append((rng.getCellByPosition(c, r), cell_name(addr.StartColumn + c, addr.StartRow + r)))
    return out


def write_cell(cell: Any, value: Any) -> bool:
    """Writes a value (number, ``=formula`` or text) and returns whether the cell changed."""
    before = cell.getFormula()
    if value is None or value == "":
        cell.setString("")
    elif isinstance(value, (bool, int | float)):
        cell.setValue(float(value))
    else:
        text = str(value)
        if text.startswith("="):
            cell.setFormula(text)
        else:
            try:
                number = float(text)
            except ValueError:
                cell.setString(text)
            else:
                cell.setValue(number)
    return cell.getFormula() != before


def _num(x: float) -> float | int:
    return int(x) if float(x).is_integer() else x


def _data(value: Any) -> Any:
    return None if value == "" else _num(value) if isinstance(value, float) else value


def read_block(sheet: Any, last_col: int, last_row: int) -> list[list[Any]]:
    """Returns the values of ``A1:<last>`` as lists (empty -> None)."""
    rng = sheet.getCellRangeByPosition(0, 0, last_col, last_row)
    return [[_data(v) for v in row] for row in rng.getDataArray()]


# ----------------------------------------------------------------------------- read-only


@calc.tool(read_only=True)
def get_workbook_info(app: OfficeApp) -> ToolOutput:
    """File path, name, sheets and active sheet."""
    doc = app.doc()
    path = document_path(doc)
    info = {
        "file_path": str(path) if path else None,
        "file_name": path.name if path else doc.getTitle(),
        "sheets": list(doc.getSheets().getElementNames()),
        "active_sheet": active_sheet(app).getName(),
    }
    return read(f"Workbook {info['file_name']} with {len(info['sheets'])} sheets.", info)


@calc.tool(read_only=True)
def get_column_data(app: OfficeApp, column_name: str) -> ToolOutput:
    """Values of one column of the active sheet, from row 1 to the last used row."""
    sheet = active_sheet(app)
    col = column_index(column_name)
    _, last_row = used_area(sheet)
    last_row = min(last_row, MAX_ROWS_READ - 1)
    values = [_data(row[0]) for row in sheet.getCellRangeByPosition(col, 0, col, last_row).getDataArray()]
    return read(f"Column {column_letter(col)}: {len(values)} rows.", values)


@calc.tool(read_only=True)
def env_info(app: OfficeApp, sheet_name: str | None = None) -> ToolOutput:
    """Name, headers and data of a sheet (the active one by default)."""
    sheet = sheet_by_name(app, sheet_name) if sheet_name else active_sheet(app)
    last_col, last_row = used_area(sheet)
    limit_cells(app, last_col + 1, min(last_row + 1, MAX_ROWS_READ), "The used area read")
    rows = read_block(sheet, last_col, min(last_row, MAX_ROWS_READ - 1))
    data = {
        "sheet_name": sheet.getName(),
        "headers": rows[0] if rows else [],
        "data": rows[1:],
        "used_range": f"A1:{cell_name(last_col, last_row)}",
        "truncated": last_row >= MAX_ROWS_READ,
    }
    return read(f"Sheet {sheet.getName()!r}, used range {data['used_range']}.", data)


# ----------------------------------------------------------------------------- file


@calc.tool()
def save(app: OfficeApp) -> ToolOutput:
    """Save the workbook in place, in its own format."""
    return save_document(app.doc())


@calc.tool()
def export_to_csv(app: OfficeApp) -> ToolOutput:
    """Export the active sheet to CSV next to the workbook."""
    doc = app.doc()
    return export_document(
        app, doc, default_export_path(doc, ".csv"), "Text - txt - csv (StarCalc)", FilterOptions="44,34,76,1"
    )


def _export_sheets_pdf(app: OfficeApp, path: Path, sheets: list[str] | None) -> ToolOutput:
    doc = app.doc()
    all_sheets = doc.getSheets()
    hidden: list[Any] = []
    if sheets:
        for name in sheets:
            sheet_by_name(app, name)
        # Hidden sheets are not exported: hide the others for the export, then restore.
        for name in all_sheets.getElementNames():
            sh = all_sheets.getByName(name)
            if name not in sheets and sh.IsVisible:
                sh.IsVisible = False
                hidden.append(sh)
    try:
        return export_document(app, doc, path, "calc_pdf_Export")
    finally:
        for sh in hidden:
            sh.IsVisible = True


@calc.tool()
def export_to_pdf(
    app: OfficeApp,
    file_path: str | None = None,
    sheets: list[str] | None = None,
    open_after_export: bool = False,
) -> ToolOutput:
    """Export the workbook (or some sheets) to PDF."""
    doc = app.doc()
    path = Path(file_path) if file_path else default_export_path(doc, ".pdf")
    out = _export_sheets_pdf(app, path, sheets)
    if open_after_export:
        out.effect.details["opened"] = False
        out.message += " (open_after_export is not supported here; the PDF was not opened)"
    return out


# ----------------------------------------------------------------------------- sheets


@calc.tool()
def switch_active_sheet(app: OfficeApp, sheet_name: str) -> ToolOutput:
    """Activate a sheet, creating it at the end when it does not exist."""
    doc = app.doc()
    sheets = doc.getSheets()
    created = False
    if not sheets.hasByName(sheet_name):
        sheets.insertNewByName(sheet_name, sheets.getCount())
        created = True
    controller = doc.getCurrentController()
    before = controller.getActiveSheet().getName()
    controller.setActiveSheet(sheets.getByName(sheet_name))
    if before == sheet_name and not created:
        return no_effect(f"Sheet {sheet_name!r} was already active.", "sheets")
    verb = "Created and activated" if created else "Activated"
    return changed(
        f"{verb} sheet {sheet_name!r}.", 1, "sheets", [sheet_name], created=created, previous=before
    )


@calc.tool()
def rename_sheet(app: OfficeApp, old_name: str, new_name: str) -> ToolOutput:
    """Rename a sheet."""
    sheet = sheet_by_name(app, old_name)
    if old_name == new_name:
        return no_effect(f"Sheet is already named {new_name!r}.", "sheets")
    if app.doc().getSheets().hasByName(new_name):
        raise ToolError(f"A sheet named {new_name!r} already exists")
    sheet.setName(new_name)
    return changed(f"Renamed sheet {old_name!r} to {new_name!r}.", 1, "sheets", [new_name], old_name=old_name)


@calc.tool()
def copy_sheet(app: OfficeApp, source_sheet: str, new_sheet_name: str | None = None) -> ToolOutput:
    """Copy a sheet; the copy goes right after the source."""
    sheets = app.doc().getSheets()
    sheet_by_name(app, source_sheet)
    names = list(sheets.getElementNames())
    if new_sheet_name is None:
        n = 2
        while f"{source_sheet}_{n}" in names:
            n += 1
        new_sheet_name = f"{source_sheet}_{n}"
    elif new_sheet_name in names:
        raise ToolError(f"A sheet named {new_sheet_name!r} already exists")
    sheets.copyByName(source_sheet, new_sheet_name, names.index(source_sheet) + 1)
    return changed(f"Copied {source_sheet!r} to {new_sheet_name!r}.", 1, "sheets", [new_sheet_name])


@calc.tool()
def reorder_sheets(app: OfficeApp, sheet_name: str, position: int) -> ToolOutput:
    """Move a sheet to a 0-based position."""
    sheets = app.doc().getSheets()
    sheet_by_name(app, sheet_name)
    names = list(sheets.getElementNames())
    if not 0 <= position < len(names):
        raise ToolError(f"position must be in 0..{len(names) - 1}, got {position}")
    old = names.index(sheet_name)
    if old == position:
        return no_effect(f"Sheet {sheet_name!r} is already at position {position}.", "sheets")
    # moveByName inserts before the given index, counted with the sheet still in place.
    sheets.moveByName(sheet_name, position + 1 if position > old else position)
    new_order = list(sheets.getElementNames())
    return changed(
        f"Moved {sheet_name!r} from {old} to {new_order.index(sheet_name)}.",
        1,
        "sheets",
        [sheet_name],
        order=new_order,
    )


# ----------------------------------------------------------------------------- cells


@calc.tool()
def set_cell_value(app: OfficeApp, cell: str, value: str) -> ToolOutput:
    """Write a number, text or =formula into one cell of the active sheet."""
    rng = cell_range(active_sheet(app), cell)
    target = rng.getCellByPosition(0, 0)
    before = target.getFormula()
    if not write_cell(target, value):
        return no_effect(f"{cell.upper()} already holds {before!r}.", "cells", cell=cell.upper())
    return changed(
        f"Wrote {cell.upper()}.", 1, "cells", [cell.upper()], before=before, after=target.getFormula()
    )


@calc.tool()
def set_column_values(app: OfficeApp, column_name: str, data: list[Any], start_index: int = 2) -> ToolOutput:
    """Write values down a column starting at row ``start_index`` (1-based)."""
    if start_index < 1:
        raise ToolError(f"start_index is a 1-based row number, got {start_index}")
    sheet = active_sheet(app)
    col = column_index(column_name)
    limit_cells(app, 1, len(data), "data")
    targets = []
    for i, value in enumerate(data):
        if isinstance(value, str) and value.startswith("="):
            raise ToolError("set_column_values cannot write formulas; use set_cell_value")
        if write_cell(sheet.getCellByPosition(col, start_index - 1 + i), value):
            targets.append(cell_name(col, start_index - 1 + i))
    return changed(
        f"Wrote {len(data)} values to column {column_letter(col)}; {len(targets)} cells changed.",
        len(targets),
        "cells",
        targets,
        written=len(data),
    )


@calc.tool()
def highlight_range(app: OfficeApp, range_str: str, color: int = 0xFF0000) -> ToolOutput:
    """Set the background colour of a range."""
    colour = parse_colour(color)
    targets = []
    for c, name in cells_of(app, cell_range(active_sheet(app), range_str), range_str):
        if c.CellBackColor != colour:
            c.CellBackColor = colour
            targets.append(name)
    return changed(f"Highlighted {range_str} with #{colour:06x}.", len(targets), "cells", targets)


@calc.tool()
def transpose_range(app: OfficeApp, source_range: str, target_cell: str) -> ToolOutput:
    """Write the transpose of a range's values at a target cell."""
    sheet = active_sheet(app)
    source = cell_range(sheet, source_range)
    limit_cells(app, *range_shape(source), source_range)
    values = source.getDataArray()
    transposed = [list(col) for col in zip(*values, strict=True)]
    start = cell_range(sheet, target_cell).getRangeAddress()
    targets = []
    for r, row in enumerate(transposed):
        for c, value in enumerate(row):
            if write_cell(sheet.getCellByPosition(start.StartColumn + c, start.StartRow + r), value):
                targets.append(cell_name(start.StartColumn + c, start.StartRow + r))
    return changed(f"Transposed {source_range} to {target_cell}.", len(targets), "cells", targets)


@calc.tool()
def sort_column(app: OfficeApp, column_name: str, ascending: bool = True, start_index: int = 2) -> ToolOutput:
    """Sort the values of one column (from row ``start_index`` to the last used row)."""
    sheet = active_sheet(app)
    col = column_index(column_name)
    _, last_row = used_area(sheet)
    if last_row < start_index - 1:
        return no_effect(f"Column {column_letter(col)} has no rows from {start_index}.", "cells")
    limit_cells(app, 1, last_row - start_index + 2, f"Column {column_letter(col)}")
    rng = sheet.getCellRangeByPosition(col, start_index - 1, col, last_row)
    values = [row[0] for row in rng.getDataArray()]
    numbers = sorted((v for v in values if isinstance(v, float)), reverse=not ascending)
    texts = sorted(
        (v for v in values if isinstance(v, str) and v != ""), key=str.lower, reverse=not ascending
    )
    blanks = [v for v in values if v == ""]
    ordered = numbers + texts + blanks  # Calc's own order: numbers before text, blanks last
    targets = []
    for i, value in enumerate(ordered):
        if write_cell(rng.getCellByPosition(0, i), value):
            targets.append(cell_name(col, start_index - 1 + i))
    return changed(
        f"Sorted column {column_letter(col)} {'ascending' if ascending else 'descending'}.",
        len(targets),
        "cells",
        targets,
    )


@calc.tool()
def hide_row_data(app: OfficeApp, value: str = "N/A") -> ToolOutput:
    """Hide every row of the active sheet that has a cell equal to ``value``."""
    sheet = active_sheet(app)
    last_col, last_row = used_area(sheet)
    limit_cells(app, last_col + 1, last_row + 1, "The used area")
    rows = sheet.getRows()
    targets = []
    for r, row in enumerate(read_block(sheet, last_col, last_row)):
        if any(v is not None and str(v) == value for v in row):
            row_obj = rows.getByIndex(r)
            if row_obj.IsVisible:
                row_obj.IsVisible = False
                targets.append(str(r + 1))
    return changed(f"Hid rows containing {value!r}.", len(targets), "rows", targets)


@calc.tool()
def reorder_columns(app: OfficeApp, column_order: list[str]) -> ToolOutput:
    """Rearrange the used columns: new column i takes old column ``column_order[i]``."""
    sheet = active_sheet(app)
    last_col, last_row = used_area(sheet)
    indices = [column_index(c) for c in column_order]
    if len(set(indices)) != len(indices):
        raise ToolError(f"column_order has duplicates: {column_order}")
    limit_cells(app, len(indices), last_row + 1, "The reordered columns")
    columns = [
        [row[0] for row in sheet.getCellRangeByPosition(i, 0, i, last_row).getFormulaArray()] for i in indices
    ]
    targets = []
    for new_col, values in enumerate(columns):
        for r, formula in enumerate(values):
            cell = sheet.getCellByPosition(new_col, r)
            if cell.getFormula() != formula:
                cell.setFormula(formula)
                targets.append(cell_name(new_col, r))
    return changed(
        f"Reordered columns to {column_order}.", len(targets), "cells", targets, used_cols=last_col + 1
    )


@calc.tool()
def merge_cells(app: OfficeApp, range_str: str) -> ToolOutput:
    """Merge a range into one cell."""
    rng = cell_range(active_sheet(app), range_str)
    if rng.getIsMerged():
        return no_effect(f"{range_str} is already merged.", "ranges")
    rng.merge(True)
    if not rng.getIsMerged():
        raise ToolError(f"LibreOffice did not merge {range_str}")
    return changed(f"Merged {range_str}.", 1, "ranges", [range_str.upper()])


_ALIGN = {"left": "LEFT", "center": "CENTER", "centre": "CENTER", "right": "RIGHT"}


@calc.tool()
def format_range(
    app: OfficeApp,
    range_str: str,
    background_color: str | None = None,
    font_color: str | None = None,
    bold: bool | None = None,
    alignment: str | None = None,
) -> ToolOutput:
    """Set background, font colour, bold and horizontal alignment of a range."""
    import uno

    wanted: dict[str, Any] = {}
    if background_color is not None:
        wanted["CellBackColor"] = parse_colour(background_color)
    if font_color is not None:
        wanted["CharColor"] = parse_colour(font_color)
    if bold is not None:
        wanted["CharWeight"] = 150.0 if bold else 100.0
    if alignment is not None:
        if alignment.lower() not in _ALIGN:
            raise ToolError(f"alignment must be left, center or right, got {alignment!r}")
        wanted["HoriJustify"] = uno.Enum("com.sun.star.table.CellHoriJustify", _ALIGN[alignment.lower()])
    if not wanted:
        return no_effect("No formatting option was given.", "cells")
    targets = []
    for c, name in cells_of(app, cell_range(active_sheet(app), range_str), range_str):
        touched = False
        for prop, value in wanted.items():
            if c.getPropertyValue(prop) != value:
                c.setPropertyValue(prop, value)
                touched = True
        if touched:
            targets.append(name)
    return changed(f"Formatted {range_str} ({', '.join(wanted)}).", len(targets), "cells", targets)


_NUMBER_FORMATS = {
    "general": None,
    "number": "0",
    "currency": "[$$-409]#,##0",
    "accounting": "_($* #,##0_)",
    "date": "YYYY-MM-DD",
    "time": "HH:MM:SS",
    "percentage": "0%",
    "fraction": "# ?/?",
    "scientific": "0E+00",
    "text": "@",
}


@calc.tool()
def set_number_format(
    app: OfficeApp, range_str: str, format_type: str, decimal_places: int | None = None
) -> ToolOutput:
    """Apply a number format (general, number, currency, ..., text) to a range."""
    kind = format_type.lower().strip()
    if kind not in _NUMBER_FORMATS:
        raise ToolError(f"format_type must be one of {sorted(_NUMBER_FORMATS)}, got {format_type!r}")
    doc = app.doc()
    formats = doc.getNumberFormats()
    locale = doc.getPropertyValue("CharLocale")
    code = _NUMBER_FORMATS[kind]
    if code is None:
        key = 0
    else:
        if (
            decimal_places is not None
            and decimal_places > 0
            and kind in {"number", "currency", "accounting", "percentage", "scientific"}
        ):
            decimals = "." + "0" * decimal_places
            code = code.replace("0%", f"0{decimals}%").replace("0E", f"0{decimals}E")
            if kind in {"number", "currency", "accounting"}:
                code = code.replace("#,##0", f"#,##0{decimals}") if "#,##0" in code else code + decimals
        key = formats.queryKey(code, locale, False)
        if key == -1:
            key = formats.addNew(code, locale)
    targets = []
    for c, name in cells_of(app, cell_range(active_sheet(app), range_str), range_str):
        if c.NumberFormat != key:
            c.NumberFormat = key
            targets.append(name)
    return changed(f"Applied {kind} format to {range_str}.", len(targets), "cells", targets, format_code=code)


def _span(spec: str, pattern: str, parse: Any) -> tuple[int, int]:
    parts = spec.replace(" ", "").split(":")
    if len(parts) not in (1, 2):
        raise ToolError(f"Expected a span like {pattern!r}, got {spec!r}")
    first, last = parse(parts[0]), parse(parts[-1])
    return min(first, last), max(first, last)


def _row_number(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ToolError(f"Expected a 1-based row number, got {text!r}")
    return int(text) - 1


CHAR_WIDTH_100TH_MM = 226  # 1/100 mm per character of the default font, as Calc sizes "characters"
POINT_100TH_MM = 2540 / 72


def _resize(lines, first: int, last: int, size: str, optimal: str, size_100th_mm: int | None) -> list[int]:
    """Sets columns' or rows' ``size`` to ``size_100th_mm``, or ``optimal`` when None.

    Sizes are in LibreOffice's unit, hundredths of a millimetre.

    Returns the indices whose size actually changed.
    """
    changed_at = []
    for i in range(first, last + 1):
        line = lines.getByIndex(i)
        before = getattr(line, size)
        if size_100th_mm is None:
            setattr(line, optimal, True)
        else:
            setattr(line, size, size_100th_mm)
        if getattr(line, size) != before:
            changed_at.append(i)
    return changed_at


@calc.tool()
def adjust_column_width(
    app: OfficeApp, columns: str, width: float | None = None, autofit: bool | None = None
) -> ToolOutput:
    """Set the width of columns (in characters) or fit them to content."""
    first, last = _span(columns, "A:C", column_index)
    if width is None and not autofit:
        raise ToolError("Give width (characters) or autofit=true")
    size_100th_mm = None if autofit else round(float(width) * CHAR_WIDTH_100TH_MM)  # type: ignore[arg-type]
    changed_at = _resize(active_sheet(app).getColumns(), first, last, "Width", "OptimalWidth", size_100th_mm)
    targets = [column_letter(i) for i in changed_at]
    return changed(f"Adjusted width of columns {columns}.", len(targets), "columns", targets)


@calc.tool()
def adjust_row_height(
    app: OfficeApp, rows: str, height: float | None = None, autofit: bool | None = None
) -> ToolOutput:
    """Set the height of rows (in points) or fit them to content."""
    first, last = _span(rows, "1:10", _row_number)
    if height is None and not autofit:
        raise ToolError("Give height (points) or autofit=true")
    size_100th_mm = None if autofit else round(float(height) * POINT_100TH_MM)  # type: ignore[arg-type]
    changed_at = _resize(active_sheet(app).getRows(), first, last, "Height", "OptimalHeight", size_100th_mm)
    targets = [str(i + 1) for i in changed_at]
    return changed(f"Adjusted height of rows {rows}.", len(targets), "rows", targets)


# ----------------------------------------------------------------------------- view


@calc.tool()
def freeze_panes(app: OfficeApp, rows: int = 0, columns: int = 0) -> ToolOutput:
    """Freeze the top ``rows`` and left ``columns``."""
    if rows < 0 or columns < 0:
        raise ToolError("rows and columns must be >= 0")
    controller = app.doc().getCurrentController()
    before = (controller.getSplitRow(), controller.getSplitColumn(), controller.hasFrozenPanes())
    controller.freezeAtPosition(columns, rows)
    after = (controller.getSplitRow(), controller.getSplitColumn(), controller.hasFrozenPanes())
    if after == before:
        return no_effect(f"Panes were already frozen at {rows} rows, {columns} columns.", "settings")
    return changed(
        f"Froze {rows} rows and {columns} columns.",
        1,
        "settings",
        ["freeze"],
        split_row=after[0],
        split_column=after[1],
    )


@calc.tool()
def set_zoom_level(app: OfficeApp, zoom_percentage: int) -> ToolOutput:
    """Set the zoom of the sheet view (10..400 %)."""
    if not 10 <= zoom_percentage <= 400:
        raise ToolError(f"zoom_percentage must be in 10..400, got {zoom_percentage}")
    controller = app.doc().getCurrentController()
    before = controller.ZoomValue
    controller.ZoomType = 3  # com.sun.star.view.DocumentZoomType.BY_VALUE
    controller.ZoomValue = zoom_percentage
    if controller.ZoomValue == before:
        return no_effect(f"Zoom was already {before}%.", "settings")
    return changed(
        f"Zoom {before}% -> {controller.ZoomValue}%.",
        1,
        "settings",
        ["zoom"],
        before=before,
        after=controller.ZoomValue,
    )

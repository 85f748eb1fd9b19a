"""``libreoffice_writer``: the open Writer document, through UNO.

Pattern tools use Python regular expressions on each paragraph's text, so
``find_and_replace`` counts exactly the replacements it made (0 is a zero effect).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import regex
from mcp.server.mcpserver.exceptions import ToolError

from osworld_mcp_env.mcp_host.namespaces import LIBREOFFICE_WRITER
from osworld_mcp_env.mcp_servers.effects import ToolOutput, changed, no_effect, read
from osworld_mcp_env.mcp_servers.registry import ToolRegistry
from osworld_mcp_env.mcp_servers.tools.office_common import (
    default_export_path,
    document_path,
    export_document,
    parse_colour,
    save_document,
)
from osworld_mcp_env.mcp_servers.tools.uno_conn import WRITER, OfficeApp, office_lifespan, to_url

writer: ToolRegistry[OfficeApp] = ToolRegistry(LIBREOFFICE_WRITER, office_lifespan(WRITER))


def paragraphs(app: OfficeApp) -> list[Any]:
    """Returns the body paragraphs (tables skipped) in order."""
    out = []
    enum = app.doc().getText().createEnumeration()
    while enum.hasMoreElements():
        element = enum.nextElement()
        if element.supportsService("com.sun.star.text.Paragraph"):
            out.append(element)
    return out


def selected(app: OfficeApp, indices: list[int] | None) -> list[tuple[int, Any]]:
    """Returns ``[(index, paragraph)]`` for the given 0-based indices, or all paragraphs."""
    paras = paragraphs(app)
    if indices is None:
        return list(enumerate(paras))
    bad = [i for i in indices if not 0 <= i < len(paras)]
    if bad:
        raise ToolError(f"Paragraph indices {bad} are out of range 0..{len(paras) - 1}")
    return [(i, paras[i]) for i in indices]


def _utf16(text: str, index: int) -> int:
    # UNO counts UTF-16 code units; Python counts code points.
    return len(text[:index].encode("utf-16-le")) // 2


def match_ranges(
    app: OfficeApp, para: Any, pattern: regex.Pattern[str]
) -> list[tuple[Any, regex.Match[str]]]:
    """Returns a text cursor selecting each match of ``pattern`` in a paragraph, last first.

    Raises:
        ToolError: When matching one paragraph takes longer than ``regex_timeout_s``
            (the ``regex`` module checks its clock while it backtracks, and releases
            the GIL meanwhile, so other tools keep running).
    """
    text = para.getString()
    timeout = app.config.limits.regex_timeout_s
    try:
        matches = list(pattern.finditer(text, timeout=timeout, concurrent=True))
    except TimeoutError as exc:
        raise ToolError(
            f"The regular expression {pattern.pattern!r} took over {timeout} s on one paragraph; simplify it"
        ) from exc
    out = []
    for m in reversed(matches):
        if m.end() == m.start():
            continue
        cursor = para.getText().createTextCursorByRange(para.getStart())
        cursor.goRight(_utf16(text, m.start()), False)
        cursor.goRight(_utf16(text, m.end()) - _utf16(text, m.start()), True)
        out.append((cursor, m))
    return out


def compile_pattern(pattern: str) -> regex.Pattern[str]:
    """Compiles a user regex or raises a readable error."""
    try:
        return regex.compile(pattern)
    except regex.error as exc:
        raise ToolError(f"Invalid regular expression {pattern!r}: {exc}") from exc


@writer.tool(read_only=True)
def env_info(app: OfficeApp) -> ToolOutput:
    """All paragraphs, each cut to 500 characters."""
    paras = [p.getString()[:500] for p in paragraphs(app)]
    doc = app.doc()
    path = document_path(doc)
    text = "\n".join(f"[{i}] {p}" for i, p in enumerate(paras))
    return read(f"{doc.getTitle()} ({path}): {len(paras)} paragraphs.", text)


@writer.tool()
def save(app: OfficeApp) -> ToolOutput:
    """Save the document in place, in its own format."""
    return save_document(app.doc())


@writer.tool()
def write_text(
    app: OfficeApp, text: str, bold: bool = False, italic: bool = False, size: float | None = None
) -> ToolOutput:
    """Insert text at the view cursor, optionally bold/italic/sized."""
    if not text:
        return no_effect("Empty text; nothing inserted.", "characters")
    view = app.doc().getCurrentController().getViewCursor()
    body = view.getText()
    cursor = body.createTextCursorByRange(view.getStart())
    body.insertString(cursor, text, False)
    cursor.goLeft(len(text.encode("utf-16-le")) // 2, True)
    cursor.CharWeight = 150.0 if bold else 100.0
    cursor.CharPosture = _posture(italic)
    if size is not None:
        cursor.CharHeight = float(size)
    return changed(f"Inserted {len(text)} characters.", len(text), "characters", details_text(text))


def details_text(text: str) -> list[str]:
    """Returns a short target list for inserted text."""
    return [text[:80]]


def _posture(italic: bool) -> Any:
    import uno

    return uno.Enum("com.sun.star.awt.FontSlant", "ITALIC" if italic else "NONE")


def _apply_to_matches(
    app: OfficeApp, pattern: str, indices: list[int] | None, prop: str, value: Any
) -> tuple[int, list[str]]:
    compiled = compile_pattern(pattern)
    count, targets = 0, []
    for i, para in selected(app, indices):
        for cursor, m in match_ranges(app, para, compiled):
            cursor.setPropertyValue(prop, value)
            count += 1
            targets.append(f"{i}:{m.group(0)[:40]}")
    return count, targets


@writer.tool()
def set_color(
    app: OfficeApp, pattern: str, color: float, paragraph_indices: list[int] | None = None
) -> ToolOutput:
    """Colour every match of a regex."""
    count, targets = _apply_to_matches(app, pattern, paragraph_indices, "CharColor", parse_colour(int(color)))
    return changed(f"Coloured {count} matches of {pattern!r}.", count, "matches", targets)


@writer.tool()
def set_font_size(
    app: OfficeApp, font_size: float, pattern: str, paragraph_indices: list[int] | None = None
) -> ToolOutput:
    """Set the font size of every match of a regex."""
    if font_size <= 0:
        raise ToolError(f"font_size must be > 0, got {font_size}")
    count, targets = _apply_to_matches(app, pattern, paragraph_indices, "CharHeight", float(font_size))
    return changed(f"Resized {count} matches of {pattern!r} to {font_size} pt.", count, "matches", targets)


@writer.tool()
def find_and_replace(
    app: OfficeApp, pattern: str, replacement: str, paragraph_indices: list[int] | None = None
) -> ToolOutput:
    r"""Replace every match of a regex (Python syntax; ``\1`` groups allowed)."""
    compiled = compile_pattern(pattern)
    budget = app.config.limits.max_text_file_bytes
    count, targets = 0, []
    for i, para in selected(app, paragraph_indices):
        for cursor, m in match_ranges(app, para, compiled):
            # Each group reference copies a match: bound the text before expanding it.
            budget -= len(replacement) * (len(m.group(0)) + 1)
            if budget < 0:
                raise ToolError(
                    f"The replacements would insert more than {app.config.limits.max_text_file_bytes} "
                    f"characters; {count} were made before stopping"
                )
            cursor.setString(m.expand(replacement))
            count += 1
            targets.append(str(i))
    return changed(f"Made {count} replacements of {pattern!r}.", count, "replacements", sorted(set(targets)))


def _set_para_prop(app: OfficeApp, indices: list[int] | None, prop: str, value: Any, same: Any) -> list[str]:
    targets = []
    for i, para in selected(app, indices):
        if not same(para.getPropertyValue(prop), value):
            para.setPropertyValue(prop, value)
            targets.append(str(i))
    return targets


@writer.tool()
def set_font(app: OfficeApp, font_name: str, paragraph_indices: list[int] | None = None) -> ToolOutput:
    """Set the font of whole paragraphs."""
    targets = []
    for i, para in selected(app, paragraph_indices):
        cursor = para.getText().createTextCursorByRange(para)
        portions = para.createEnumeration()
        differs = False
        while portions.hasMoreElements():
            if portions.nextElement().CharFontName != font_name:
                differs = True
        if differs:
            cursor.CharFontName = font_name
            targets.append(str(i))
    return changed(f"Set font {font_name!r}.", len(targets), "paragraphs", targets)


@writer.tool()
def set_line_spacing(
    app: OfficeApp, spacing_value: float, paragraph_indices: list[int] | None = None
) -> ToolOutput:
    """Set proportional line spacing (1.0 single, 2.0 double)."""
    import uno

    if not 0.1 <= spacing_value <= 10:
        raise ToolError(f"spacing_value must be in 0.1..10, got {spacing_value}")
    spacing = uno.createUnoStruct("com.sun.star.style.LineSpacing")
    spacing.Mode, spacing.Height = 0, round(spacing_value * 100)  # PROP, percent
    targets = _set_para_prop(
        app,
        paragraph_indices,
        "ParaLineSpacing",
        spacing,
        lambda a, b: (a.Mode, a.Height) == (b.Mode, b.Height),
    )
    return changed(f"Set line spacing {spacing_value}.", len(targets), "paragraphs", targets)


_ADJUST = {"left": 0, "right": 1, "justify": 2, "center": 3, "centre": 3}


@writer.tool()
def set_paragraph_alignment(
    app: OfficeApp, alignment: str, paragraph_indices: list[int] | None = None
) -> ToolOutput:
    """Align paragraphs left, center, right or justify."""
    key = alignment.lower().strip()
    if key not in _ADJUST:
        raise ToolError(f"alignment must be left, center, right or justify, got {alignment!r}")
    targets = _set_para_prop(
        app,
        paragraph_indices,
        "ParaAdjust",
        _ADJUST[key],
        lambda a, b: int(a.value if hasattr(a, "value") else a) == b,
    )
    return changed(f"Aligned {alignment}.", len(targets), "paragraphs", targets)


@writer.tool()
def set_default_font(app: OfficeApp, font_name: str, font_size: float | None = None) -> ToolOutput:
    """Make new text use a font (the default paragraph style), leaving explicitly formatted text as it is."""
    doc = app.doc()
    style = doc.getStyleFamilies().getByName("ParagraphStyles").getByName("Standard")
    changes = []
    if style.CharFontName != font_name:
        style.CharFontName = font_name
        changes.append("CharFontName")
    if font_size is not None and abs(style.CharHeight - float(font_size)) > 1e-6:
        style.CharHeight = float(font_size)
        changes.append("CharHeight")
    view = doc.getCurrentController().getViewCursor()
    view.CharFontName = font_name
    if font_size is not None:
        view.CharHeight = float(font_size)
    return changed(f"Default font {font_name!r}.", len(changes), "settings", changes, style="Standard")


_POSITIONS = {
    "bottom_left": ("Footer", 0),
    "bottom_center": ("Footer", 3),
    "bottom_right": ("Footer", 1),
    "top_left": ("Header", 0),
    "top_center": ("Header", 3),
    "top_right": ("Header", 1),
}


@writer.tool()
def add_page_numbers(
    app: OfficeApp, position: str, start_number: int | None = None, format: str | None = None
) -> ToolOutput:
    """Put a page-number field in the header or footer of the default page style."""
    if position not in _POSITIONS:
        raise ToolError(f"position must be one of {sorted(_POSITIONS)}, got {position!r}")
    doc = app.doc()
    area, adjust = _POSITIONS[position]
    first = paragraphs(app)[0]
    style = doc.getStyleFamilies().getByName("PageStyles").getByName(first.PageStyleName or "Standard")
    style.setPropertyValue(f"{area}IsOn", True)
    text = style.getPropertyValue(f"{area}Text")
    text.setString("")
    cursor = text.createTextCursor()
    cursor.ParaAdjust = adjust
    page = doc.createInstance("com.sun.star.text.TextField.PageNumber")
    page.NumberingType = 4  # ARABIC
    page.SubType = __import__("uno").Enum("com.sun.star.text.PageNumberType", "CURRENT")
    fmt = (format or "1").strip()
    if fmt.lower().startswith("page"):
        text.insertString(cursor, "Page ", False)
    text.insertTextContent(cursor, page, False)
    if "of" in fmt.lower():
        text.insertString(cursor, " of ", False)
        text.insertTextContent(cursor, doc.createInstance("com.sun.star.text.TextField.PageCount"), False)
    if start_number is not None:
        first.PageNumberOffset = start_number
    return changed(
        f"Added page numbers ({fmt}) at {position}.",
        1,
        "fields",
        [position],
        area=area.lower(),
        style=style.getName(),
    )


@writer.tool()
def insert_page_break(app: OfficeApp, position: str = "at_cursor") -> ToolOutput:
    """Insert a page break at the cursor or at the end of the document."""
    if position not in {"at_cursor", "end_of_document"}:
        raise ToolError(f"position must be 'at_cursor' or 'end_of_document', got {position!r}")
    doc = app.doc()
    body = doc.getText()
    if position == "at_cursor":
        cursor = body.createTextCursorByRange(doc.getCurrentController().getViewCursor().getStart())
    else:
        cursor = body.createTextCursor()
        cursor.gotoEnd(False)
    body.insertControlCharacter(cursor, 0, False)  # PARAGRAPH_BREAK
    cursor.BreakType = __import__("uno").Enum("com.sun.star.style.BreakType", "PAGE_BEFORE")
    return changed(f"Inserted a page break ({position}).", 1, "page_breaks", [position])


@writer.tool()
def insert_formula_at_cursor(app: OfficeApp, formula: str) -> ToolOutput:
    """Insert a Math formula object (StarMath syntax) at the view cursor."""
    doc = app.doc()
    obj = doc.createInstance("com.sun.star.text.TextEmbeddedObject")
    obj.CLSID = "078B7ABA-54FC-457F-8551-6147e776a997"
    obj.AnchorType = __import__("uno").Enum("com.sun.star.text.TextContentAnchorType", "AS_CHARACTER")
    view = doc.getCurrentController().getViewCursor()
    view.getText().insertTextContent(view, obj, False)
    model = obj.getEmbeddedObject()
    if model is None:
        view.getText().removeTextContent(obj)
        raise ToolError(
            "LibreOffice could not create a Math object; is LibreOffice Math (libreoffice-math) installed?"
        )
    model.Formula = formula
    return changed(f"Inserted formula {formula!r}.", 1, "objects", [formula[:80]])


PX_HMM = 2540 / 96


@writer.tool()
def insert_image_at_cursor(
    app: OfficeApp, image_path: str, width: int | None = None, height: int | None = None
) -> ToolOutput:
    """Insert an image at the view cursor, sized in pixels (96 dpi)."""
    import uno

    path = Path(image_path).expanduser()
    if not path.is_file():
        raise ToolError(f"No image file at {path}")
    doc = app.doc()
    provider = app.uno.service("com.sun.star.graphic.GraphicProvider")
    graphic = provider.queryGraphic(app.props(URL=to_url(path)))
    if graphic is None:
        raise ToolError(f"LibreOffice cannot read {path} as an image")
    shape = doc.createInstance("com.sun.star.text.TextGraphicObject")
    shape.Graphic = graphic
    shape.AnchorType = uno.Enum("com.sun.star.text.TextContentAnchorType", "AS_CHARACTER")
    px = graphic.SizePixel
    w, h = width or px.Width, height or px.Height
    if width and not height:
        h = round(px.Height * width / max(px.Width, 1))
    if height and not width:
        w = round(px.Width * height / max(px.Height, 1))
    size = uno.createUnoStruct("com.sun.star.awt.Size")
    size.Width, size.Height = round(w * PX_HMM), round(h * PX_HMM)
    shape.Size = size
    view = doc.getCurrentController().getViewCursor()
    view.getText().insertTextContent(view, shape, False)
    return changed(
        f"Inserted image {path.name} ({w}x{h} px).", 1, "images", [str(path)], width_px=w, height_px=h
    )


_QUALITY = {"standard": 90, "high": 95, "print": 100}


@writer.tool()
def export_to_pdf(
    app: OfficeApp,
    output_path: str | None = None,
    output_filename: str | None = None,
    include_comments: bool = False,
    quality: str = "standard",
) -> ToolOutput:
    """Export the document to PDF."""
    if quality not in _QUALITY:
        raise ToolError(f"quality must be one of {sorted(_QUALITY)}, got {quality!r}")
    doc = app.doc()
    if output_path and output_path.lower().endswith(".pdf"):
        path = Path(output_path)
    elif output_path and output_filename:
        path = Path(output_path) / output_filename
    else:
        default = default_export_path(doc, ".pdf")
        path = (Path(output_path) if output_path else default.parent) / (output_filename or default.name)
    return export_document(
        app, doc, path, "writer_pdf_Export", ExportNotes=include_comments, Quality=_QUALITY[quality]
    )

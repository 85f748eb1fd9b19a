"""``libreoffice_impress``: the open Impress presentation, through UNO.

Slides are 1-based (as in OSWorld-MCP's schemas); boxes are the 0-based shapes of
a slide in z-order. Effects count the slides, shapes or paragraphs that changed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from osworld_mcp_env.mcp_host.namespaces import LIBREOFFICE_IMPRESS
from osworld_mcp_env.mcp_servers.effects import ToolOutput, changed, no_effect, read
from osworld_mcp_env.mcp_servers.registry import ToolRegistry
from osworld_mcp_env.mcp_servers.tools.office_common import (
    export_document,
    parse_colour,
    save_document,
)
from osworld_mcp_env.mcp_servers.tools.uno_conn import (
    IMPRESS,
    OfficeApp,
    office_lifespan,
    stat_or_none,
    to_url,
)

impress: ToolRegistry[OfficeApp] = ToolRegistry(LIBREOFFICE_IMPRESS, office_lifespan(IMPRESS))


def _uno() -> Any:
    import uno

    return uno


def slide(app: OfficeApp, index: int) -> Any:
    """Returns a slide by 1-based index."""
    pages = app.doc().getDrawPages()
    if not 1 <= index <= pages.getCount():
        raise ToolError(f"Slide {index} does not exist; slides are 1..{pages.getCount()}")
    return pages.getByIndex(index - 1)


def box(app: OfficeApp, slide_index: int, box_index: int) -> Any:
    """Returns shape ``box_index`` (0-based) of a slide."""
    page = slide(app, slide_index)
    if not 0 <= box_index < page.getCount():
        raise ToolError(f"Slide {slide_index} has boxes 0..{page.getCount() - 1}, not {box_index}")
    return page.getByIndex(box_index)


def text_box(app: OfficeApp, slide_index: int, box_index: int) -> Any:
    """Returns a shape that holds text."""
    shape = box(app, slide_index, box_index)
    if not hasattr(shape, "getText") or not shape.supportsService("com.sun.star.drawing.Text"):
        raise ToolError(f"Box {box_index} on slide {slide_index} is a {shape.getShapeType()}, not a text box")
    return shape


def whole_text(shape: Any) -> Any:
    """Returns a cursor selecting all text of a shape."""
    cursor = shape.getText().createTextCursor()
    cursor.gotoStart(False)
    cursor.gotoEnd(True)
    return cursor


def shape_paragraphs(shape: Any) -> list[Any]:
    """Returns the paragraphs of a text shape."""
    out = []
    enum = shape.getText().createEnumeration()
    while enum.hasMoreElements():
        out.append(enum.nextElement())
    return out


def _set_if_differs(target: Any, prop: str, value: Any) -> bool:
    if target.getPropertyValue(prop) == value:
        return False
    target.setPropertyValue(prop, value)
    return True


def _text_shapes(page: Any) -> list[Any]:
    return [
        page.getByIndex(i)
        for i in range(page.getCount())
        if page.getByIndex(i).supportsService("com.sun.star.drawing.Text") and page.getByIndex(i).getString()
    ]


# ----------------------------------------------------------------------------- read-only


@impress.tool(read_only=True)
def env_info(app: OfficeApp, page_indices: list[int] | None = None) -> ToolOutput:
    """Text of every box on the given slides (1-based), or on all slides."""
    pages = app.doc().getDrawPages()
    indices = page_indices or list(range(1, pages.getCount() + 1))
    out = []
    for i in indices:
        page = slide(app, i)
        boxes = []
        for b in range(page.getCount()):
            shape = page.getByIndex(b)
            text = shape.getString() if shape.supportsService("com.sun.star.drawing.Text") else None
            boxes.append({"box_index": b, "type": shape.getShapeType().rsplit(".", 1)[-1], "text": text})
        out.append({"slide_index": i, "boxes": boxes})
    return read(f"{pages.getCount()} slides.", out)


@impress.tool(read_only=True)
def get_slide_count(app: OfficeApp) -> ToolOutput:
    """Number of slides."""
    n = app.doc().getDrawPages().getCount()
    return read(f"{n} slides.", n)


# ----------------------------------------------------------------------------- document


@impress.tool()
def save(app: OfficeApp) -> ToolOutput:
    """Save the presentation in place, in its own format."""
    return save_document(app.doc())


_SAVE_FILTERS = {
    ".pptx": "Impress MS PowerPoint 2007 XML",
    ".ppt": "MS PowerPoint 97",
    ".odp": "impress8",
    ".pdf": "impress_pdf_Export",
}


@impress.tool()
def save_as(app: OfficeApp, file_path: str, overwrite: bool = False) -> ToolOutput:
    """Save the presentation under a new path; the format follows the extension."""
    path = Path(file_path).expanduser()
    filt = _SAVE_FILTERS.get(path.suffix.lower())
    if filt is None:
        raise ToolError(f"Unsupported extension {path.suffix!r}; use one of {sorted(_SAVE_FILTERS)}")
    if path.exists() and not overwrite:
        raise ToolError(f"{path} exists; pass overwrite=true to replace it")
    doc = app.doc()
    if path.suffix.lower() == ".pdf":
        return export_document(app, doc, path, filt)
    if not path.parent.is_dir():
        raise ToolError(f"Folder {path.parent} does not exist")
    doc.storeAsURL(to_url(path), app.props(FilterName=filt, Overwrite=True))
    size = path.stat().st_size
    return changed(f"Saved as {path} ({size} bytes).", size, "bytes", [str(path)], path=str(path))


@impress.tool()
def configure_auto_save(app: OfficeApp, enabled: bool, interval_minutes: float) -> ToolOutput:
    """Turn LibreOffice's autosave on or off and set its interval (minutes, >= 1)."""
    if interval_minutes < 1:
        raise ToolError(f"interval_minutes must be >= 1, got {interval_minutes}")
    provider = app.uno.service("com.sun.star.configuration.ConfigurationProvider")
    arg = app.props(nodepath="/org.openoffice.Office.Recovery/AutoSave")
    node = provider.createInstanceWithArguments("com.sun.star.configuration.ConfigurationUpdateAccess", arg)
    before = {"Enabled": node.Enabled, "TimeIntervall": node.TimeIntervall}
    node.Enabled = enabled
    node.TimeIntervall = max(1, round(interval_minutes))
    node.commitChanges()
    after = {"Enabled": node.Enabled, "TimeIntervall": node.TimeIntervall}
    count = sum(before[k] != after[k] for k in before)
    return changed(
        f"Autosave {'on' if enabled else 'off'}, every {after['TimeIntervall']} min.",
        count,
        "settings",
        [k for k in before if before[k] != after[k]],
        before=before,
        after=after,
    )


@impress.tool()
def convert_to_docx(app: OfficeApp, output_path: str | None = None) -> ToolOutput:
    """Copy the text of every slide into a new Writer document, saved as .docx when a path is given."""
    doc = app.doc()
    pages = doc.getDrawPages()
    desktop = app.uno.desktop()
    hidden = output_path is not None
    target = desktop.loadComponentFromURL("private:factory/swriter", "_blank", 0, app.props(Hidden=hidden))
    body = target.getText()
    cursor = body.createTextCursor()
    paragraphs = 0
    for i in range(pages.getCount()):
        for shape in _text_shapes(pages.getByIndex(i)):
            for line in shape.getString().split("\n"):
                body.insertString(cursor, line, False)
                body.insertControlCharacter(cursor, 0, False)
                paragraphs += 1
    if output_path is None:
        return changed(
            f"Opened a new Writer document with {paragraphs} paragraphs.", paragraphs, "paragraphs"
        )
    path = Path(output_path).expanduser()
    try:
        out = export_document(app, target, path, "MS Word 2007 XML")
    finally:
        target.close(True)
    out.effect.details["paragraphs"] = paragraphs
    return out


_IMAGE_TYPES = {
    "png": "image/png",
    "jpeg": "image/jpeg",
    "jpg": "image/jpeg",
    "gif": "image/gif",
    "bmp": "image/bmp",
    "tiff": "image/tiff",
}


@impress.tool()
def export_to_image(
    app: OfficeApp, file_path: str, format: str, slide_index: int | None = None
) -> ToolOutput:
    """Export one slide, or every slide as ``name_<n>.ext``, to image files."""
    media = _IMAGE_TYPES.get(format.lower())
    if media is None:
        raise ToolError(f"format must be one of {sorted(_IMAGE_TYPES)}, got {format!r}")
    path = Path(file_path).expanduser()
    if not path.parent.is_dir():
        raise ToolError(f"Folder {path.parent} does not exist")
    pages = app.doc().getDrawPages()
    indices = [slide_index] if slide_index else list(range(1, pages.getCount() + 1))
    exporter = app.uno.service("com.sun.star.drawing.GraphicExportFilter")
    written, total = [], 0
    for i in indices:
        target = path if slide_index else path.with_name(f"{path.stem}_{i}{path.suffix}")
        before = stat_or_none(target)
        exporter.setSourceDocument(slide(app, i))
        exporter.filter(app.props(URL=to_url(target), MediaType=media))
        after = stat_or_none(target)
        if after is not None and after != before:
            written.append(str(target))
            total += after[1]
    return changed(f"Exported {len(written)} slide images.", len(written), "files", written, bytes=total)


# ----------------------------------------------------------------------------- slides


@impress.tool()
def go_to_slide(app: OfficeApp, slide_index: int) -> ToolOutput:
    """Show a slide in the editing view."""
    page = slide(app, slide_index)
    controller = app.doc().getCurrentController()
    if controller.getCurrentPage() == page:
        return no_effect(f"Slide {slide_index} is already shown.", "slides")
    controller.setCurrentPage(page)
    return changed(f"Showing slide {slide_index}.", 1, "slides", [str(slide_index)])


@impress.tool()
def duplicate_slide(app: OfficeApp, slide_index: int, target_position: int) -> ToolOutput:
    """Duplicate a slide and put the copy after slide ``target_position`` (1-based; 0 = first)."""
    doc = app.doc()
    pages = doc.getDrawPages()
    n = pages.getCount()
    if not 0 <= target_position <= n:
        raise ToolError(f"target_position must be in 0..{n}, got {target_position}")
    copy = doc.duplicate(slide(app, slide_index))  # lands right after the source
    controller = doc.getCurrentController()
    controller.getFrame().getContainerWindow().setFocus()
    wanted = min(target_position + 1, pages.getCount())  # 1-based place of the copy

    def where() -> int:
        return next(i + 1 for i in range(pages.getCount()) if pages.getByIndex(i) == copy)

    # The slide panel learns of the new slide asynchronously: retry a move until it lands,
    # under a deadline, and report failure instead of a false success.
    deadline = time.monotonic() + 3.0
    while (index := where()) != wanted:
        if time.monotonic() > deadline:
            raise ToolError(f"LibreOffice did not move the copy (it is slide {index}, wanted {wanted})")
        controller.setCurrentPage(copy)
        controller.select(copy)
        app.dispatch(".uno:MovePageUp" if index > wanted else ".uno:MovePageDown")
        if where() == index:
            time.sleep(0.05)
    final = [i + 1 for i in range(pages.getCount()) if pages.getByIndex(i) == copy]
    return changed(
        f"Duplicated slide {slide_index}; the copy is slide {final[0]}.",
        1,
        "slides",
        [str(final[0])],
        slide_count=pages.getCount(),
    )


@impress.tool()
def set_slide_orientation(app: OfficeApp, orientation: str) -> ToolOutput:
    """Make every slide portrait or landscape."""
    if orientation not in {"portrait", "landscape"}:
        raise ToolError(f"orientation must be 'portrait' or 'landscape', got {orientation!r}")
    pages = app.doc().getDrawPages()
    first = pages.getByIndex(0)
    w, h = first.Width, first.Height
    if (orientation == "landscape") == (w >= h):
        return no_effect(f"Slides are already {orientation}.", "slides")
    for i in range(pages.getCount()):
        page = pages.getByIndex(i)
        page.Width, page.Height = h, w
    return changed(f"Slides are now {orientation} ({h}x{w}).", pages.getCount(), "slides")


@impress.tool()
def set_slide_background(
    app: OfficeApp, slide_index: int | None = None, color: str | None = None, image_path: str | None = None
) -> ToolOutput:
    """Set a slide's (or every slide's) background to a colour or an image."""
    if color is None and image_path is None:
        raise ToolError("Give color or image_path")
    doc = app.doc()
    pages = doc.getDrawPages()
    indices = [slide_index] if slide_index else list(range(1, pages.getCount() + 1))
    graphic = None
    if image_path:
        path = Path(image_path).expanduser()
        if not path.is_file():
            raise ToolError(f"No image file at {path}")
        graphic = app.uno.service("com.sun.star.graphic.GraphicProvider").queryGraphic(
            app.props(URL=to_url(path))
        )
    fill_style = _uno().Enum("com.sun.star.drawing.FillStyle", "BITMAP" if graphic else "SOLID")
    for i in indices:
        background = doc.createInstance("com.sun.star.drawing.Background")
        background.FillStyle = fill_style
        if graphic is not None:
            background.FillBitmap = graphic.Bitmap if hasattr(graphic, "Bitmap") else graphic
            background.FillBitmapMode = _uno().Enum("com.sun.star.drawing.BitmapMode", "STRETCH")
        else:
            background.FillColor = parse_colour(color)  # type: ignore[arg-type]
        slide(app, i).Background = background
    return changed(
        f"Set the background of {len(indices)} slides.", len(indices), "slides", [str(i) for i in indices]
    )


# ----------------------------------------------------------------------------- boxes


@impress.tool()
def write_text(
    app: OfficeApp,
    content: str,
    page_index: int,
    box_index: int,
    bold: bool = False,
    italic: bool = False,
    size: int | None = None,
    append: bool = False,
) -> ToolOutput:
    """Replace (or append to) the text of a box."""
    shape = text_box(app, page_index, box_index)
    before = shape.getString()
    text = shape.getText()
    if append:
        cursor = text.createTextCursor()
        cursor.gotoEnd(False)
        text.insertString(cursor, content, False)
        cursor.goLeft(len(content.encode("utf-16-le")) // 2, True)
    else:
        shape.setString(content)
        cursor = whole_text(shape)
    cursor.CharWeight = 150.0 if bold else 100.0
    cursor.CharPosture = _uno().Enum("com.sun.star.awt.FontSlant", "ITALIC" if italic else "NONE")
    if size is not None:
        cursor.CharHeight = float(size)
    if shape.getString() == before and not (bold or italic or size):
        return no_effect(f"Box {box_index} on slide {page_index} already had that text.", "shapes")
    return changed(
        f"Wrote {len(content)} characters into box {box_index} of slide {page_index}.",
        1,
        "shapes",
        [f"{page_index}:{box_index}"],
        before=before[:200],
    )


@impress.tool()
def set_style(
    app: OfficeApp,
    slide_index: int,
    box_index: int,
    bold: bool | None = None,
    italic: bool | None = None,
    underline: bool | None = None,
) -> ToolOutput:
    """Set bold/italic/underline on all text of a box."""
    cursor = whole_text(text_box(app, slide_index, box_index))
    props: dict[str, Any] = {}
    if bold is not None:
        props["CharWeight"] = 150.0 if bold else 100.0
    if italic is not None:
        props["CharPosture"] = _uno().Enum("com.sun.star.awt.FontSlant", "ITALIC" if italic else "NONE")
    if underline is not None:
        props["CharUnderline"] = 1 if underline else 0
    touched = [p for p, v in props.items() if _set_if_differs(cursor, p, v)]
    return changed(f"Styled box {box_index} of slide {slide_index}.", len(touched), "properties", touched)


@impress.tool()
def set_text_color(app: OfficeApp, slide_index: int, box_index: int, color: str) -> ToolOutput:
    """Colour all text of a box."""
    cursor = whole_text(text_box(app, slide_index, box_index))
    done = _set_if_differs(cursor, "CharColor", parse_colour(color))
    return changed(
        f"Text colour of box {box_index} on slide {slide_index}.",
        int(done),
        "shapes",
        [f"{slide_index}:{box_index}"],
    )


@impress.tool()
def set_background_color(app: OfficeApp, slide_index: int, box_index: int, color: str) -> ToolOutput:
    """Fill a box with a solid colour."""
    shape = box(app, slide_index, box_index)
    colour = parse_colour(color)
    solid = _uno().Enum("com.sun.star.drawing.FillStyle", "SOLID")
    if shape.FillStyle == solid and shape.FillColor == colour:
        return no_effect("The box already has that fill.", "shapes")
    shape.FillStyle = solid
    shape.FillColor = colour
    return changed(
        f"Filled box {box_index} on slide {slide_index}.", 1, "shapes", [f"{slide_index}:{box_index}"]
    )


@impress.tool()
def set_slide_font(app: OfficeApp, slide_index: int, font_name: str) -> ToolOutput:
    """Use one font for all text of a slide."""
    touched = []
    for shape in _text_shapes(slide(app, slide_index)):
        cursor = whole_text(shape)
        if cursor.CharFontName != font_name:
            cursor.CharFontName = font_name
            touched.append(shape.getString()[:30])
    return changed(f"Font {font_name!r} on slide {slide_index}.", len(touched), "shapes", touched)


_PARA_ADJUST = {"left": 0, "right": 1, "justify": 2, "center": 3}


@impress.tool()
def set_textbox_alignment(app: OfficeApp, slide_index: int, box_index: int, alignment: str) -> ToolOutput:
    """Align every paragraph of a box."""
    if alignment not in _PARA_ADJUST:
        raise ToolError(f"alignment must be one of {sorted(_PARA_ADJUST)}, got {alignment!r}")
    value = _PARA_ADJUST[alignment]
    touched = 0
    for para in shape_paragraphs(text_box(app, slide_index, box_index)):
        current = para.ParaAdjust
        if int(getattr(current, "value", current)) != value:
            para.ParaAdjust = value
            touched += 1
    return changed(f"Aligned box {box_index} of slide {slide_index} {alignment}.", touched, "paragraphs")


@impress.tool()
def set_text_strikethrough(
    app: OfficeApp, slide_index: int, box_index: int, line_numbers: list[int], apply: bool
) -> ToolOutput:
    """Strike through (or clear) lines (1-based paragraphs) of a box."""
    paras = shape_paragraphs(text_box(app, slide_index, box_index))
    bad = [n for n in line_numbers if not 1 <= n <= len(paras)]
    if bad:
        raise ToolError(f"Lines {bad} do not exist; the box has lines 1..{len(paras)}")
    touched = []
    for n in line_numbers:
        if _set_if_differs(paras[n - 1], "CharStrikeout", 1 if apply else 0):
            touched.append(str(n))
    return changed(
        f"Strike-through {'on' if apply else 'off'} for lines {line_numbers}.", len(touched), "lines", touched
    )


@impress.tool()
def delete_content(app: OfficeApp, slide_index: int, box_index: int) -> ToolOutput:
    """Delete a box from a slide."""
    page = slide(app, slide_index)
    shape = box(app, slide_index, box_index)
    before = page.getCount()
    text = shape.getString() if shape.supportsService("com.sun.star.drawing.Text") else ""
    page.remove(shape)
    return changed(
        f"Deleted box {box_index} of slide {slide_index}.",
        before - page.getCount(),
        "shapes",
        [f"{slide_index}:{box_index}"],
        text=text[:200],
    )


_ANCHORS = {
    "left": (0.0, 0.5),
    "right": (1.0, 0.5),
    "center": (0.5, 0.5),
    "top": (0.5, 0.0),
    "bottom": (0.5, 1.0),
    "top-left": (0.0, 0.0),
    "top-right": (1.0, 0.0),
    "bottom-left": (0.0, 1.0),
    "bottom-right": (1.0, 1.0),
}


@impress.tool()
def position_box(app: OfficeApp, slide_index: int, box_index: int, position: str) -> ToolOutput:
    """Move a box to a named place on the slide."""
    if position not in _ANCHORS:
        raise ToolError(f"position must be one of {sorted(_ANCHORS)}, got {position!r}")
    page = slide(app, slide_index)
    shape = box(app, slide_index, box_index)
    fx, fy = _ANCHORS[position]
    size = shape.getSize()
    point = _uno().createUnoStruct("com.sun.star.awt.Point")
    point.X = round((page.Width - size.Width) * fx)
    point.Y = round((page.Height - size.Height) * fy)
    old = shape.getPosition()
    if (old.X, old.Y) == (point.X, point.Y):
        return no_effect(f"Box is already at {position}.", "shapes")
    shape.setPosition(point)
    return changed(
        f"Moved box {box_index} of slide {slide_index} to {position}.",
        1,
        "shapes",
        [f"{slide_index}:{box_index}"],
        x=point.X,
        y=point.Y,
    )


def _place(page: Any, shape: Any, position: dict[str, float] | None, size: dict[str, float] | None) -> None:
    uno = _uno()
    if size:
        s = uno.createUnoStruct("com.sun.star.awt.Size")
        s.Width = round(page.Width * size.get("width", 50) / 100)
        s.Height = round(page.Height * size.get("height", 50) / 100)
        shape.setSize(s)
    if position:
        p = uno.createUnoStruct("com.sun.star.awt.Point")
        p.X = round(page.Width * position.get("x", 0) / 100)
        p.Y = round(page.Height * position.get("y", 0) / 100)
        shape.setPosition(p)


@impress.tool()
def insert_image(
    app: OfficeApp,
    slide_index: int,
    image_path: str,
    width: float | None = None,
    height: float | None = None,
    position: dict[str, float] | None = None,
) -> ToolOutput:
    """Insert an image (size in cm, position in % of the slide)."""
    path = Path(image_path).expanduser()
    if not path.is_file():
        raise ToolError(f"No image file at {path}")
    doc = app.doc()
    page = slide(app, slide_index)
    graphic = app.uno.service("com.sun.star.graphic.GraphicProvider").queryGraphic(
        app.props(URL=to_url(path))
    )
    if graphic is None:
        raise ToolError(f"LibreOffice cannot read {path} as an image")
    shape = doc.createInstance("com.sun.star.drawing.GraphicObjectShape")
    page.add(shape)
    shape.Graphic = graphic
    size = _uno().createUnoStruct("com.sun.star.awt.Size")
    size.Width = round((width or 8) * 1000)
    size.Height = round(
        (height or (width or 8) * graphic.Size100thMM.Height / max(graphic.Size100thMM.Width, 1)) * 1000
    )
    shape.setSize(size)
    _place(page, shape, position, None)
    return changed(
        f"Inserted {path.name} on slide {slide_index} as box {page.getCount() - 1}.",
        1,
        "shapes",
        [f"{slide_index}:{page.getCount() - 1}"],
    )


@impress.tool()
def insert_file(
    app: OfficeApp,
    file_path: str,
    slide_index: int | None = None,
    position: dict[str, float] | None = None,
    size: dict[str, float] | None = None,
    autoplay: bool = False,
) -> ToolOutput:
    """Insert a video or audio file as a media shape."""
    path = Path(file_path).expanduser()
    if not path.is_file():
        raise ToolError(f"No file at {path}")
    doc = app.doc()
    if slide_index is None:
        page = doc.getCurrentController().getCurrentPage()
        pages = doc.getDrawPages()
        slide_index = next(i + 1 for i in range(pages.getCount()) if pages.getByIndex(i) == page)
    page = slide(app, slide_index)
    shape = doc.createInstance("com.sun.star.presentation.MediaShape")
    page.add(shape)
    shape.MediaURL = to_url(path)
    _place(page, shape, position or {"x": 25, "y": 25}, size or {"width": 50, "height": 50})
    if autoplay and hasattr(shape, "Loop"):
        shape.Loop = False
    return changed(
        f"Inserted {path.name} on slide {slide_index}.",
        1,
        "shapes",
        [f"{slide_index}:{page.getCount() - 1}"],
        autoplay=autoplay,
    )

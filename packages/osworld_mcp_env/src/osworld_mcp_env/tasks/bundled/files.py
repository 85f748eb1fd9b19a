"""Office files made in code, byte-identical for identical content.

openpyxl, python-docx and python-pptx stamp the current time into the document
properties and into every zip entry; :func:`normalized_zip` rewrites both with a
fixed date so that the same seed gives the same bytes. The libraries (the ``office``
extra) are imported when a document is built: listing and loading tasks needs none.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterable, Sequence
from typing import Any

FIXED_ZIP_TIME = (2024, 1, 1, 0, 0, 0)
FIXED_W3C_TIME = b"2024-01-01T00:00:00Z"
_W3C_TIME = re.compile(rb"(<dcterms:(?:created|modified)[^>]*>)[^<]*(</dcterms:)")


def normalized_zip(data: bytes) -> bytes:
    """``data`` (an OOXML zip) with fixed entry dates and fixed created/modified properties."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            if info.filename == "docProps/core.xml":
                body = _W3C_TIME.sub(rb"\g<1>" + FIXED_W3C_TIME + rb"\g<2>", body)
            dst.writestr(zipfile.ZipInfo(info.filename, FIXED_ZIP_TIME), body, zipfile.ZIP_DEFLATED)
    return out.getvalue()


def xlsx(rows: Iterable[Sequence[Any]], sheet: str = "Sheet1") -> bytes:
    """A one-sheet workbook holding ``rows`` from A1."""
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = sheet
    for row in rows:
        ws.append(list(row))
    buf = io.BytesIO()
    wb.save(buf)
    return normalized_zip(buf.getvalue())


def docx_bytes(paragraphs: Iterable[str]) -> bytes:
    """A document with one paragraph per string."""
    import docx

    doc = docx.Document()
    for text in paragraphs:
        doc.add_paragraph(text)
    buf = io.BytesIO()
    doc.save(buf)
    return normalized_zip(buf.getvalue())


def pptx_bytes(slides: Iterable[tuple[str, str]]) -> bytes:
    """A deck of title-and-content slides, one per ``(title, body)``."""
    import pptx

    deck = pptx.Presentation()
    layout = deck.slide_layouts[1]
    for title, body in slides:
        slide = deck.slides.add_slide(layout)
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    buf = io.BytesIO()
    deck.save(buf)
    return normalized_zip(buf.getvalue())


def text(lines: Iterable[str]) -> bytes:
    """UTF-8 text, one line each, with a final newline."""
    return "".join(f"{line}\n" for line in lines).encode()

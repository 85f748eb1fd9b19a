"""Pieces the three LibreOffice namespaces share: save, export, colours, cell names."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from osworld_mcp_env.mcp_servers.effects import ToolOutput, changed, no_effect
from osworld_mcp_env.mcp_servers.tools.uno_conn import OfficeApp, from_url, stat_or_none, to_url

_NAMED_COLOURS = {
    "black": 0x000000,
    "white": 0xFFFFFF,
    "red": 0xFF0000,
    "green": 0x00FF00,
    "blue": 0x0000FF,
    "yellow": 0xFFFF00,
    "cyan": 0x00FFFF,
    "magenta": 0xFF00FF,
    "gray": 0x808080,
    "grey": 0x808080,
    "orange": 0xFFA500,
    "purple": 0x800080,
    "pink": 0xFFC0CB,
    "brown": 0xA52A2A,
    "darkblue": 0x00008B,
    "darkgreen": 0x006400,
    "darkred": 0x8B0000,
    "lightblue": 0xADD8E6,
    "lightgreen": 0x90EE90,
    "lightgray": 0xD3D3D3,
    "lightgrey": 0xD3D3D3,
    "navy": 0x000080,
}


def parse_colour(value: str | int | float) -> int:
    """Returns ``0xRRGGBB`` from a name (``red``), ``#ff0000``, ``0xff0000`` or an int.

    Raises:
        ToolError: If the value is not a colour.
    """
    if isinstance(value, int | float) and not isinstance(value, bool):
        if not 0 <= int(value) <= 0xFFFFFF:
            raise ToolError(f"Colour {value!r} is outside 0x000000..0xFFFFFF")
        return int(value)
    text = str(value).strip().lower().replace(" ", "")
    if text in _NAMED_COLOURS:
        return _NAMED_COLOURS[text]
    m = re.fullmatch(r"(?:#|0x)?([0-9a-f]{6})", text)
    if m:
        return int(m.group(1), 16)
    m = re.fullmatch(r"(?:#)([0-9a-f]{3})", text)
    if m:
        return int("".join(ch * 2 for ch in m.group(1)), 16)
    raise ToolError(
        f"Unknown colour {value!r}; use a name ({', '.join(sorted(_NAMED_COLOURS))}) or '#rrggbb'"
    )


def document_path(doc: Any) -> Path | None:
    """Returns the local path the document was loaded from / saved to, or None."""
    url = doc.getLocation()
    return from_url(url) if url else None


def save_document(doc: Any) -> ToolOutput:
    """Stores ``doc`` at its location in its own format and reports the bytes written.

    Raises:
        ToolError: If the document has never been saved (no location).
    """
    path = document_path(doc)
    if path is None:
        raise ToolError("The document has no file location yet; use a save-as or export tool")
    was_modified = bool(doc.isModified())
    before = stat_or_none(path)
    doc.store()
    st = path.stat()
    rewritten = before is None or (st.st_mtime_ns, st.st_size) != before
    if not rewritten:
        return no_effect(f"{path} was not rewritten.", "bytes", path=str(path))
    return changed(
        f"Saved {path} ({st.st_size} bytes).",
        st.st_size,
        "bytes",
        [str(path)],
        path=str(path),
        had_unsaved_changes=was_modified,
    )


def export_document(app: OfficeApp, doc: Any, path: Path, filter_name: str, **filter_data: Any) -> ToolOutput:
    """Exports ``doc`` to ``path`` with a LibreOffice export filter and reports the file written."""
    path = path.expanduser()
    if not path.parent.is_dir():
        raise ToolError(f"Folder {path.parent} does not exist")
    args: dict[str, Any] = {"FilterName": filter_name, "Overwrite": True}
    if filter_data:
        args["FilterData"] = app.props(**filter_data)
    before = stat_or_none(path)
    doc.storeToURL(to_url(path), app.props(**args))
    after = stat_or_none(path)
    if after is None or after == before:
        return no_effect(f"Export to {path} wrote nothing.", "bytes", path=str(path))
    return changed(f"Exported {path} ({after[1]} bytes).", after[1], "bytes", [str(path)], path=str(path))


def default_export_path(doc: Any, suffix: str) -> Path:
    """Returns the document's path with ``suffix`` (``.pdf``), or raises if it has none."""
    path = document_path(doc)
    if path is None:
        raise ToolError("The document has no file location; give an explicit output path")
    return path.with_suffix(suffix)


def column_index(name: str) -> int:
    """Returns the 0-based index of a column letter (``A`` -> 0, ``AA`` -> 26).

    Raises:
        ToolError: If ``name`` is not a column letter.
    """
    text = name.strip().upper()
    if not re.fullmatch(r"[A-Z]{1,3}", text):
        raise ToolError(f"Expected a column letter like 'A' or 'AB', got {name!r}")
    index = 0
    for ch in text:
        index = index * 26 + (ord(ch) - 64)
    return index - 1


def column_letter(index: int) -> str:
    """Returns the column letter of a 0-based index."""
    out = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        out = chr(65 + rem) + out
    return out


def cell_name(col: int, row: int) -> str:
    """Returns ``A1``-style name of 0-based ``(col, row)``."""
    return f"{column_letter(col)}{row + 1}"

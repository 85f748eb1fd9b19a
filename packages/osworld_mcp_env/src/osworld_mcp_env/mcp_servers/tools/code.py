"""``code``: the desktop's text editor (mousepad), in place of OSWorld-MCP's VS Code.

Opening files goes through mousepad's command line; search and replace act on the
files on disk (mousepad reloads a changed file it watches); settings are mousepad's
GSettings keys, read back after writing. VS Code-only tools (extensions, sync,
workspace folders, debugger and Python-analysis settings) are not served; see
``docs/mcp_tools.md``.
"""

from __future__ import annotations

import difflib
import os
import shutil
import stat
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from mcp.server.mcpserver.exceptions import ToolError

from osworld_mcp_env.mcp_host.namespaces import CODE
from osworld_mcp_env.mcp_servers import privileges
from osworld_mcp_env.mcp_servers.config import ServerConfig
from osworld_mcp_env.mcp_servers.effects import ToolOutput, changed, no_effect, read
from osworld_mcp_env.mcp_servers.registry import ToolRegistry
from osworld_mcp_env.mcp_servers.tools.walk import TreeWalk

STYLE_DIRS = (Path("/usr/share/gtksourceview-4/styles"), Path("/usr/share/gtksourceview-3.0/styles"))
SCHEMA_VIEW = "org.xfce.mousepad.preferences.view"
SCHEMA_FILE = "org.xfce.mousepad.preferences.file"


@dataclass
class EditorApp:
    """The app context of ``code``: config plus the files this server opened."""

    config: ServerConfig
    opened: list[Path] = field(default_factory=list)

    def launch(self, *args: str) -> int:
        """Starts the editor with arguments; returns its pid."""
        cmd = self.config.editor_command
        if shutil.which(cmd[0]) is None:
            raise ToolError(f"{cmd[0]} is not installed on this desktop")
        return privileges.start([*cmd, *args]).pid

    def current_file(self) -> Path:
        """The file most recently opened through this server, else one a running editor was started on."""
        if self.opened:
            return self.opened[-1]
        running = self.editor_files()
        if not running:
            raise ToolError("No file is open in the editor; call launch_vscode or goto_file first")
        return running[-1]

    def editor_files(self) -> list[Path]:
        """Files named on the command lines of running editor processes (oldest first)."""
        name = Path(self.config.editor_command[0]).name
        found: list[tuple[float, Path]] = []
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
                started = proc.stat().st_mtime
            except OSError:
                continue
            if not argv or Path(argv[0].decode(errors="replace")).name != name:
                continue
            files = [Path(a.decode(errors="replace")) for a in argv[1:] if a and not a.startswith(b"-")]
            found += [(started, f) for f in files if f.is_file()]
        return [f for _, f in sorted(found)]

    def gsettings(self, *args: str) -> str:
        """Runs ``gsettings``; raises a ToolError with stderr on failure."""
        if shutil.which("gsettings") is None:
            raise ToolError("gsettings is not installed on this desktop")
        try:
            proc = privileges.run(["gsettings", *args], timeout=self.config.command_timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise ToolError(f"gsettings did not answer in {self.config.command_timeout_s} s") from exc
        if proc.returncode != 0:
            raise ToolError(f"gsettings {' '.join(args)} failed: {proc.stderr.strip()}")
        return proc.stdout.strip()

    def set_key(self, schema: str, key: str, value: str) -> ToolOutput:
        """Sets a GSettings key and proves it stuck by reading it back."""
        before = self.gsettings("get", schema, key)
        self.gsettings("set", schema, key, value)
        after = self.gsettings("get", schema, key)
        if after == before:
            return no_effect(f"{key} was already {after}.", "settings")
        if after.split()[-1].strip("'") != value.strip("'"):
            raise ToolError(f"{key} reads {after} after setting {value}; no persistent settings backend?")
        return changed(f"{key}: {before} -> {after}.", 1, "settings", [f"{schema} {key}"], before=before)


@asynccontextmanager
async def _lifespan(config: ServerConfig) -> AsyncIterator[EditorApp]:
    yield EditorApp(config)


code: ToolRegistry[EditorApp] = ToolRegistry(CODE, _lifespan)


def _file(text: str) -> Path:
    path = Path(text).expanduser()
    if not path.is_file():
        raise ToolError(f"No file at {path}")
    return path


@code.tool()
def launch_vscode(app: EditorApp, path: str) -> ToolOutput:
    """Open a file in the desktop's editor (folders are not supported by mousepad)."""
    target = Path(path).expanduser()
    if target.is_dir():
        raise ToolError(f"{target} is a folder; the desktop's editor (mousepad) opens files only")
    pid = app.launch(str(target))
    app.opened.append(target)
    return changed(f"Opened {target} in {app.config.editor_command[0]}.", 1, "files", [str(target)], pid=pid)


@code.tool()
def goto_file(app: EditorApp, file_path: str, line: int = 1, character: int = 1) -> ToolOutput:
    """Open a file with the cursor at a line and column (1-based)."""
    target = _file(file_path)
    pid = app.launch("--line", str(line), "--column", str(max(character - 1, 0)), str(target))
    app.opened.append(target)
    return changed(f"Opened {target} at {line}:{character}.", 1, "files", [str(target)], pid=pid)


@code.tool(read_only=True)
def compare_files(app: EditorApp, file1: str, file2: str) -> ToolOutput:
    """Unified diff of two text files."""
    a, b = _file(file1), _file(file2)
    limits = app.config.limits
    lines = []
    for path in (a, b):
        text = _read_text(path, limits.max_text_file_bytes, errors="replace")
        if text is None:
            raise ToolError(
                f"{path} is not a regular file of at most {app.config.limits.max_text_file_bytes} bytes"
            )
        lines.append(text.splitlines())
        if len(lines[-1]) > limits.max_diff_lines:
            raise ToolError(
                f"{path} has {len(lines[-1])} lines; compare_files diffs at most {limits.max_diff_lines}"
            )
    diff = list(difflib.unified_diff(lines[0], lines[1], str(a), str(b), lineterm=""))
    return read(
        "The files are identical." if not diff else f"{len(diff)} diff lines.", "\n".join(diff[:2000])
    )


def _scope(app: EditorApp, all_files: bool) -> tuple[list[Path], str]:
    """The files a search or replace covers, and a note when the walk stopped early."""
    if not all_files:
        return [app.current_file()], ""
    opened = app.opened or app.editor_files()
    root = opened[-1].parent if opened else app.config.home
    walk = TreeWalk(root, app.config.limits.max_walk_entries)
    out = []
    for folder, dirs, files in walk:
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        out += [Path(folder) / name for name in files]
    return out, walk.note()


def _read_text(path: Path, max_bytes: int, errors: str = "strict") -> str | None:
    """The UTF-8 text of a regular file of at most ``max_bytes``, else None.

    Opened without blocking and checked after opening, so a FIFO or a device the
    agent put in the tree (or swapped in after a check) cannot hang the tool.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return None
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        return None
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError:
        return None


@code.tool(read_only=True)
def search_text(app: EditorApp, text: str, all_files: bool = True) -> ToolOutput:
    """Lines containing ``text`` in the current file, or in every text file of its folder tree."""
    hits = []
    paths, note = _scope(app, all_files)
    for path in paths:
        content = _read_text(path, app.config.limits.max_text_file_bytes)
        if content is None:
            continue
        for n, line in enumerate(content.splitlines(), 1):
            if text in line:
                hits.append({"file": str(path), "line": n, "text": line[:200]})
    return read(f"{len(hits)} matches of {text!r}.{note}", hits[:500])


@code.tool()
def replace_text(app: EditorApp, search_text: str, replace_text: str, all_files: bool = True) -> ToolOutput:
    """Replace ``search_text`` on disk in the current file, or in every text file of its folder tree."""
    if not search_text:
        raise ToolError("search_text must not be empty")
    limit = app.config.limits.max_text_file_bytes
    total, files, too_big = 0, [], []
    paths, note = _scope(app, all_files)
    for path in paths:
        content = _read_text(path, limit)
        if content is None or search_text not in content:
            continue
        n = content.count(search_text)
        # Checked before building the new text: 1 MB of "a" with "a" -> 100 KB is 100 GB.
        if len(content) + n * (len(replace_text) - len(search_text)) > limit:
            too_big.append(str(path))
            continue
        path.write_text(content.replace(search_text, replace_text), encoding="utf-8")
        total += n
        files.append(str(path))
    skipped = f" Skipped {too_big}: the result would exceed {limit} characters." if too_big else ""
    return changed(
        f"Made {total} replacements in {len(files)} files.{skipped}{note}", total, "replacements", files
    )


@code.tool()
def set_auto_save_delay(app: EditorApp, delay_ms: int) -> ToolOutput:
    """Mousepad's autosave timer (whole seconds, rounded up from milliseconds)."""
    if delay_ms < 0:
        raise ToolError(f"delay_ms must be >= 0, got {delay_ms}")
    seconds = -(-delay_ms // 1000)
    return app.set_key(SCHEMA_FILE, "autosave-timer", str(seconds))


@code.tool()
def set_color_theme(app: EditorApp, theme_name: str) -> ToolOutput:
    """Mousepad's colour scheme (a GtkSourceView style id such as 'oblivion' or 'solarized-dark')."""
    styles = sorted({p.stem for d in STYLE_DIRS if d.is_dir() for p in d.glob("*.xml")})
    wanted = theme_name.strip().lower().replace(" ", "-")
    if wanted not in styles:
        raise ToolError(f"Unknown theme {theme_name!r}; the editor has {styles}")
    return app.set_key(SCHEMA_VIEW, "color-scheme", wanted)

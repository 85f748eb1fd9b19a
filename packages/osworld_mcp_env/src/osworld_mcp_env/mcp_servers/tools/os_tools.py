"""``os``: files, search, trash, archives of git, images, settings the desktop has.

GNOME-only settings (auto-lock, do-not-disturb) and PulseAudio volume are served
only where the desktop has them; otherwise the call is a tool error that says so.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from configparser import ConfigParser
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from mcp.server.mcpserver.exceptions import ToolError

from osworld_mcp_env.mcp_host.namespaces import OS
from osworld_mcp_env.mcp_servers import privileges
from osworld_mcp_env.mcp_servers.config import ServerConfig
from osworld_mcp_env.mcp_servers.effects import ToolOutput, changed, no_effect, read
from osworld_mcp_env.mcp_servers.registry import ToolRegistry
from osworld_mcp_env.mcp_servers.tools.arith import evaluate
from osworld_mcp_env.mcp_servers.tools.walk import TreeWalk

MAX_RESULTS = 500


@dataclass
class OsApp:
    """The app context of ``os``: the config (home directory, timeouts)."""

    config: ServerConfig

    def path(self, text: str) -> Path:
        """Resolves ``~`` and relative paths against the desktop user's home."""
        p = Path(text).expanduser()
        if text.startswith("~"):
            p = self.config.home / text[2:] if text.startswith("~/") else p
        return p if p.is_absolute() else self.config.home / p

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Runs a command with the config's deadline; raises a ToolError with stderr on failure."""
        if shutil.which(argv[0]) is None:
            raise ToolError(f"{argv[0]} is not installed on this desktop")
        try:
            proc = privileges.run(argv, timeout=self.config.command_timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise ToolError(f"{' '.join(argv)} did not finish in {self.config.command_timeout_s} s") from exc
        if check and proc.returncode != 0:
            raise ToolError(f"{' '.join(argv[:3])} failed ({proc.returncode}): {proc.stderr.strip()[:500]}")
        return proc


@asynccontextmanager
async def _lifespan(config: ServerConfig) -> AsyncIterator[OsApp]:
    yield OsApp(config)


os_tools: ToolRegistry[OsApp] = ToolRegistry(OS, _lifespan)


# ----------------------------------------------------------------------------- files


@os_tools.tool(read_only=True)
def search_files(app: OsApp, keyword: str, root_dir: str = ".") -> ToolOutput:
    """Files under ``root_dir`` whose name contains ``keyword`` (case-insensitive)."""
    root = app.path(root_dir)
    if not root.is_dir():
        raise ToolError(f"{root} is not a directory")
    needle = keyword.lower()
    found = []
    walk = TreeWalk(root, app.config.limits.max_walk_entries)
    for folder, _dirs, files in walk:
        found += [str(Path(folder) / f) for f in files if needle in f.lower()]
        if len(found) >= MAX_RESULTS:
            break
    return read(
        f"{len(found)} files match {keyword!r} under {root}.{walk.note()}", sorted(found)[:MAX_RESULTS]
    )


@os_tools.tool()
def copy_matching_files_with_hierarchy(
    app: OsApp,
    root_dir: str = ".",
    dest_dir: str = "fails",
    pattern: str = "*failed.ipynb",
    dry_run: bool = False,
) -> ToolOutput:
    """Copy files matching a glob into ``dest_dir`` (relative to root), keeping their sub-folders."""
    root = app.path(root_dir)
    dest = root / dest_dir
    pairs = []
    walk = TreeWalk(root, app.config.limits.max_walk_entries)
    for folder, dirs, files in walk:
        if Path(folder).resolve() == dest.resolve():
            dirs.clear()
            continue
        for name in fnmatch.filter(files, pattern):
            src = Path(folder) / name
            pairs.append((src, dest / src.relative_to(root)))
    if walk.truncated:
        raise ToolError(f"Nothing copied.{walk.note()}")
    if dry_run:
        return read(f"{len(pairs)} files would be copied.", [[str(a), str(b)] for a, b in pairs])
    for src, target in pairs:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    return changed(
        f"Copied {len(pairs)} files matching {pattern!r} into {dest}.",
        len(pairs),
        "files",
        [str(b) for _, b in pairs],
    )


@os_tools.tool()
def rename_directory(
    app: OsApp, old_path: str, new_path: str, create_intermediate: bool = False
) -> ToolOutput:
    """Rename (move) a directory; refuses to overwrite."""
    old, new = app.path(old_path), app.path(new_path)
    if not old.is_dir():
        raise ToolError(f"{old} is not a directory")
    if old.resolve() == new.resolve():
        return no_effect(f"{old} already has that name.", "directories")
    if new.exists():
        raise ToolError(f"{new} already exists")
    if not new.parent.is_dir():
        if not create_intermediate:
            raise ToolError(f"{new.parent} does not exist; pass create_intermediate=true")
        new.parent.mkdir(parents=True)
    old.rename(new)
    return changed(f"Renamed {old} to {new}.", 1, "directories", [str(new)], old=str(old))


def _trash(app: OsApp) -> Path:
    data = Path(os.environ.get("XDG_DATA_HOME", app.config.home / ".local/share"))
    return data / "Trash"


@os_tools.tool(read_only=True)
def get_trash_directory(app: OsApp) -> ToolOutput:
    """The user's Trash ``files`` folder."""
    path = _trash(app) / "files"
    return read(str(path), {"path": str(path), "exists": path.is_dir()})


@os_tools.tool()
def restore_file(app: OsApp, file_name: str) -> ToolOutput:
    """Move a file from the Trash back to where it was deleted from."""
    trash = _trash(app)
    item = trash / "files" / file_name
    info = trash / "info" / f"{file_name}.trashinfo"
    if not item.exists() or not info.is_file():
        names = sorted(p.name for p in (trash / "files").glob("*")) if (trash / "files").is_dir() else []
        raise ToolError(f"{file_name!r} is not in the Trash; it holds {names[:50]}")
    parser = ConfigParser(interpolation=None)
    parser.read(info)
    original = Path(unquote(parser["Trash Info"]["Path"]))
    if not original.is_absolute():
        original = app.config.home / original
    if original.exists():
        raise ToolError(f"{original} exists already; not overwriting it")
    original.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(item), original)
    info.unlink()
    return changed(f"Restored {original}.", 1, "files", [str(original)])


# ----------------------------------------------------------------------------- images


def _open_image(app: OsApp, image_path: str, max_pixels: int) -> Any:
    """Opens an image after checking its size from the header (decoding is what costs)."""
    from PIL import Image, UnidentifiedImageError

    src = app.path(image_path)
    if not src.is_file():
        raise ToolError(f"No image at {src}")
    try:
        img = Image.open(src)
    except (UnidentifiedImageError, Image.DecompressionBombError) as exc:
        raise ToolError(f"{src} is not an image this tool can read: {exc}") from exc
    width, height = img.size
    if width * height > max_pixels:
        raise ToolError(f"{src} is {width}x{height} pixels; this tool decodes at most {max_pixels} pixels")
    return img


@os_tools.tool()
def convert_image_format(app: OsApp, image_path: str, output_format: str, output_path: str) -> ToolOutput:
    """Convert an image to PNG, JPG or PDF (transparency flattened onto white for JPG/PDF)."""
    from PIL import Image

    fmt = output_format.lower()
    if fmt not in {"png", "jpg", "pdf"}:
        raise ToolError(f"output_format must be png, jpg or pdf, got {output_format!r}")
    out = app.path(output_path)
    img = _open_image(app, image_path, app.config.limits.max_image_pixels)
    if fmt in {"jpg", "pdf"} and img.mode in {"RGBA", "LA", "P"}:
        rgba = img.convert("RGBA")
        flat = Image.new("RGB", rgba.size, "white")
        flat.paste(rgba, mask=rgba.split()[-1])
        img = flat
    out.parent.mkdir(parents=True, exist_ok=True)
    img.save(out, format={"png": "PNG", "jpg": "JPEG", "pdf": "PDF"}[fmt])
    size = out.stat().st_size
    return changed(f"Wrote {out} ({fmt}, {size} bytes).", size, "bytes", [str(out)])


@os_tools.tool()
def remove_image_background(app: OsApp, image_path: str, output_path: str) -> ToolOutput:
    """Make the background transparent: pixels connected to the border that match its colour.

    A flood fill from the border with a colour tolerance, not a segmentation model; it
    suits flat backgrounds (product shots, logos, scans).
    """
    import numpy as np
    from PIL import Image, ImageDraw

    out = app.path(output_path)
    img = _open_image(app, image_path, app.config.limits.max_fill_pixels).convert("RGBA")
    marker = (255, 0, 255, 0)
    work = img.copy()
    w, h = work.size
    for xy in ((0, 0), (w - 1, 0), (0, h - 1), (w - 1, h - 1)):
        if work.getpixel(xy) != marker:
            ImageDraw.floodfill(work, xy, marker, thresh=40)
    background = (np.asarray(work) == marker).all(axis=-1)
    pixels = np.array(img)
    pixels[background, 3] = 0
    cleared = int(background.sum())
    out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(out, format="PNG")
    if cleared == 0:
        return no_effect(f"No background found; wrote an unchanged copy to {out}.", "pixels", path=str(out))
    return changed(f"Made {cleared} background pixels transparent in {out}.", cleared, "pixels", [str(out)])


# ----------------------------------------------------------------------------- git


@os_tools.tool()
def git_operation(
    app: OsApp, operation: str, repo_path: str | None = None, arguments: list[str] | None = None
) -> ToolOutput:
    """Run ``git <operation> <arguments>`` in a repository; reports HEAD and status before/after."""
    if not operation.replace("-", "").isalpha():
        raise ToolError(f"operation must be a git subcommand such as 'commit', got {operation!r}")
    cwd = app.path(repo_path) if repo_path else app.config.home
    if operation != "clone" and not cwd.is_dir():
        raise ToolError(f"{cwd} is not a directory")

    def state() -> tuple[str, str]:
        if not (cwd / ".git").exists():
            return "", ""
        head = app.run(
            "git", "-C", str(cwd), "rev-parse", "--verify", "-q", "HEAD", check=False
        ).stdout.strip()
        status = app.run("git", "-C", str(cwd), "status", "--porcelain", check=False).stdout
        return head, status

    before = state()
    if operation == "clone":
        argv = [
            "git",
            "-C",
            str(app.config.home),
            "clone",
            *(arguments or []),
            *([str(cwd)] if repo_path else []),
        ]
    else:
        argv = ["git", "-C", str(cwd), operation, *(arguments or [])]
    proc = app.run(*argv)
    after = state()
    output = (proc.stdout + proc.stderr).strip()[:4000]
    if before == after and operation not in {"clone"}:
        return no_effect(f"git {operation} ran; HEAD and working tree unchanged.", "commits", output=output)
    return changed(
        f"git {operation} changed the repository.",
        1,
        "repositories",
        [str(cwd)],
        output=output,
        head_before=before[0],
        head_after=after[0],
    )


@os_tools.tool()
def git_set_user_info(
    app: OsApp, username: str, email: str, is_global: bool, repo_path: str | None = None
) -> ToolOutput:
    """Set git user.name and user.email, globally or for one repository."""
    base = ["git"] if is_global else ["git", "-C", str(app.path(repo_path or "."))]
    flag = ["--global"] if is_global else []
    changes = []
    for key, value in (("user.name", username), ("user.email", email)):
        old = app.run(*base, "config", *flag, "--get", key, check=False).stdout.strip()
        if old != value:
            app.run(*base, "config", *flag, key, value)
            changes.append(key)
    where = "global" if is_global else str(app.path(repo_path or "."))
    return changed(f"git identity ({where}): {username} <{email}>.", len(changes), "settings", changes)


# ----------------------------------------------------------------------------- calculator


@os_tools.tool(read_only=True)
def calculator(app: OsApp, expression: str) -> ToolOutput:
    """Evaluate an arithmetic expression safely (no names, no calls, bounded size and time)."""
    value = evaluate(expression, app.config.limits)
    return read(f"{expression} = {value}", value)


# ----------------------------------------------------------------------------- desktop settings


@os_tools.tool()
def open_shell(app: OsApp) -> ToolOutput:
    """Open a terminal window."""
    command = app.config.terminal_command
    if shutil.which(command[0]) is None:
        raise ToolError(f"{command[0]} is not installed on this desktop")
    proc = privileges.start(command, cwd=app.config.home)
    try:
        code = proc.wait(timeout=0.5)
    except subprocess.TimeoutExpired:
        return changed(f"Started {command[0]} (pid {proc.pid}).", 1, "windows", [command[0]], pid=proc.pid)
    if code != 0:
        raise ToolError(f"{command[0]} exited with {code}")
    return changed(f"{command[0]} handed the window to its running instance.", 1, "windows", [command[0]])


def _gsettings(app: OsApp, schema: str, key: str) -> str:
    proc = app.run("gsettings", "get", schema, key, check=False)
    if proc.returncode != 0:
        raise ToolError(
            f"GSettings key {schema} {key} is not available on this desktop: {proc.stderr.strip()}"
        )
    return proc.stdout.strip()


@os_tools.tool(read_only=True)
def get_text_scale(app: OsApp) -> ToolOutput:
    """GTK text-scaling factor (``org.gnome.desktop.interface text-scaling-factor``)."""
    value = float(_gsettings(app, "org.gnome.desktop.interface", "text-scaling-factor"))
    return read(f"Text scale {value}.", value)


@os_tools.tool()
def change_text_scale(app: OsApp, new_scale: float) -> ToolOutput:
    """Set the text-scaling factor (0.5..3.0); returns the previous value."""
    if not 0.5 <= new_scale <= 3.0:
        raise ToolError(f"new_scale must be in 0.5..3.0, got {new_scale}")
    old = float(_gsettings(app, "org.gnome.desktop.interface", "text-scaling-factor"))
    app.run("gsettings", "set", "org.gnome.desktop.interface", "text-scaling-factor", str(new_scale))
    now = float(_gsettings(app, "org.gnome.desktop.interface", "text-scaling-factor"))
    if abs(now - new_scale) > 1e-6:
        raise ToolError(
            f"The setting did not stick (reads {now}); the desktop has no persistent GSettings backend"
        )
    if abs(now - old) < 1e-9:
        return no_effect(f"Text scale was already {old}.", "settings", previous=old)
    return changed(f"Text scale {old} -> {now}.", 1, "settings", ["text-scaling-factor"], previous=old)


@os_tools.tool(read_only=True)
def get_volume(app: OsApp) -> ToolOutput:
    """Volume of the default PulseAudio/PipeWire sink (needs ``pactl``)."""
    out = app.run("pactl", "get-sink-volume", "@DEFAULT_SINK@").stdout
    percents = [int(tok[:-1]) for tok in out.split() if tok.endswith("%") and tok[:-1].isdigit()]
    if not percents:
        raise ToolError(f"Could not read a volume from pactl: {out.strip()[:200]}")
    return read(f"Volume {percents[0]}%.", percents[0])


@os_tools.tool()
def set_volume(app: OsApp, percent: int) -> ToolOutput:
    """Set the default sink's volume (0..150 %; needs ``pactl``)."""
    if not 0 <= percent <= 150:
        raise ToolError(f"percent must be in 0..150, got {percent}")
    before = get_volume(app).data
    app.run("pactl", "set-sink-volume", "@DEFAULT_SINK@", f"{percent}%")
    after = get_volume(app).data
    return changed(f"Volume {before}% -> {after}%.", int(after != before), "settings", ["volume"])


@os_tools.tool()
def set_default_terminal_size(app: OsApp, columns: int, rows: int) -> ToolOutput:
    """Default size of new terminal windows (xfce4-terminal's ``MiscDefaultGeometry``)."""
    if not (10 <= columns <= 1000 and 2 <= rows <= 500):
        raise ToolError(f"Implausible size {columns}x{rows}")
    rc = app.config.home / ".config/xfce4/terminal/terminalrc"
    parser = ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    if rc.is_file():
        parser.read(rc)
    if not parser.has_section("Configuration"):
        parser.add_section("Configuration")
    value = f"{columns}x{rows}"
    if parser["Configuration"].get("MiscDefaultGeometry") == value:
        return no_effect(f"Default terminal size is already {value}.", "settings")
    parser["Configuration"]["MiscDefaultGeometry"] = value
    rc.parent.mkdir(parents=True, exist_ok=True)
    with rc.open("w") as fh:
        parser.write(fh, space_around_delimiters=False)
    return changed(f"New terminals open at {value}.", 1, "settings", [str(rc)])

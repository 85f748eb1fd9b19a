"""``vlc``: the running VLC through its HTTP interface (``--extraintf http``).

Playback tools read ``status.json`` before and after, so the effect says whether
the state really changed (pausing a paused player is a zero effect). Settings
live in ``~/.config/vlc/vlcrc`` and take effect when VLC restarts.
"""

from __future__ import annotations

import base64
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from osworld_mcp_env.mcp_host.namespaces import VLC
from osworld_mcp_env.mcp_servers.config import ServerConfig
from osworld_mcp_env.mcp_servers.effects import ToolOutput, changed, no_effect, read
from osworld_mcp_env.mcp_servers.registry import ToolRegistry
from osworld_mcp_env.mcp_servers.tools.walk import TreeWalk

MEDIA_SUFFIXES = ["mp4", "avi", "mkv", "mov", "mp3", "m4a", "wav"]


@dataclass
class VlcApp:
    """The app context of ``vlc``: where its HTTP interface is."""

    config: ServerConfig

    def get(self, path: str, **params: str) -> Any:
        """GETs a JSON endpoint (``status.json``, ``playlist.json``) of VLC's HTTP interface."""
        query = ("?" + urllib.parse.urlencode(params)) if params else ""
        req = urllib.request.Request(f"{self.config.vlc_url}/requests/{path}{query}")
        token = base64.b64encode(f":{self.config.vlc_password}".encode()).decode()
        req.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                return json.loads(resp.read().decode("utf-8", "replace"))
        except urllib.error.HTTPError as exc:
            raise ToolError(f"VLC answered HTTP {exc.code} (wrong --http-password?)") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise ToolError(f"VLC's HTTP interface is not reachable at {self.config.vlc_url}: {exc}") from exc

    def command(self, command: str, **params: str) -> Any:
        """Sends a ``status.json?command=...`` and returns the new status."""
        return self.get("status.json", command=command, **params)

    def settle(self, key: str, before: Any, timeout: float = 1.0) -> dict[str, Any]:
        """Polls status until ``key`` differs from ``before`` or the deadline passes."""
        deadline = time.monotonic() + timeout
        status = self.get("status.json")
        while status.get(key) == before and time.monotonic() < deadline:
            time.sleep(0.03)
            status = self.get("status.json")
        return status


@asynccontextmanager
async def _lifespan(config: ServerConfig) -> AsyncIterator[VlcApp]:
    yield VlcApp(config)


vlc: ToolRegistry[VlcApp] = ToolRegistry(VLC, _lifespan)


def _items(node: dict[str, Any]) -> list[dict[str, Any]]:
    if node.get("type") == "leaf":
        return [
            {
                "id": node.get("id"),
                "name": node.get("name"),
                "uri": node.get("uri"),
                "duration": node.get("duration"),
                "current": node.get("current") == "current",
            }
        ]
    out = []
    for child in node.get("children", []):
        out += _items(child)
    return out


def _playlist(app: VlcApp) -> list[dict[str, Any]]:
    tree = app.get("playlist.json")
    for child in tree.get("children", []):
        if child.get("name") in {"Playlist", "playlist"} or child.get("id") == "1":
            return _items(child)
    return _items(tree)


@vlc.tool(read_only=True)
def get_playlist(app: VlcApp) -> ToolOutput:
    """Playlist entries: name, URI, duration (s)."""
    items = _playlist(app)
    return read(f"{len(items)} playlist items.", items)


def _state_change(app: VlcApp, command: str, wanted: str) -> ToolOutput:
    before = app.get("status.json").get("state")
    if before == wanted:
        return no_effect(f"VLC is already {wanted}.", "state", state=before)
    app.command(command)
    after = app.settle("state", before).get("state")
    if after != wanted:
        raise ToolError(f"VLC is {after!r} after {command} (was {before!r}); is anything in the playlist?")
    return changed(f"VLC {before} -> {after}.", 1, "state", [after], before=before)


@vlc.tool()
def play(app: VlcApp) -> ToolOutput:
    """Start or resume playback."""
    return _state_change(app, "pl_play", "playing")


@vlc.tool()
def pause(app: VlcApp) -> ToolOutput:
    """Pause playback."""
    before = app.get("status.json").get("state")
    if before != "playing":
        return no_effect(f"VLC is {before}, not playing.", "state", state=before)
    return _state_change(app, "pl_forcepause", "paused")


def _skip(app: VlcApp, command: str) -> ToolOutput:
    before = app.get("status.json").get("currentplid")
    app.command(command)
    after = app.settle("currentplid", before).get("currentplid")
    if after == before:
        return no_effect("The current item did not change (end of playlist?).", "items", current=before)
    return changed(f"Current item {before} -> {after}.", 1, "items", [str(after)])


@vlc.tool()
def next(app: VlcApp) -> ToolOutput:
    """Skip to the next playlist item."""
    return _skip(app, "pl_next")


@vlc.tool()
def previous(app: VlcApp) -> ToolOutput:
    """Go back to the previous playlist item."""
    return _skip(app, "pl_previous")


@vlc.tool()
def add_to_playlist(app: VlcApp, uri: str) -> ToolOutput:
    """Append a file:// or https:// URI to the playlist."""
    if not re.match(r"^(file|https?)://", uri):
        raise ToolError(f"uri must start with file:// or https://, got {uri!r}")
    if uri.startswith("file://") and not Path(urllib.parse.unquote(uri[7:])).exists():
        raise ToolError(f"No file at {uri}")
    before = len(_playlist(app))
    app.command("in_enqueue", input=uri)
    deadline = time.monotonic() + 1.0
    while (after := len(_playlist(app))) == before and time.monotonic() < deadline:
        time.sleep(0.03)
    return changed(f"Playlist {before} -> {after} items.", after - before, "items", [uri])


@vlc.tool(read_only=True)
def get_current_time(app: VlcApp) -> ToolOutput:
    """Playback position in seconds."""
    t = app.get("status.json").get("time", 0)
    return read(f"{t} s.", t)


@vlc.tool(read_only=True)
def get_media_duration(app: VlcApp) -> ToolOutput:
    """Length of the current media in seconds."""
    t = app.get("status.json").get("length", 0)
    return read(f"{t} s.", t)


@vlc.tool()
def toggle_fullscreen(app: VlcApp, enable: bool | None = None) -> ToolOutput:
    """Toggle fullscreen, or force it on/off with ``enable``."""
    before = bool(app.get("status.json").get("fullscreen"))
    if enable is not None and enable == before:
        return no_effect(f"Fullscreen is already {'on' if before else 'off'}.", "settings")
    app.command("fullscreen")
    after = bool(app.settle("fullscreen", before).get("fullscreen"))
    if after == before:
        raise ToolError("VLC did not change fullscreen (no video output?)")
    return changed(f"Fullscreen {'on' if after else 'off'}.", 1, "settings", ["fullscreen"])


def _vlcrc(app: VlcApp) -> Path:
    return app.config.home / ".config/vlc/vlcrc"


def _read_vlcrc(path: Path) -> dict[str, str]:
    out = {}
    if path.is_file():
        for line in path.read_text(errors="replace").splitlines():
            m = re.match(r"^([A-Za-z0-9_-]+)=(.*)$", line.strip())
            if m:
                out[m.group(1)] = m.group(2)
    return out


@vlc.tool(read_only=True)
def get_settings(app: VlcApp) -> ToolOutput:
    """Non-default settings from ``vlcrc`` plus the live volume/loop/repeat/random state."""
    status = app.get("status.json")
    live = {k: status.get(k) for k in ("volume", "loop", "repeat", "random", "fullscreen", "rate")}
    return read("VLC settings.", {"vlcrc": _read_vlcrc(_vlcrc(app)), "live": live})


@vlc.tool()
def set_settings(app: VlcApp, field: str, value: str) -> ToolOutput:
    """Write one ``vlcrc`` option (applies at VLC's next start)."""
    if not re.fullmatch(r"[A-Za-z0-9_-]+", field):
        raise ToolError(f"Not a VLC option name: {field!r}")
    path = _vlcrc(app)
    lines = path.read_text(errors="replace").splitlines() if path.is_file() else []
    current = _read_vlcrc(path).get(field)
    if current == value:
        return no_effect(f"{field} is already {value!r}.", "settings")
    pattern = re.compile(rf"^#?\s*{re.escape(field)}=")
    for i, line in enumerate(lines):
        if pattern.match(line):
            lines[i] = f"{field}={value}"
            break
    else:
        lines.append(f"{field}={value}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return changed(
        f"{field}={value} in {path} (applies when VLC restarts).", 1, "settings", [field], before=current
    )


@vlc.tool(read_only=True)
def get_media_files(app: VlcApp, path: str, suffix: list[str] | None = None) -> ToolOutput:
    """Media files under a folder (recursive)."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise ToolError(f"{root} is not a directory")
    wanted = {s.lower().lstrip(".") for s in (suffix or MEDIA_SUFFIXES)}
    walk = TreeWalk(root, app.config.limits.max_walk_entries)
    files = sorted(
        str(Path(folder) / name)
        for folder, _dirs, names in walk
        for name in names
        if Path(name).suffix.lower().lstrip(".") in wanted
    )
    return read(f"{len(files)} media files under {root}.{walk.note()}", files[:500])

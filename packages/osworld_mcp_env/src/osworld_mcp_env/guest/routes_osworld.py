"""OSWorld's in-VM HTTP contract: the same paths, request and response shapes as its server."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from osworld_mcp_env.guest.state import EXECUTE_TIMEOUT_S, Guest, command_args
from osworld_mcp_env.guest.transport import Request, RequestError, Response, route
from osworld_mcp_env.guest.user_session import as_user, read_user_file

A11Y_TIMEOUT_S = 20.0


@route("/health", "GET")
def health(guest: Guest, request: Request) -> Response:
    """Readiness probe."""
    return Response({"status": "ok", "pid": os.getpid()})


@route("/platform", "GET")
def platform_name(guest: Guest, request: Request) -> Response:
    """OSWorld: the OS name as text."""
    return Response(platform.system())


@route("/execute", "POST")
@route("/setup/execute", "POST")
def execute(guest: Guest, request: Request) -> Response:
    """OSWorld: runs a command to completion; ``{status, output, error, returncode, timed_out}``.

    OSWorld's fields keep their meaning (a command killed at its timeout has
    ``returncode`` -1); ``timed_out`` says so explicitly, for clients that must
    tell a timeout from a command that could not start.
    """
    payload = request.json()
    shell = bool(payload.get("shell", False))
    args = command_args(payload.get("command", ""), shell, str(guest.home))
    timeout = float(payload.get("timeout", EXECUTE_TIMEOUT_S))
    try:
        done = subprocess.run(
            args,
            shell=shell,
            **guest.user.popen_kwargs(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",  # a command may print any bytes; the reply is JSON text
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        return Response(
            {
                "status": "error",
                "message": f"Command timed out after {timeout:g} s.",
                "output": _text(exc.stdout),
                "error": _text(exc.stderr),
                "returncode": -1,
                "timed_out": True,
            }
        )
    except OSError as exc:
        return Response(
            {
                "status": "error",
                "message": str(exc),
                "output": "",
                "error": str(exc),
                "returncode": -1,
                "timed_out": False,
            }
        )
    return Response(
        {
            "status": "success",
            "output": done.stdout,
            "error": done.stderr,
            "returncode": done.returncode,
            "timed_out": False,
        }
    )


def _text(value: bytes | str | None) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


@route("/setup/launch", "POST")
def launch(guest: Guest, request: Request) -> Response:
    """OSWorld: starts a command without waiting."""
    payload = request.json()
    command = payload.get("command", "")
    try:
        process = guest.spawn(command, bool(payload.get("shell", False)))
    except OSError as exc:
        raise RequestError(500, f"Cannot launch {command!r}: {exc}.") from exc
    return Response(f"{command} launched successfully", headers={"X-Pid": str(process.pid)})


@route("/setup/open_file", "POST")
def open_file(guest: Guest, request: Request) -> Response:
    """OSWorld: opens a file with its default app (or an app on PATH) and waits for its window."""
    payload = request.json()
    path = _user_path(guest, str(payload.get("path", "")))
    timeout = float(payload.get("timeout", 60.0))
    with as_user(guest.user.config.uid):
        exists = os.path.exists(path)
    if exists:
        guest.spawn(opener_command(path), shell=False)
        needle = os.path.basename(path)
    elif path and _on_path(path):
        guest.spawn([path], shell=False)
        needle = os.path.basename(path)
    else:
        raise RequestError(404, f"File not found: {path}")
    window = guest.wait_for_window(needle, timeout)
    if window is None:
        raise RequestError(500, f"No window titled like {needle!r} appeared within {timeout:g} s.")
    return Response(f"File opened successfully: {path}", headers={"X-Window-Id": str(window["window_id"])})


# xdg-open spends ~1 s on MIME sniffing without a desktop environment; the
# document types OSWorld tasks open go straight to their app: a PDF to Ubuntu's
# default viewer, evince, as on OSWorld's image (xdg-open here would pick whatever
# claims PDFs, e.g. GIMP or Chromium).
OPENERS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        (".xlsx", ".xls", ".ods", ".csv", ".docx", ".doc", ".odt", ".rtf", ".pptx", ".ppt", ".odp"),
        ("soffice",),
    ),
    **dict.fromkeys((".txt", ".md", ".py", ".json", ".sh", ".log", ".ini", ".yaml", ".yml"), ("mousepad",)),
    **dict.fromkeys((".mp4", ".mkv", ".avi", ".mp3", ".wav", ".ogg", ".flac", ".webm"), ("vlc",)),
    **dict.fromkeys((".png", ".jpg", ".jpeg", ".gif", ".bmp", ".xcf"), ("gimp",)),
    **dict.fromkeys((".html", ".htm"), ("chromium",)),
    ".pdf": ("evince",),
}


def opener_command(path: str) -> list[str]:
    """The command that opens ``path`` with the app OSWorld expects for its type."""
    opener = OPENERS.get(os.path.splitext(path)[1].lower())
    if opener and _on_path(opener[0]):
        return [*opener, path]
    return ["xdg-open", path]


def _on_path(name: str) -> bool:
    return any(os.access(os.path.join(d, name), os.X_OK) for d in os.environ.get("PATH", "").split(":") if d)


def _window_request(guest: Guest, request: Request):
    payload = request.json()
    name = payload.get("window_name")
    if not isinstance(name, str) or not name:
        raise RequestError(400, "'window_name' must be a non-empty string.")
    window = guest.windows.find(
        name, strict=bool(payload.get("strict")), by_class=bool(payload.get("by_class"))
    )
    if window is None:
        raise RequestError(404, f"No window matches {name!r}.")
    return window


@route("/setup/activate_window", "POST")
def activate_window(guest: Guest, request: Request) -> Response:
    """OSWorld: raises and focuses the first matching window."""
    window = _window_request(guest, request)
    guest.windows.activate(window.window_id)
    return Response("Window activated successfully")


@route("/setup/close_window", "POST")
def close_window(guest: Guest, request: Request) -> Response:
    """OSWorld: closes the first matching window politely."""
    window = _window_request(guest, request)
    guest.windows.close(window.window_id)
    return Response("Window closed successfully")


@route("/screenshot", "GET")
def screenshot(guest: Guest, request: Request) -> Response:
    """OSWorld: the screen as PNG."""
    return Response(guest.screen.png(), content_type="image/png")


@route("/screen_size", "GET")
@route("/screen_size", "POST")
def screen_size(guest: Guest, request: Request) -> Response:
    """OSWorld: ``{"width", "height"}``."""
    width, height = guest.screen.size
    return Response({"width": width, "height": height})


@route("/window_size", "POST")
def window_size(guest: Guest, request: Request) -> Response:
    """OSWorld: the size of the first window whose WM_CLASS matches ``app_class_name``."""
    name = request.form().get("app_class_name", "")
    window = guest.windows.find(name, by_class=True) if name else None
    if window is None:
        raise RequestError(404, f"No window of class {name!r}.")
    return Response({"width": window.width, "height": window.height})


@route("/cursor_position", "GET")
def cursor_position(guest: Guest, request: Request) -> Response:
    """OSWorld: ``[x, y]``."""
    return Response(list(guest.input.cursor_position()))


@route("/desktop_path", "GET")
@route("/desktop_path", "POST")
def desktop_path(guest: Guest, request: Request) -> Response:
    """OSWorld: ``{"desktop_path": ...}``."""
    path = guest.home / "Desktop"
    if not path.is_dir():
        raise RequestError(404, "Desktop path not found")
    return Response({"desktop_path": str(path)})


@route("/list_directory", "POST")
def list_directory(guest: Guest, request: Request) -> Response:
    """OSWorld: ``{"directory_tree": {type, name, children}}`` (bounded), as the desktop user sees it."""
    path = Path(_user_path(guest, str(request.json().get("path", ""))))
    budget = [10_000]

    def tree(p: Path) -> dict[str, Any]:
        budget[0] -= 1
        if p.is_dir() and not p.is_symlink():
            children = [tree(c) for c in sorted(p.iterdir()) if budget[0] > 0]
            return {"type": "directory", "name": p.name, "children": children}
        return {"type": "file", "name": p.name}

    with as_user(guest.user.config.uid):
        if not path.is_dir():
            raise RequestError(404, f"Directory not found: {path}")
        return Response({"directory_tree": tree(path)})


@route("/file", "POST")
def get_file(guest: Guest, request: Request) -> Response:
    """OSWorld: the bytes of ``file_path``; 404 ``{"error": "File not found"}``.

    The file is opened with the desktop user's credentials (a planted symlink gets
    the user's rights, not the server's) and refused (413) above the size cap.
    """
    path = _user_path(guest, request.form().get("file_path", ""))
    config = guest.user.config
    data = read_user_file(path, config.uid, config.max_file_bytes) if path else None
    if data is None:
        return Response({"error": "File not found"}, status=404)
    return Response(data, content_type="application/octet-stream")


@route("/setup/upload", "POST")
def upload(guest: Guest, request: Request) -> Response:
    """OSWorld: writes ``file_data`` to ``file_path`` (parents created), atomically, as the desktop user."""
    fields = request.multipart()
    target = _user_path(guest, fields.get("file_path", b"").decode())
    if not target or "file_data" not in fields:
        raise RequestError(400, "Expected the fields 'file_path' and 'file_data'.")
    data = fields["file_data"]
    directory = os.path.dirname(os.path.abspath(target))
    with as_user(guest.user.config.uid):
        try:
            os.makedirs(directory, exist_ok=True)
            # Write beside the target and rename, so a reader never sees half a file.
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=".upload-")
        except OSError as exc:
            raise RequestError(403, f"Cannot write {target} as the desktop user: {exc.strerror}.") from exc
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, target)
        except BaseException:
            os.unlink(tmp)
            raise
    return Response(f"File Uploaded: {len(data)} bytes")


def _user_path(guest: Guest, path: str) -> str:
    """``~`` means the desktop user's home (the server's own home is elsewhere)."""
    if path == "~" or path.startswith("~/"):
        return str(guest.home) + path[1:]
    return path


def _a11y(guest: Guest, args: list[str], timeout: float) -> subprocess.CompletedProcess:
    """Runs the AT-SPI dump as the desktop user: the accessibility bus is the user's."""
    return subprocess.run(
        [sys.executable, "-m", "osworld_mcp_env.guest.a11y", *args],
        **guest.user.popen_kwargs(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@route("/accessibility", "GET")
def accessibility(guest: Guest, request: Request) -> Response:
    """OSWorld: ``{"AT": xml}``, computed in a child process (see ``guest.a11y``)."""
    max_nodes = int(request.query.get("max_nodes", 5000))
    try:
        done = _a11y(guest, ["--max-nodes", str(max_nodes)], A11Y_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise RequestError(504, f"The accessibility tree took longer than {A11Y_TIMEOUT_S:g} s.") from exc
    if done.returncode != 0:
        raise RequestError(500, f"Accessibility dump failed ({done.returncode}): {done.stderr[-500:]}")
    return Response({"AT": done.stdout})


@route("/terminal", "GET")
def terminal(guest: Guest, request: Request) -> Response:
    """OSWorld: the text of the terminal on screen, or null."""
    try:
        done = _a11y(guest, ["--terminal"], A11Y_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Response({"output": None, "status": "error"})
    return Response({"output": done.stdout if done.returncode == 0 else None, "status": "success"})

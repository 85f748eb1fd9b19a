"""The guest control server: OSWorld's in-VM HTTP API plus raw frames and GUI input.

Same request and response shapes as OSWorld's ``desktop_env/server/main.py`` for
the endpoints both have, so one client drives official OSWorld VM images and
this project's desktops. Additions are new paths, never changes to old ones:
``GET /frame`` (raw BGRA with a frame id and layout hash), ``POST /gui`` (one
``computer_use`` action executed through XTest, then a settle wait),
``GET /windows`` and ``GET /health``.

Serves HTTP/1.1 with keep-alive on a Unix socket (the sandbox) or TCP (a VM).
With ``OSWORLD_GUEST_TOKEN`` set, every request must carry ``Authorization:
Bearer <token>``.
"""

from __future__ import annotations

import argparse
import contextlib
import email.parser
import email.policy
import json
import os
import platform
import shlex
import shutil
import signal
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

from osworld_mcp_env.guest.screen import Screen, SettleConfig
from osworld_mcp_env.guest.windows import WindowManager
from osworld_mcp_env.guest.xdisplay import XConnection
from osworld_mcp_env.guest.xinput import InputDevice, UnknownKey

MAX_BODY_BYTES = 512 * 1024 * 1024
EXECUTE_TIMEOUT_S = 120.0
A11Y_TIMEOUT_S = 20.0
INPUT_ACTIONS = {
    "key", "type", "mouse_move", "left_click", "right_click", "middle_click", "double_click",
    "triple_click", "left_click_drag", "scroll", "hscroll",
}  # fmt: skip


@dataclass
class Response:
    """What a route returns: a status, a body and extra headers."""

    body: bytes | memoryview | dict | list | str
    status: int = 200
    content_type: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


class RequestError(Exception):
    """A client error; becomes ``{"status": "error", "message": ...}`` with its HTTP status."""

    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.extra = extra


@dataclass
class Request:
    """A parsed request."""

    method: str
    path: str
    query: dict[str, str]
    headers: Any
    body: bytes

    def json(self) -> dict[str, Any]:
        """The body as a JSON object (empty body: ``{}``)."""
        if not self.body:
            return {}
        try:
            value = json.loads(self.body)
        except json.JSONDecodeError as exc:
            raise RequestError(400, f"Body is not JSON: {exc.msg}.") from exc
        if not isinstance(value, dict):
            raise RequestError(400, "Body must be a JSON object.")
        return value

    def form(self) -> dict[str, str]:
        """The body as a url-encoded form (OSWorld's ``/file`` and ``/window_size``), or JSON."""
        if "json" in (self.headers.get("Content-Type") or ""):
            return {k: str(v) for k, v in self.json().items()}
        pairs = urllib.parse.parse_qs(self.body.decode("utf-8", "replace"), keep_blank_values=True)
        return {k: v[0] for k, v in pairs.items()}

    def multipart(self) -> dict[str, bytes]:
        """The body as ``multipart/form-data``: field name -> bytes."""
        content_type = self.headers.get("Content-Type") or ""
        if "multipart/form-data" not in content_type:
            raise RequestError(400, f"Expected multipart/form-data, got {content_type!r}.")
        head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + self.body)
        fields = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if name:
                fields[name] = part.get_payload(decode=True) or b""
        return fields


class Guest:
    """The state behind the routes: the display, input, windows and launched processes."""

    def __init__(self, settle: SettleConfig | None = None) -> None:
        self.xconn = XConnection()
        self.screen = Screen()
        self.input = InputDevice(self.xconn)
        self.windows = WindowManager(self.xconn)
        self.settle = settle or SettleConfig()
        self.home = Path.home()
        self._children: list[subprocess.Popen] = []
        self._children_lock = threading.Lock()
        self._gui_lock = threading.Lock()
        self._core: set[int] | None = None

    # --- processes -----------------------------------------------------------
    def spawn(self, command: list[str] | str, shell: bool) -> subprocess.Popen:
        """Starts a process detached from the request, reaping finished ones."""
        args = _command_args(command, shell)
        process = subprocess.Popen(
            args,
            shell=shell,
            cwd=self.home,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        with self._children_lock:
            self._children = [c for c in self._children if c.poll() is None]
            self._children.append(process)
        return process

    def core_pids(self) -> set[int]:
        """PID 1, the session script and what it started: X, D-Bus, the WM and the servers."""
        session = os.getppid()
        core = {1, session, os.getpid()}
        for pid in _pids():
            if _parent(pid) == session:
                core.add(pid)
        return core

    def kill_apps(self, timeout: float) -> int:
        """SIGKILLs every process that is not :meth:`core_pids`; returns how many."""
        if self._core is None:
            self._core = self.core_pids()  # fixed at the first reset: apps are never session children
        victims = [pid for pid in _pids() if pid not in self._core]
        for pid in victims:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + timeout
        while any(_alive(pid) for pid in victims) and time.monotonic() < deadline:
            time.sleep(0.005)
        with self._children_lock:
            for child in self._children:
                with contextlib.suppress(ChildProcessError):
                    child.poll()
            self._children = []
        return len(victims)

    def wait_for_window(self, needle: str, timeout: float) -> dict[str, Any] | None:
        """Polls the window list until a title contains ``needle``; activates it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            window = self.windows.find(needle)
            if window is not None:
                self.windows.activate(window.window_id)
                return window.to_dict()
            time.sleep(0.03)
        return None


def _pids() -> list[int]:
    return [int(e) for e in os.listdir("/proc") if e.isdigit()]


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _command_args(command: list[str] | str, shell: bool) -> list[str] | str:
    if isinstance(command, list):
        if not all(isinstance(c, str) for c in command):
            raise RequestError(400, "'command' must be a string or a list of strings.")
        args = [os.path.expanduser(c) if c.startswith("~/") else c for c in command]
        return " ".join(shlex.quote(a) for a in args) if shell else args
    if not isinstance(command, str) or not command:
        raise RequestError(400, "'command' must be a non-empty string or a list of strings.")
    if shell:
        return command
    return [os.path.expanduser(c) if c.startswith("~/") else c for c in shlex.split(command)]


Route = Callable[[Guest, Request], Response]
ROUTES: dict[tuple[str, str], Route] = {}


def route(path: str, *methods: str) -> Callable[[Route], Route]:
    """Registers a handler for a path and HTTP methods."""

    def decorate(fn: Route) -> Route:
        for method in methods:
            key = (method, path)
            if key in ROUTES:
                raise ValueError(f"Route {method} {path} registered twice")
            ROUTES[key] = fn
        return fn

    return decorate


# --- OSWorld contract --------------------------------------------------------------------------
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
    """OSWorld: runs a command to completion; ``{status, output, error, returncode}``."""
    payload = request.json()
    shell = bool(payload.get("shell", False))
    args = _command_args(payload.get("command", ""), shell)
    timeout = float(payload.get("timeout", EXECUTE_TIMEOUT_S))
    try:
        done = subprocess.run(
            args, shell=shell, cwd=guest.home, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as exc:
        return Response(
            {
                "status": "error",
                "message": f"Command timed out after {timeout:g} s.",
                "output": _text(exc.stdout),
                "error": _text(exc.stderr),
                "returncode": -1,
            }
        )
    except OSError as exc:
        return Response(
            {"status": "error", "message": str(exc), "output": "", "error": str(exc), "returncode": -1}
        )
    return Response(
        {"status": "success", "output": done.stdout, "error": done.stderr, "returncode": done.returncode}
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
    path = os.path.expanduser(str(payload.get("path", "")))
    timeout = float(payload.get("timeout", 60.0))
    if os.path.exists(path):
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
# document types OSWorld tasks open go straight to their app.
OPENERS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        (".xlsx", ".xls", ".ods", ".csv", ".docx", ".doc", ".odt", ".rtf", ".pptx", ".ppt", ".odp"),
        ("soffice",),
    ),
    **dict.fromkeys((".txt", ".md", ".py", ".json", ".sh", ".log", ".ini", ".yaml", ".yml"), ("mousepad",)),
    **dict.fromkeys((".mp4", ".mkv", ".avi", ".mp3", ".wav", ".ogg", ".flac", ".webm"), ("vlc",)),
    **dict.fromkeys((".png", ".jpg", ".jpeg", ".gif", ".bmp", ".xcf"), ("gimp",)),
    **dict.fromkeys((".html", ".htm"), ("chromium",)),
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
    """OSWorld: ``{"directory_tree": {type, name, children}}`` (bounded)."""
    path = Path(os.path.expanduser(str(request.json().get("path", ""))))
    if not path.is_dir():
        raise RequestError(404, f"Directory not found: {path}")
    budget = [10_000]

    def tree(p: Path) -> dict[str, Any]:
        budget[0] -= 1
        if p.is_dir() and not p.is_symlink():
            children = [tree(c) for c in sorted(p.iterdir()) if budget[0] > 0]
            return {"type": "directory", "name": p.name, "children": children}
        return {"type": "file", "name": p.name}

    return Response({"directory_tree": tree(path)})


@route("/file", "POST")
def get_file(guest: Guest, request: Request) -> Response:
    """OSWorld: the bytes of ``file_path``; 404 ``{"error": "File not found"}``."""
    path = os.path.expanduser(request.form().get("file_path", ""))
    if not path or not os.path.isfile(path):
        return Response({"error": "File not found"}, status=404)
    with open(path, "rb") as f:
        return Response(f.read(), content_type="application/octet-stream")


@route("/setup/upload", "POST")
def upload(guest: Guest, request: Request) -> Response:
    """OSWorld: writes ``file_data`` to ``file_path`` (parents created), atomically."""
    fields = request.multipart()
    target = os.path.expanduser(fields.get("file_path", b"").decode())
    if not target or "file_data" not in fields:
        raise RequestError(400, "Expected the fields 'file_path' and 'file_data'.")
    data = fields["file_data"]
    directory = os.path.dirname(os.path.abspath(target))
    os.makedirs(directory, exist_ok=True)
    # Write beside the target and rename, so a reader never sees half a file.
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".upload-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise
    return Response(f"File Uploaded: {len(data)} bytes")


def _a11y(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "osworld_mcp_env.guest.a11y", *args],
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
        done = _a11y(["--max-nodes", str(max_nodes)], A11Y_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise RequestError(504, f"The accessibility tree took longer than {A11Y_TIMEOUT_S:g} s.") from exc
    if done.returncode != 0:
        raise RequestError(500, f"Accessibility dump failed ({done.returncode}): {done.stderr[-500:]}")
    return Response({"AT": done.stdout})


@route("/terminal", "GET")
def terminal(guest: Guest, request: Request) -> Response:
    """OSWorld: the text of the terminal on screen, or null."""
    try:
        done = _a11y(["--terminal"], A11Y_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Response({"output": None, "status": "error"})
    return Response({"output": done.stdout if done.returncode == 0 else None, "status": "success"})


# --- additions for the hybrid env -------------------------------------------------------------
@route("/frame", "GET")
def frame(guest: Guest, request: Request) -> Response:
    """A raw BGRA capture: no PNG cost; id and size (and layout hash with ``?layout=1``) in headers."""
    shot = guest.screen.grab()
    headers = {"X-Frame-Id": str(shot.frame_id), "X-Width": str(shot.width), "X-Height": str(shot.height)}
    if request.query.get("layout") == "1":
        headers["X-Layout-Hash"] = guest.windows.layout_hash()
    # The focused window rides along: one round trip per observation instead of two.
    active = guest.windows.active()
    headers["X-Active-Window"] = json.dumps(active.to_dict() if active else None, ensure_ascii=True)
    return Response(shot.bgra, content_type="application/octet-stream", headers=headers)


@route("/windows", "GET")
def windows(guest: Guest, request: Request) -> Response:
    """Managed windows (bottom to top), the active one and the layout hash."""
    active = guest.windows.active()
    return Response(
        {
            "windows": [w.to_dict() for w in guest.windows.list()],
            "active": active.to_dict() if active else None,
            "layout_hash": guest.windows.layout_hash(),
        }
    )


@route("/active_window", "GET")
def active_window(guest: Guest, request: Request) -> Response:
    """The focused window only."""
    active = guest.windows.active()
    return Response({"active": active.to_dict() if active else None})


@route("/gui", "POST")
def gui(guest: Guest, request: Request) -> Response:
    """Executes one ``computer_use`` action, then waits for the screen to settle.

    Body: ``{"action", "arguments", "settle": true, "expected_layout": hash?}``. With
    ``expected_layout`` the action is refused before any input (409,
    ``stale_gui_frame``) when the window layout changed since that hash.
    """
    payload = request.json()
    action = payload.get("action")
    arguments = payload.get("arguments") or {}
    if action not in INPUT_ACTIONS:
        raise RequestError(400, f"{action!r} is not an input action; known: {sorted(INPUT_ACTIONS)}.")
    with guest._gui_lock:  # one input sequence at a time: interleaved keystrokes garble both
        expected = payload.get("expected_layout")
        if expected:
            current = guest.windows.layout_hash()
            if current != expected:
                raise RequestError(
                    409,
                    "The window layout changed since the cited frame; no input was sent.",
                    code="stale_gui_frame",
                    input_events_emitted=False,
                    layout_hash=current,
                )
        baseline = guest.screen.signature() if payload.get("settle", True) else None
        try:
            guest.input.execute(action, arguments)
        except (UnknownKey, KeyError, TypeError, ValueError) as exc:
            raise RequestError(400, str(exc), code="invalid_arguments", input_events_emitted=False) from exc
        settle_ms = guest.screen.wait_until_settled(guest.settle, baseline) if baseline is not None else 0.0
    return Response({"input_events_emitted": True, "settle_ms": settle_ms})


@route("/session/reset", "POST")
def reset_session(guest: Guest, request: Request) -> Response:
    """Kills every app of the session and empties ``/tmp``, keeping X, D-Bus, the WM and the servers.

    The host then restores the home directory. This is the fast reset path: the
    display and session bus survive, so the next app starts ~0.4 s sooner than
    after a full sandbox restart. Only valid inside a private PID namespace.
    """
    if os.getpid() == 1 or not os.path.exists("/proc/1/comm"):
        raise RequestError(400, "No PID namespace to reset.")
    killed = guest.kill_apps(timeout=float(request.json().get("timeout", 5.0)))
    for entry in os.scandir("/tmp"):
        if entry.name in (".X11-unix", ".ICE-unix"):
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
    return Response({"status": "success", "killed": killed})


@route("/settle", "POST")
def settle(guest: Guest, request: Request) -> Response:
    """Waits until the screen stops changing (after a ``wait`` or a tool call)."""
    payload = request.json()
    config = SettleConfig(
        first_change_ms=float(payload.get("first_change_ms", guest.settle.first_change_ms)),
        quiet_ms=float(payload.get("quiet_ms", guest.settle.quiet_ms)),
        max_ms=float(payload.get("max_ms", guest.settle.max_ms)),
    )
    return Response({"settle_ms": guest.screen.wait_until_settled(config)})


# --- HTTP plumbing ------------------------------------------------------------------------------
class Handler(BaseHTTPRequestHandler):
    """Dispatches to :data:`ROUTES`; never lets an exception kill the connection silently."""

    protocol_version = "HTTP/1.1"
    server: GuestHTTPServer

    def do_GET(self) -> None:  # noqa: D102 - the stdlib's naming
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: D102
        self._dispatch("POST")

    def log_message(self, format: str, *args: Any) -> None:
        """Silences per-request logs (the Unix client address is empty anyway)."""

    def _dispatch(self, method: str) -> None:
        parsed = urllib.parse.urlsplit(self.path)
        try:
            self._check_token()
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                raise RequestError(413, f"Body of {length} bytes exceeds {MAX_BODY_BYTES}.")
            body = self.rfile.read(length) if length else b""
            handler = ROUTES.get((method, parsed.path))
            if handler is None:
                raise RequestError(404, f"No route {method} {parsed.path}.")
            query = dict(urllib.parse.parse_qsl(parsed.query))
            response = handler(self.server.guest, Request(method, parsed.path, query, self.headers, body))
        except RequestError as exc:
            response = Response({"status": "error", "message": str(exc), **exc.extra}, status=exc.status)
        except Exception as exc:
            response = Response({"status": "error", "message": f"{type(exc).__name__}: {exc}"}, status=500)
        self._send(response)

    def _check_token(self) -> None:
        token = self.server.token
        if token and self.headers.get("Authorization") != f"Bearer {token}":
            raise RequestError(401, "Missing or wrong bearer token.")

    def _send(self, response: Response) -> None:
        body, content_type = response.body, response.content_type
        if isinstance(body, dict | list):
            body, content_type = json.dumps(body).encode(), content_type or "application/json"
        elif isinstance(body, str):
            body, content_type = body.encode(), content_type or "text/plain; charset=utf-8"
        self.send_response(response.status)
        self.send_header("Content-Type", content_type or "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        for key, value in response.headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)


class GuestHTTPServer(socketserver.ThreadingMixIn, HTTPServer):
    """Threaded HTTP server holding the :class:`Guest` state."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: Any, guest: Guest, token: str | None, family: int | None = None) -> None:
        if family is not None:
            self.address_family = family
        self.guest = guest
        self.token = token
        super().__init__(address, Handler)

    def server_bind(self) -> None:
        """Binds; for Unix sockets skips the TCP-only host name lookup."""
        if self.address_family == socketserver.socket.AF_UNIX:
            socketserver.TCPServer.server_bind(self)
            self.server_name, self.server_port = "guest", 0
        else:
            super().server_bind()


def serve(*, unix_socket: str | None, host: str, port: int, token: str | None) -> None:
    """Serves until killed."""
    guest = Guest()
    if unix_socket:
        # A stale socket from a killed server would make bind fail.
        if os.path.exists(unix_socket):
            os.unlink(unix_socket)
        server = GuestHTTPServer(unix_socket, guest, token, family=socketserver.socket.AF_UNIX)
        os.chmod(unix_socket, 0o600)
    else:
        server = GuestHTTPServer((host, port), guest, token)
    server.serve_forever(poll_interval=0.5)


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: ``python -m osworld_mcp_env.guest.server --unix PATH`` or ``--port N``."""
    parser = argparse.ArgumentParser(description="OSWorld-compatible guest control server.")
    parser.add_argument("--unix", help="Unix socket path to listen on")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5000)
    args = parser.parse_args(argv)
    serve(unix_socket=args.unix, host=args.host, port=args.port, token=os.environ.get("OSWORLD_GUEST_TOKEN"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Host-side client of the guest control server (``osworld_mcp_env.guest.server``).

One client for both places the guest runs: a Unix socket in the sandbox's
control directory (local backend) or TCP on a forwarded port (a VM). Requests
use one keep-alive connection; every request has a deadline (its own timeout,
clamped to the caller's :func:`~osworld_mcp_env.deadline.deadline` scope), so a
hung desktop becomes an error, not a hung env. Failures are typed and nothing
else escapes: :class:`~osworld_mcp_env.errors.GuestTimeout` (no answer in time),
:class:`~osworld_mcp_env.errors.GuestUnreachable` (no connection),
:class:`~osworld_mcp_env.errors.StaleFrameError` and
:class:`~osworld_mcp_env.errors.InputRejected` (a GUI action refused before any
input) and :class:`~osworld_mcp_env.errors.GuestRequestError` (any other HTTP
error or an unreadable reply). HTTP statuses stop here: the env maps the error
types to error codes.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any, NamedTuple
from urllib.parse import quote

import numpy as np

from osworld_mcp_env.backends.base import ExecResult, GuiResult, ScreenCapture, WindowInfo
from osworld_mcp_env.deadline import budget as deadline_budget
from osworld_mcp_env.errors import (
    GuestRequestError,
    GuestTimeout,
    GuestUnreachable,
    InputRejected,
    StaleFrameError,
)
from osworld_mcp_env.guest.frame_delta import apply_runs, parse_runs
from osworld_mcp_env.guest.layout import LayoutSample

# The guest stops long work (typing, settling) this long before the caller's deadline,
# so that its answer, not the socket timeout, ends the request.
GUEST_REPLY_MARGIN_S = 0.3
# What the guest's refusals of ``POST /gui`` mean: both come before any input event.
GUI_REFUSALS: Mapping[int, type[GuestRequestError]] = {409: StaleFrameError, 400: InputRejected}


class Focus(NamedTuple):
    """The focused window as one reply saw it, with the screen's change count at that instant."""

    active: WindowInfo | None
    layout_hash: str
    """The window layout's fingerprint; empty unless asked for."""
    changes: int | None
    """The X server's count of screen changes (``guest.damage``); None: unknown."""


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self._path)
        except BaseException:
            sock.close()  # a guest not yet listening must not leak a socket per attempt
            raise
        self.sock = sock


class GuestClient:
    """Speaks the guest HTTP contract; implements most of the ``Desktop`` protocol.

    Args:
        unix_socket: Path of the guest's Unix socket, or None for TCP.
        host: TCP host when ``unix_socket`` is None.
        port: TCP port when ``unix_socket`` is None.
        token: Bearer token the guest expects, if any.
        timeout: Default per-request deadline in seconds.
        settle_horizon_ms: The settle wait's timer horizon for every GUI action, whatever
            app has the focus (None: the guest's per-app table, ``guest.settle.APP_TIMER_HORIZON_MS``,
            and 400 ms for the other apps).
        app_settle_horizons_ms: Horizons of single apps (``apps`` keys, such as
            ``libreoffice_calc``) over ``settle_horizon_ms`` and the guest's table.
    """

    def __init__(
        self,
        *,
        unix_socket: str | None = None,
        host: str = "127.0.0.1",
        port: int = 5000,
        token: str | None = None,
        timeout: float = 60.0,
        settle_horizon_ms: float | None = None,
        app_settle_horizons_ms: Mapping[str, float] | None = None,
    ) -> None:
        self._unix_socket = unix_socket
        self._host, self._port = host, port
        self._token = token
        self.timeout = timeout
        self.settle_horizon_ms = settle_horizon_ms
        self.app_settle_horizons_ms = dict(app_settle_horizons_ms or {})
        self._local = threading.local()
        self._screen_size: tuple[int, int] | None = None
        # The last frame received, patched by the guest's changed rows (``guest.frame_delta``),
        # and its RGB conversion, converted again only where rows changed.
        self._frame_lock = threading.Lock()
        self._frame_id = ""
        self._frame = bytearray()
        self._rgb: np.ndarray | None = None

    # --- transport -----------------------------------------------------------
    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self._unix_socket:
                conn = _UnixHTTPConnection(self._unix_socket, timeout)
            else:
                conn = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
            self._local.conn = conn
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        return conn

    def _drop_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
        self._local.conn = None

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        body: bytes | None = None,
        content_type: str | None = None,
        timeout: float | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        """Sends one request; returns (status, headers, body). Retries once on a dropped keep-alive.

        Raises:
            GuestTimeout: No answer within ``timeout`` (default: the client's), or
                the caller's deadline scope had no time left (nothing is sent then).
            GuestUnreachable: The connection could not be made or broke.
        """
        headers = {}
        if json_body is not None:
            body, content_type = json.dumps(json_body).encode(), "application/json"
        if content_type:
            headers["Content-Type"] = content_type
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        budget = deadline_budget(self.timeout if timeout is None else timeout)
        if budget <= 0:
            raise GuestTimeout(path, None, "the step's deadline had passed; nothing was sent")
        for attempt in (0, 1):
            conn = self._connection(budget)
            try:
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
                return response.status, {k.lower(): v for k, v in response.getheaders()}, data
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                # A keep-alive connection the guest closed while idle: the request never
                # reached a handler, so sending it again is safe. Twice means a dead guest.
                self._drop_connection()
                if attempt == 1:
                    raise GuestUnreachable(path, None, f"connection lost: {exc!r}") from exc
            except TimeoutError as exc:
                self._drop_connection()
                raise GuestTimeout(path, None, f"no answer within {budget:.3g} s") from exc
            except (OSError, http.client.HTTPException) as exc:
                # Missing socket, refused, reset mid-answer, a truncated reply.
                self._drop_connection()
                raise GuestUnreachable(path, None, f"{type(exc).__name__}: {exc}") from exc
        raise AssertionError("unreachable")

    def _json(self, method: str, path: str, payload: Any = None, *, timeout: float | None = None) -> Any:
        status, _, data = self.request(method, path, json_body=payload, timeout=timeout)
        if status != 200:
            raise _status_error(path, status, data)
        return _decode(path, data) if data else None

    def _ok(self, path: str, payload: Any, *, timeout: float | None = None) -> None:
        status, _, data = self.request("POST", path, json_body=payload, timeout=timeout)
        if status != 200:
            raise _status_error(path, status, data)

    # --- Desktop protocol ----------------------------------------------------
    def health(self, *, timeout: float = 2.0) -> bool:
        """True when the guest answers ``/health``."""
        try:
            reply = self._json("GET", "/health", timeout=timeout)
        except GuestRequestError:
            return False
        return isinstance(reply, dict) and reply.get("status") == "ok"

    @property
    def screen_size(self) -> tuple[int, int]:
        """(width, height), asked once."""
        if self._screen_size is None:
            size = self._json("GET", "/screen_size")
            with _reading("/screen_size"):
                self._screen_size = (int(size["width"]), int(size["height"]))
        return self._screen_size

    def execute(self, command: list[str] | str, *, shell: bool = False, timeout: float = 120.0) -> ExecResult:
        """``POST /execute``: the guest kills the command after ``timeout`` (capped by the deadline)."""
        # The guest must give up on the command before this request gives up on the guest.
        timeout = min(timeout, deadline_budget(timeout + GUEST_REPLY_MARGIN_S) - GUEST_REPLY_MARGIN_S)
        if timeout <= 0:
            raise GuestTimeout("/execute", None, "the step's deadline had passed; nothing was run")
        payload = {"command": command, "shell": shell, "timeout": timeout}
        result = self._json("POST", "/execute", payload, timeout=timeout + 10)
        with _reading("/execute"):
            return ExecResult(
                status=str(result.get("status", "error")),
                output=str(result.get("output", "")),
                error=str(result.get("error", result.get("message", ""))),
                returncode=int(result.get("returncode", -1)),
                timed_out=result.get("timed_out") is True,
            )

    def launch(self, command: list[str] | str, *, shell: bool = False) -> None:
        """``POST /setup/launch``."""
        self._ok("/setup/launch", {"command": command, "shell": shell})

    def open_file(self, path: str, *, timeout: float = 30.0) -> None:
        """``POST /setup/open_file``: returns once the file's window shows."""
        self._ok("/setup/open_file", {"path": path, "timeout": timeout}, timeout=timeout + 10)

    def activate_window(self, window_name: str, *, strict: bool = False, by_class: bool = False) -> None:
        """``POST /setup/activate_window``."""
        self._ok(
            "/setup/activate_window", {"window_name": window_name, "strict": strict, "by_class": by_class}
        )

    def close_window(self, window_name: str, *, strict: bool = False, by_class: bool = False) -> None:
        """``POST /setup/close_window``."""
        self._ok("/setup/close_window", {"window_name": window_name, "strict": strict, "by_class": by_class})

    def upload_file(self, path: str, data: bytes) -> None:
        """``POST /setup/upload`` as multipart, OSWorld's shape."""
        boundary = uuid.uuid4().hex
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file_path"\r\n\r\n{path}\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="file_data"; filename="upload"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        body = head + data + f"\r\n--{boundary}--\r\n".encode()
        status, _, reply = self.request(
            "POST", "/setup/upload", body=body, content_type=f"multipart/form-data; boundary={boundary}"
        )
        if status != 200:
            raise _status_error("/setup/upload", status, reply)

    def read_file(self, path: str) -> bytes | None:
        """``POST /file``; None when the file does not exist."""
        form = "file_path=" + quote(path, safe="")
        status, _, data = self.request(
            "POST", "/file", body=form.encode(), content_type="application/x-www-form-urlencoded"
        )
        if status == 404:
            return None
        if status != 200:
            raise _status_error("/file", status, data)
        return data

    def screenshot(self, *, with_layout: bool = False, timeout: float | None = None) -> ScreenCapture:
        """``GET /frame``: raw BGRA converted to an RGB array (with the layout hash if asked).

        The request names the last frame received, so the guest sends only the rows
        that changed since (a VM's frames cross a slow network); the reply patches it.
        """
        with self._frame_lock:
            path = f"/frame?since={quote(self._frame_id)}" + ("&layout=1" if with_layout else "")
            status, headers, data = self.request("GET", path, timeout=timeout)
            if status != 200:
                raise _status_error("/frame", status, data)
            return self._frame_capture("/frame", headers, data)

    def _frame_capture(self, endpoint: str, headers: Mapping[str, str], data: bytes) -> ScreenCapture:
        """The screen of a ``/frame`` reply (or a ``/gui`` reply that carries one); hold the frame lock."""
        with _reading(endpoint):
            width, height = int(headers["x-width"]), int(headers["x-height"])
            return ScreenCapture(
                pixels=self._patched_pixels(headers, data, width, height),
                layout_hash=headers.get("x-layout-hash", ""),
                active_window=_window(headers.get("x-active-window")),
            )

    def _patched_pixels(self, headers: Mapping[str, str], data: bytes, width: int, height: int) -> np.ndarray:
        """The RGB frame of a ``/frame`` reply: the body, or the last frame patched by it (a new array).

        Only the changed rows are converted again (a whole 1920x1080 frame costs ~3 ms,
        an unchanged one a ~0.5 ms copy).
        """
        base = headers.get("x-frame-base")
        if base is None:
            rgb = bgra_to_rgb(data, width, height)
            self._frame_id = headers.get("x-frame-id", "")
            self._frame, self._rgb = (bytearray(data), rgb.copy()) if self._frame_id else (bytearray(), None)
            return rgb
        if base != self._frame_id or self._rgb is None or self._rgb.shape != (height, width, 3):
            raise ValueError(f"a change against frame {base!r}, but the client holds {self._frame_id!r}")
        self._frame_id = ""  # a patch that fails half-way leaves no base to patch again
        runs = parse_runs(headers.get("x-frame-rows", ""))
        row_bytes = width * 4
        apply_runs(self._frame, runs, data, row_bytes)
        for run in runs:
            rows = memoryview(self._frame)[run.top * row_bytes : run.bottom * row_bytes]
            self._rgb[run.top : run.bottom] = bgra_to_rgb(rows, width, run.bottom - run.top)
        self._frame_id = headers["x-frame-id"]
        return self._rgb.copy()

    def png_screenshot(self) -> bytes:
        """``GET /screenshot`` (OSWorld's PNG)."""
        status, _, data = self.request("GET", "/screenshot")
        if status != 200:
            raise _status_error("/screenshot", status, data)
        return data

    def windows(self) -> list[WindowInfo]:
        """``GET /windows``."""
        state = self._json("GET", "/windows")
        with _reading("/windows"):
            return [WindowInfo(**w) for w in state["windows"]]

    def layout(self) -> LayoutSample:
        """``GET /windows``' layout sample: what the stale-frame guard compares a cited frame with."""
        state = self._json("GET", "/windows")
        with _reading("/windows"):
            return LayoutSample.from_dict(state["layout"])

    def active_window(self) -> WindowInfo | None:
        """``GET /active_window``: the focused window only (cheaper than the whole list)."""
        state = self._json("GET", "/active_window")
        with _reading("/active_window"):
            return WindowInfo(**state["active"]) if state["active"] else None

    def focus(self, *, with_layout: bool = False) -> Focus:
        """The focused window (and the layout hash), with the screen's change count as the reply left.

        One request: ``GET /active_window``, or ``GET /windows`` for the layout hash.
        """
        path = "/windows" if with_layout else "/active_window"
        return _focus(path, self._json("GET", f"{path}?changes=1"), with_layout=with_layout)

    def accessibility_tree(self, *, max_nodes: int = 5000) -> str:
        """``GET /accessibility`` -> the XML."""
        state = self._json("GET", f"/accessibility?max_nodes={int(max_nodes)}", timeout=30.0)
        with _reading("/accessibility"):
            return str(state["AT"])

    def gui(
        self,
        action: dict[str, Any],
        *,
        expected_layout: str | None = None,
        timeout: float | None = None,
        capture: bool = False,
        with_layout: bool = False,
    ) -> GuiResult:
        """``POST /gui``: one input action plus the settle wait (with ``capture``, the frame in its reply).

        The guest gets the time left (``deadline_s``) and stops typing and settling
        at it; it also stops once this client hangs up. Either way no keystroke of
        this action lands after the call returns.

        Raises:
            StaleFrameError: ``expected_layout`` is stale (no input was sent).
            InputRejected: input the guest cannot produce, such as an unknown key name.
            GuestTimeout: the action did not finish in time (the guest says how far it got).
        """
        if not capture:
            return self._gui(action, expected_layout, timeout, {})[0]
        with self._frame_lock:
            observe = {"observe": "frame", "since": self._frame_id, "layout": with_layout}
            result, headers, data = self._gui(action, expected_layout, timeout, observe)
            if "x-gui-result" not in headers:  # the guest could not take the frame
                return result
            return replace(result, capture=self._frame_capture("/gui", headers, data))

    def gui_focus(
        self,
        action: dict[str, Any],
        *,
        expected_layout: str | None = None,
        timeout: float | None = None,
        with_layout: bool = False,
    ) -> tuple[GuiResult, Focus | None]:
        """:meth:`gui` with the focus after the wait, as :meth:`focus` gives it, from the same reply.

        For a host that reads the screen itself; None when the guest could not take it.
        """
        observe = {"observe": "focus", "layout": with_layout}
        result, _, data = self._gui(action, expected_layout, timeout, observe)
        with _reading("/gui"):
            focus = _decode("/gui", data).get("focus")
        return result, _focus("/gui", focus, with_layout=with_layout) if focus is not None else None

    def _gui(
        self,
        action: dict[str, Any],
        expected_layout: str | None,
        timeout: float | None,
        observe: dict[str, Any],
    ) -> tuple[GuiResult, Mapping[str, str], bytes]:
        budget = deadline_budget(self.timeout if timeout is None else timeout)
        payload = {
            "action": action["action"],
            "arguments": action.get("arguments", {}),
            "deadline_s": budget - GUEST_REPLY_MARGIN_S,
            **observe,
        }
        if expected_layout:
            payload["expected_layout"] = expected_layout
        if self.settle_horizon_ms is not None:
            payload["timer_horizon_ms"] = self.settle_horizon_ms
        if self.app_settle_horizons_ms:
            payload["app_timer_horizon_ms"] = self.app_settle_horizons_ms
        status, headers, data = self.request("POST", "/gui", json_body=payload, timeout=budget)
        if status != 200:
            raise _status_error("/gui", status, data, GUI_REFUSALS)
        carried = headers.get("x-gui-result")
        reply = _decode("/gui", carried.encode() if carried is not None else data)
        with _reading("/gui"):
            settle_ms = float(reply.get("settle_ms", 0.0))
            changes = reply.get("window_changes")
            details = {"window_changes": _window_changes(changes)} if changes is not None else {}
        return GuiResult(input_events_emitted=True, settle_ms=settle_ms, details=details), headers, data

    def reset_session(self, *, timeout: float | None = None) -> int:
        """``POST /session/reset``: kills the user's processes, keeps X/WM/servers; returns how many died."""
        reply = self._json("POST", "/session/reset", {}, timeout=timeout)
        with _reading("/session/reset"):
            return int(reply["killed"])

    def settle(self, **thresholds: float | None) -> float:
        """``POST /settle``: waits for the desktop to be still; a None threshold keeps the guest's default.

        The guest stops waiting at the caller's deadline (``deadline_s``).
        """
        given: dict[str, float] = {name: value for name, value in thresholds.items() if value is not None}
        given["deadline_s"] = deadline_budget(self.timeout) - GUEST_REPLY_MARGIN_S
        reply = self._json("POST", "/settle", given)
        with _reading("/settle"):
            return float(reply["settle_ms"])

    def close(self) -> None:
        """Closes this thread's connection and forgets the last frame."""
        self._drop_connection()
        with self._frame_lock:
            self._frame_id, self._frame, self._rgb = "", bytearray(), None


@contextlib.contextmanager
def _reading(endpoint: str) -> Iterator[None]:
    """Turns a reply of the wrong shape into a ``GuestRequestError`` (the guest is not trusted to be sane)."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise GuestRequestError(endpoint, 200, f"malformed reply: {type(exc).__name__}: {exc}") from exc


def _decode(endpoint: str, data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an over-long integer
        raise GuestRequestError(endpoint, 200, f"malformed reply: {exc}") from exc
    except RecursionError as exc:
        raise GuestRequestError(endpoint, 200, "malformed reply: nested too deep") from exc


def _status_error(
    endpoint: str, status: int, data: bytes, refusals: Mapping[int, type[GuestRequestError]] | None = None
) -> GuestRequestError:
    """The typed error of a non-200 answer.

    504 is the guest stopping at the deadline; ``refusals`` names what the
    endpoint's other statuses mean (:data:`GUI_REFUSALS`); any other is a plain
    :class:`GuestRequestError`.
    """
    error = (refusals or {}).get(status) or (GuestTimeout if status == 504 else GuestRequestError)
    try:
        reply = json.loads(data)
    except (ValueError, RecursionError):
        reply = None
    if not isinstance(reply, dict):
        reply = {}
    fields = {k: v for k, v in reply.items() if k not in ("status", "message")}
    return error(endpoint, status, _error_message(data), fields)


def _focus(endpoint: str, state: Any, *, with_layout: bool) -> Focus:
    """A :class:`Focus` from a reply's ``{"active", "layout_hash"?, "changes"}``."""
    with _reading(endpoint):
        changes = state.get("changes")
        return Focus(
            active=WindowInfo(**state["active"]) if state["active"] else None,
            layout_hash=str(state["layout_hash"]) if with_layout else "",
            changes=changes if isinstance(changes, int) and not isinstance(changes, bool) else None,
        )


# Bounds on a reply's window changes: the guest is not trusted to be sane.
MAX_WINDOW_CHANGES = 64
MAX_WINDOW_LINE = 300


def _window_changes(changes: Any) -> list[dict[str, str]]:
    """A ``/gui`` reply's ``window_changes``, checked and bounded (``ValueError`` on another shape)."""
    if not isinstance(changes, list):
        raise ValueError("window_changes is not a list")
    out = []
    for change in changes[:MAX_WINDOW_CHANGES]:
        kind, window = change["change"], change["window"]
        if kind not in ("opened", "closed", "moved", "activated") or not isinstance(window, str):
            raise ValueError(f"not a window change: {change!r:.200}")
        out.append({"change": kind, "window": window[:MAX_WINDOW_LINE]})
    return out


def _window(header: str | None) -> WindowInfo | None:
    data = json.loads(header) if header else None
    return WindowInfo(**data) if data else None


def bgra_to_rgb(data: bytes | bytearray | memoryview | np.ndarray, width: int, height: int) -> np.ndarray:
    """Converts a BGRA/BGRX buffer to an (H, W, 3) RGB array.

    Three channel copies cost ~4 ms for 1920x1080; one reversed-stride copy
    (``bgra[..., 2::-1]``) costs ~18 ms, and Pillow's unpacker ~20 ms.
    """
    bgra = np.frombuffer(data, dtype=np.uint8).reshape(height, width, 4)
    rgb = np.empty((height, width, 3), dtype=np.uint8)
    rgb[..., 0] = bgra[..., 2]
    rgb[..., 1] = bgra[..., 1]
    rgb[..., 2] = bgra[..., 0]
    return rgb


def _error_message(data: bytes) -> str:
    try:
        payload = json.loads(data)
    except (ValueError, RecursionError):
        return data[:500].decode("utf-8", "replace")
    if isinstance(payload, dict):
        return str(payload.get("message") or payload.get("error") or payload)[:2000]
    return str(payload)[:2000]

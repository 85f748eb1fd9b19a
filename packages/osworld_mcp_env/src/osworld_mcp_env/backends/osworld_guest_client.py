"""Host-side client of OSWorld's own guest server: official OSWorld VM images, no hybrid routes.

OSWorld's ``desktop_env/server/main.py`` (port 5000, no token) serves screenshots as
PNG, commands (``/execute``), files (``/file``, ``/setup/upload``), the setup routes
and the accessibility tree, and nothing else. :class:`OSWorldGuestClient` implements
what the ``Desktop`` protocol needs on those routes only, so the env, the task setup
steps and the evaluators run unchanged on an official image:

- GUI input is pyautogui code run through ``POST /execute``, as OSWorld's controller
  does (:mod:`~osworld_mcp_env.backends.pyautogui_code`).
- The window list, the focused window and the layout sample (the root's viewable
  children, popups included, and the screen's bounds) come from one short
  python-xlib script run through ``/execute`` (:data:`WINDOWS_SCRIPT`); the samples
  reported are kept here, so the stale-frame guard compares a cited frame point by
  point as the hybrid guest does (:mod:`~osworld_mcp_env.guest.layout`).
- The wait after an action polls ``/screenshot`` until two captures agree
  (:class:`ScreenPoll`): OSWorld has no settle route, and its own host sleeps a
  fixed 2 s after every action instead.
- There is no session reset: the backend's reset is the snapshot revert.

The OSWorld-shaped calls (``/setup/*``, ``/file``, ``/accessibility``) are the
same requests the hybrid client sends, so they are inherited from
:class:`~osworld_mcp_env.backends.guest_client.GuestClient` with its transport and
error types.
"""

from __future__ import annotations

import io
import json
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image, UnidentifiedImageError

from osworld_mcp_env.actions import cited_points
from osworld_mcp_env.backends.base import ExecResult, GuiResult, ScreenCapture, WindowInfo
from osworld_mcp_env.backends.guest_client import GuestClient, _reading, _status_error
from osworld_mcp_env.backends.pyautogui_code import pyautogui_command
from osworld_mcp_env.deadline import budget as deadline_budget
from osworld_mcp_env.errors import GuestRequestError, StaleFrameError
from osworld_mcp_env.guest.layout import LayoutMemory, LayoutSample, TopWindow, check_cited_frame

OSWORLD_GUEST_PORT = 5000
# The other guest ports OSWorld's host reaches, by name: Chrome's DevTools (a socat in the
# image relays it to Chrome's 1337) and VLC's HTTP interface. Forwarded to the host's
# loopback for tools that use them; the env's own getters reach them from inside the guest.
OSWORLD_FORWARDS = {"chrome_devtools": 9222, "vlc_http": 8080}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# A 1920x1080 PNG costs the guest about 1 s under TCG: a readiness probe needs that long.
SCREENSHOT_TIMEOUT_S = 30.0
WINDOWS_TIMEOUT_S = 30.0

# Run as the desktop user through ``/execute`` with ``python`` (OSWorld's controller's
# interpreter, which has python-xlib for pyautogui). Prints
# ``{"windows": [[id, title, class, x, y, w, h, frame id], ...] bottom first, "active": id or 0,
# "tops": [[id, x, y, w, h, override_redirect], ...] bottom first, "screen": [w, h]}``.
WINDOWS_SCRIPT = r"""
import json
from Xlib import X, Xatom, display, error
d = display.Display()
root = d.screen().root
def prop(w, name, kind):
    p = w.get_full_property(d.intern_atom(name), kind)
    return p.value if p else None
def top(w):
    while True:
        parent = w.query_tree().parent
        if not parent or parent.id == root.id:
            return w.id
        w = parent
out = []
for wid in prop(root, "_NET_CLIENT_LIST_STACKING", Xatom.WINDOW) or []:
    w = d.create_resource_object("window", wid)
    try:
        name = prop(w, "_NET_WM_NAME", d.intern_atom("UTF8_STRING"))
        title = name.decode("utf-8", "replace") if name is not None else (w.get_wm_name() or "")
        if isinstance(title, bytes):
            title = title.decode("latin-1")
        cls = w.get_wm_class()
        g = w.get_geometry()
        o = w.translate_coords(root, 0, 0)
        frame = top(w)
    except (error.BadWindow, error.BadDrawable):
        continue
    out.append([int(wid), str(title), ".".join(cls) if cls else "", -o.x, -o.y, g.width, g.height, frame])
tops = []
for w in root.query_tree().children:
    try:
        a = w.get_attributes()
        if a.map_state != X.IsViewable:
            continue
        g = w.get_geometry()
    except (error.BadWindow, error.BadDrawable):
        continue
    b = 2 * g.border_width
    tops.append([w.id, g.x, g.y, g.width + b, g.height + b, int(a.override_redirect)])
size = root.get_geometry()
active = prop(root, "_NET_ACTIVE_WINDOW", Xatom.WINDOW)
active = int(active[0]) if active is not None and len(active) else 0
print(json.dumps({"windows": out, "active": active, "tops": tops, "screen": [size.width, size.height]}))
"""


@dataclass(frozen=True)
class ScreenPoll:
    """The wait after an action where the guest has no settle route: screenshots until still.

    The screen counts as still once two captures ``interval_s`` apart differ in at
    most ``still_pixels`` pixels: a blinking text caret (Calc blinks two while a
    formula is typed, in the cell and in the input line) never stops changing the
    screen, and would otherwise make every wait in a text field last ``max_s``.
    1000 pixels is 0.05 % of a 1920x1080 screen; a menu, a dialog or a redrawn
    document changes far more.

    Attributes:
        interval_s: Pause between the end of one capture and the next.
        still_pixels: Pixels two captures may differ in and still count as equal.
        max_s: Longest wait when the caller gives no ``max_ms`` (video, animations).
    """

    interval_s: float = 0.3
    still_pixels: int = 1000
    max_s: float = 10.0

    def __post_init__(self) -> None:
        if self.interval_s < 0 or self.still_pixels < 0 or self.max_s <= 0:
            raise ValueError(
                f"ScreenPoll needs interval_s >= 0, still_pixels >= 0 and max_s > 0, got {self}."
            )


class OSWorldGuestClient(GuestClient):
    """Speaks OSWorld's guest API (no token, port 5000); implements what ``GuestClient`` does for the backend.

    Args:
        host: TCP host of the forwarded guest port.
        port: TCP port.
        timeout: Default per-request deadline in seconds.
        poll: The wait after an action (:class:`ScreenPoll`).
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = OSWORLD_GUEST_PORT,
        timeout: float = 60.0,
        poll: ScreenPoll | None = None,
    ) -> None:
        super().__init__(host=host, port=port, token=None, timeout=timeout)
        self.poll = poll or ScreenPoll()
        self.layouts = LayoutMemory()

    def health(self, *, timeout: float = 2.0) -> bool:
        """True when ``GET /screenshot`` returns a PNG: OSWorld's own readiness probe.

        ``timeout`` is raised to :data:`SCREENSHOT_TIMEOUT_S`: one capture takes that long under TCG.
        """
        try:
            status, _, data = self.request("GET", "/screenshot", timeout=max(timeout, SCREENSHOT_TIMEOUT_S))
        except GuestRequestError:
            return False
        return status == 200 and data.startswith(PNG_MAGIC)

    @property
    def screen_size(self) -> tuple[int, int]:
        """``POST /screen_size`` (OSWorld has no GET), asked once."""
        if self._screen_size is None:
            size = self._json("POST", "/screen_size")
            with _reading("/screen_size"):
                self._screen_size = (int(size["width"]), int(size["height"]))
        return self._screen_size

    def execute(self, command: list[str] | str, *, shell: bool = False, timeout: float = 120.0) -> ExecResult:
        """``POST /execute``; OSWorld's failure answer (HTTP 500) becomes an ``error`` result.

        OSWorld's server ignores the timeout and kills a command after its own 120 s;
        a shorter ``timeout`` ends the wait here (``GuestTimeout``) while the command runs on.
        """
        try:
            return super().execute(command, shell=shell, timeout=timeout)
        except GuestRequestError as exc:
            if exc.status != 500 or type(exc) is not GuestRequestError:
                raise
            # OSWorld answers 500 {"status": "error", "message"} when the command could not
            # run or ran past its 120 s (subprocess.TimeoutExpired's message says "timed out").
            timed_out = "timed out" in exc.detail
            return ExecResult(status="error", output="", error=exc.detail, returncode=-1, timed_out=timed_out)

    def screenshot(self, *, with_layout: bool = False, timeout: float | None = None) -> ScreenCapture:
        """``GET /screenshot`` as RGB, with the focused window (and layout hash) from the window script."""
        pixels = self._capture(timeout=timeout)
        _, active, sample = self._window_state()
        layout = self.layouts.remember(sample) if with_layout else ""
        return ScreenCapture(pixels=pixels, layout_hash=layout, active_window=active)

    def windows(self) -> list[WindowInfo]:
        """The managed windows, bottom to top (the window script)."""
        return self._window_state()[0]

    def active_window(self) -> WindowInfo | None:
        """The focused window (the window script)."""
        return self._window_state()[1]

    def gui(
        self,
        action: dict[str, Any],
        *,
        expected_layout: str | None = None,
        timeout: float | None = None,
        capture: bool = False,
        with_layout: bool = False,
    ) -> GuiResult:
        """One input action as pyautogui code through ``/execute``, then the screenshot poll.

        OSWorld's API has no frame in an action's reply, so ``capture`` gets none.

        Raises:
            InputRejected: A key or text pyautogui cannot produce (nothing was sent).
            StaleFrameError: ``expected_layout`` is stale (no input was sent).
            GuestTimeout: the action did not finish in time; unlike the hybrid guest,
                OSWorld's cannot stop a running pyautogui script.
        """
        budget = deadline_budget(self.timeout if timeout is None else timeout)
        command = pyautogui_command(action["action"], action.get("arguments", {}))
        if expected_layout:
            current = self._window_state()[2]
            points = cited_points(action["action"], action.get("arguments", {}))
            refusal = check_cited_frame(self.layouts, expected_layout, current, points)
            if refusal is not None:
                reasons = "; ".join(refusal["reasons"])
                message = f"The layout changed where the action points since the cited frame: {reasons}."
                raise StaleFrameError("/execute", 409, message, refusal)
        result = self.execute(command, timeout=budget)
        if not result.ok:
            raise GuestRequestError("/execute", 200, f"pyautogui failed: {result.error[-500:]}")
        return GuiResult(input_events_emitted=True, settle_ms=self.settle())

    def settle(self, **thresholds: float | None) -> float:
        """Captures the screen until two captures agree (:class:`ScreenPoll`); returns the ms waited.

        Of the hybrid guest's thresholds only ``max_ms`` applies; the others describe
        in-guest probes OSWorld's API lacks. The wait ends at the first capture past
        it (a capture takes seconds on a busy TCG host): only the caller's deadline,
        not this wait, fails a capture.
        """
        started = time.monotonic()
        max_ms = thresholds.get("max_ms")
        limit = self.poll.max_s if max_ms is None else max_ms / 1000
        previous = self._capture()
        while time.monotonic() - started < limit:
            time.sleep(min(self.poll.interval_s, max(0.0, limit - (time.monotonic() - started))))
            current = self._capture()
            if current.shape == previous.shape:
                changed = int(np.count_nonzero((current != previous).any(axis=2)))
                if changed <= self.poll.still_pixels:
                    break
            previous = current
        return (time.monotonic() - started) * 1000

    def reset_session(self, *, timeout: float | None = None) -> int:
        """No request: OSWorld's API has no session reset; the backend's reset is the snapshot revert."""
        return 0

    # --- helpers -----------------------------------------------------------------
    def _capture(self, *, timeout: float | None = None) -> np.ndarray:
        status, _, data = self.request("GET", "/screenshot", timeout=timeout)
        if status != 200:
            raise _status_error("/screenshot", status, data)
        try:
            with Image.open(io.BytesIO(data)) as image:
                return np.asarray(image.convert("RGB"))
        except (UnidentifiedImageError, OSError, ValueError) as exc:
            raise GuestRequestError("/screenshot", 200, f"not an image: {exc}") from exc

    def _window_state(self) -> tuple[list[WindowInfo], WindowInfo | None, LayoutSample]:
        """The managed windows (bottom first), the focused one and the layout sample, from one script run."""
        result = self.execute(["python", "-c", WINDOWS_SCRIPT], timeout=WINDOWS_TIMEOUT_S)
        if not result.ok:
            raise GuestRequestError("/execute", 200, f"window script failed: {result.error[-500:]}")
        with _reading("/execute"):
            # python-xlib may print a warning on stdout first (no Xauthority): the JSON is the last line.
            state = json.loads(result.output.strip().rsplit("\n", 1)[-1])
            windows = [
                WindowInfo(window_id=int(w[0]), title=str(w[1]), wm_class=str(w[2]), x=int(w[3]), y=int(w[4]),
                           width=int(w[5]), height=int(w[6]))
                for w in state["windows"]
            ]  # fmt: skip
            active = next((w for w in windows if w.window_id == int(state["active"])), None)
            titles = {int(w[7]): str(w[1]) for w in state["windows"]}
            tops = tuple(
                TopWindow(window_id=int(t[0]), x=int(t[1]), y=int(t[2]), width=int(t[3]), height=int(t[4]),
                          override_redirect=bool(t[5]), title="" if t[5] else titles.get(int(t[0]), ""))
                for t in state["tops"]
            )  # fmt: skip
            width, height = state["screen"]
            sample = LayoutSample(screen=(int(width), int(height)), windows=tops, active=int(state["active"]))
        return windows, active, sample

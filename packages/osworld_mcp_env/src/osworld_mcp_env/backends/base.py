"""The host-side view of one desktop: the contract every backend implements.

Task setup steps, evaluator getters and the env speak only to this protocol, so
the same task runs on the embedded sandboxed desktop (``local``) and on a QEMU VM
(``libvirt``). Its methods mirror the OSWorld guest HTTP API (``/execute``,
``/setup/launch``, ``/file``, ...) plus what the hybrid env needs beyond it
(raw screen captures, GUI input, the MCP bridge).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from osworld_mcp_env.guest.wire import WindowInfo


@dataclass(frozen=True)
class ExecResult:
    """Result of ``POST /execute``: the OSWorld response shape as a value.

    Attributes:
        status: ``success`` when the command ran to its end (any exit code), else ``error``.
        output: Its standard output.
        error: Its standard error (or why it could not run).
        returncode: Its exit code; -1 when it did not exit by itself (killed at
            the timeout, or never started), as in OSWorld.
        timed_out: The guest killed it at its timeout. Said explicitly: -1 alone
            does not tell a timeout from a command that could not start.
    """

    status: str
    output: str
    error: str
    returncode: int
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        """True when the command ran and exited 0."""
        return self.status == "success" and self.returncode == 0


@dataclass(frozen=True)
class ScreenCapture:
    """One capture of the desktop's screen, as a backend returns it.

    Not the agent's frame (``hybrid_agent.trajectory.Frame``) and without an id:
    the id an agent cites is the env's episode-local ``info["frame_id"]``.

    Attributes:
        pixels: uint8 array of shape (H, W, 3), RGB.
        layout_hash: Fingerprint of the layout sample at capture time (desktop bounds,
            viewable top-level windows with popups, stacking, focus:
            ``guest.layout.LayoutSample``); a GUI action citing it is checked point by point.
        active_window: The focused window at capture time, when the backend reports it.
    """

    pixels: np.ndarray
    layout_hash: str = ""
    active_window: WindowInfo | None = None


@dataclass(frozen=True)
class GuiResult:
    """What one GUI action did on the desktop."""

    input_events_emitted: bool
    settle_ms: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)
    capture: ScreenCapture | None = None
    """The settled screen, taken once the wait ended, when asked for and the backend could."""


@runtime_checkable
class Desktop(Protocol):
    """A running desktop that tasks, evaluators and the env drive.

    Every method may raise :class:`~osworld_mcp_env.errors.DesktopError` (or its
    subclass ``GuestRequestError``) when the desktop does not answer.
    """

    @property
    def screen_size(self) -> tuple[int, int]:
        """(width, height) of the screen in pixels."""
        ...

    def execute(self, command: list[str] | str, *, shell: bool = False, timeout: float = 120.0) -> ExecResult:
        """Runs a command to completion inside the desktop as the desktop user."""
        ...

    def launch(self, command: list[str] | str, *, shell: bool = False) -> None:
        """Starts a command inside the desktop without waiting for it."""
        ...

    def open_file(self, path: str, *, timeout: float = 30.0) -> None:
        """Opens a file (or an app found on PATH) and waits until its window shows."""
        ...

    def activate_window(self, window_name: str, *, strict: bool = False, by_class: bool = False) -> None:
        """Raises and focuses the first window whose title (or class) matches."""
        ...

    def close_window(self, window_name: str, *, strict: bool = False, by_class: bool = False) -> None:
        """Politely closes the first window whose title (or class) matches."""
        ...

    def upload_file(self, path: str, data: bytes) -> None:
        """Writes ``data`` to ``path`` inside the desktop (parents created), atomically."""
        ...

    def read_file(self, path: str) -> bytes | None:
        """Returns the bytes of ``path`` inside the desktop, or None when it does not exist."""
        ...

    def screenshot(self, *, with_layout: bool = False) -> ScreenCapture:
        """Captures the screen as a raw RGB array (no PNG encoding), with the focused window.

        ``with_layout`` adds the window-layout hash that the stale-frame guard needs.
        """
        ...

    def windows(self) -> list[WindowInfo]:
        """Lists the managed top-level windows, bottom to top of the stacking order."""
        ...

    def active_window(self) -> WindowInfo | None:
        """Returns the focused window, or None."""
        ...

    def accessibility_tree(self, *, max_nodes: int = 5000) -> str:
        """Returns the AT-SPI tree as OSWorld's XML (tables are never walked)."""
        ...

    def gui(
        self,
        action: dict[str, Any],
        *,
        expected_layout: str | None = None,
        timeout: float | None = None,
        capture: bool = False,
        with_layout: bool = False,
    ) -> GuiResult:
        """Executes one validated ``computer_use`` action (pixel coordinates), then waits for the screen.

        With ``expected_layout`` (a :attr:`ScreenCapture.layout_hash`), the action is refused
        before any input (``StaleFrameError``, with the reasons and the current layout in
        its fields) unless each point it cites still lands in the same window with the
        same geometry as in that frame (``guest.layout.stale_reasons``).
        ``timeout`` bounds the whole action; a hung app raises ``GuestRequestError``.
        With ``capture``, a backend that can returns the settled screen in the same
        exchange (:attr:`GuiResult.capture`, as :meth:`screenshot` with ``with_layout``
        would give it right after): a step's observation then costs no round trip of
        its own. None there means: take a :meth:`screenshot`.
        """
        ...

    def settle(
        self,
        *,
        first_change_ms: float | None = None,
        quiet_ms: float | None = None,
        max_ms: float | None = None,
        prior_change_ms: float | None = None,
        work_ms: float | None = None,
    ) -> float:
        """Waits until the desktop is still; returns the milliseconds waited.

        A threshold left as None takes the guest's default (``guest.settle.SettleConfig``);
        ``prior_change_ms`` and ``work_ms`` tune a wait that continues a task's setup (the
        reset's, ``env.episode.RESET_SETTLE``) and are 0 for every other wait.
        """
        ...

    @property
    def generation(self) -> int:
        """Bumped each time the desktop's processes are replaced; clients of an older one are stale."""
        ...

    def tool_socket(self) -> str | None:
        """Path of the Unix socket the desktop's MCP tool host serves on, or None without tools."""
        ...

    def restart(self) -> None:
        """Returns the desktop to its episode-start state (no app, fresh home)."""
        ...

    def close(self) -> None:
        """Stops the desktop; no process or temporary file may remain."""
        ...


@runtime_checkable
class CpuWeighted(Protocol):
    """A desktop whose share of the host's CPU can be changed (the local backend's cgroup).

    The env lowers it for a desktop prepared in the background for the next episode and
    restores it when that desktop becomes the episode's.
    """

    def set_cpu_weight(self, weight: int) -> None:
        """Sets the weight against other desktops (1-10000; 100 is the default)."""
        ...

"""The state behind the guest's routes: display, input, windows, and the processes it launched."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from osworld_mcp_env.guest.screen import Screen, SettleConfig
from osworld_mcp_env.guest.transport import RequestError
from osworld_mcp_env.guest.windows import WindowManager
from osworld_mcp_env.guest.xdisplay import XConnection
from osworld_mcp_env.guest.xinput import InputDevice

EXECUTE_TIMEOUT_S = 120.0
INPUT_ACTIONS = {
    "key", "type", "mouse_move", "left_click", "right_click", "middle_click", "double_click",
    "triple_click", "left_click_drag", "scroll", "hscroll",
}  # fmt: skip


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
        args = command_args(command, shell)
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


def command_args(command: list[str] | str, shell: bool) -> list[str] | str:
    """OSWorld's command forms as Popen arguments: ``~/`` expanded, a string split unless ``shell``."""
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

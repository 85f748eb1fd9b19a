"""The state behind the guest's routes: display, input, windows, and the processes it launched."""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import subprocess
import threading
import time
from typing import Any

from osworld_mcp_env.guest.damage import DamageWatch
from osworld_mcp_env.guest.frame_delta import FrameHistory
from osworld_mcp_env.guest.screen import Screen
from osworld_mcp_env.guest.settle import SettleConfig, Settler
from osworld_mcp_env.guest.transport import RequestError
from osworld_mcp_env.guest.user_session import SessionConfig, UserSession
from osworld_mcp_env.guest.windows import WindowManager
from osworld_mcp_env.guest.xdisplay import XConnection
from osworld_mcp_env.guest.xinput import InputDevice
from osworld_mcp_env.guest.xstate import XBaseline, capture, restore, wait_for_window_manager

EXECUTE_TIMEOUT_S = 120.0
# Between batches of typed characters: the app has consumed a batch once it is idle
# (nothing running, nothing drawn) for a few ms; its timers do not matter here.
TYPING_PACE = SettleConfig(first_change_ms=2.0, quiet_ms=4.0, max_ms=2000.0, timer_horizon_ms=0.0)


class Guest:
    """The state behind the routes: the display, input, windows, the user's session and processes."""

    def __init__(self, settle: SettleConfig | None = None, session: SessionConfig | None = None) -> None:
        self.xconn = XConnection()
        self.screen = Screen()
        self.frames = FrameHistory()  # the last frame sent, for ``/frame?since=``
        self.damage = DamageWatch()  # the screen's changes, as the X server reports them
        self.settler = Settler(self.damage)
        self.input = InputDevice(self.xconn, pace=functools.partial(self.settler.wait, TYPING_PACE))
        self.windows = WindowManager(self.xconn)
        self.settle = settle or SettleConfig()
        self.user = UserSession(session or SessionConfig.from_env())
        self.home = self.user.config.home
        self._children: list[subprocess.Popen] = []
        self._children_lock = threading.Lock()
        self._gui_lock = threading.Lock()
        self._x_baseline: XBaseline | None = None
        threading.Thread(target=self._reap_forever, name="reaper", daemon=True).start()

    # --- processes -----------------------------------------------------------
    def spawn(self, command: list[str] | str, shell: bool) -> subprocess.Popen:
        """Starts a process of the desktop user, detached from the request, reaping finished ones."""
        args = command_args(command, shell, str(self.home))
        process = subprocess.Popen(
            args,
            shell=shell,
            **self.user.popen_kwargs(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        with self._children_lock:
            self._children = [c for c in self._children if c.poll() is None]
            self._children.append(process)
        return process

    def _reap_forever(self, interval_s: float = 0.5) -> None:
        """Reaps launched apps that exited (or were killed): a zombie still shows in ``pgrep``."""
        while True:
            time.sleep(interval_s)
            with self._children_lock:
                self._children = [c for c in self._children if c.poll() is None]

    def begin_episode(self) -> dict[str, Any]:
        """A clean episode start: the user's processes and files gone, X's leftovers undone."""
        if self._x_baseline is None:
            wait_for_window_manager(self.xconn)
            self._x_baseline = capture(self.xconn)
        result = self.user.begin()
        with self._children_lock:
            for child in self._children:
                child.poll()  # reap the killed
            self._children = []
        result["root_properties_deleted"] = restore(self.xconn, self._x_baseline)
        self.input.forget_spares()
        return result

    def unhealthy_core(self) -> list[str]:
        """Core processes (children of the session script) that are stopped, dead or unreachable.

        Unreachable: a process that listens on a Unix socket whose file was removed (a
        tmp cleaner on a long run): it lives, but no client can connect to it again.
        """
        session = os.getppid()
        listening = _listening_unix_sockets()
        bad = []
        for pid in _pids():
            if _parent(pid) == session and pid != os.getpid():
                state = _state(pid)
                if state in ("T", "t", "Z", "X"):
                    bad.append(f"{_comm(pid)} ({pid}) is in state {state}")
                for path in sorted({listening[i] for i in _socket_inodes(pid) if i in listening}):
                    if not os.path.lexists(path):
                        bad.append(f"{_comm(pid)} ({pid}) listens on {path}, which was removed")
        return bad

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


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "X"


# /proc/net/unix's flag of a listening socket (__SO_ACCEPTCON).
_ACCEPTING = 0x10000


def _listening_unix_sockets() -> dict[str, str]:
    """Inode -> path of every listening Unix socket bound to a file path (abstract names left out)."""
    try:
        with open("/proc/net/unix") as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return {}
    sockets = {}
    for line in lines:
        fields = line.split(None, 7)  # Num RefCount Protocol Flags Type St Inode Path
        if len(fields) == 8 and int(fields[3], 16) & _ACCEPTING and fields[7].startswith("/"):
            sockets[fields[6]] = fields[7]
    return sockets


def _socket_inodes(pid: int) -> set[str]:
    """Inodes of the sockets ``pid`` holds open (empty when it is gone or unreadable)."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    except OSError:
        pass
    return inodes


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def command_args(command: list[str] | str, shell: bool, home: str = "~") -> list[str] | str:
    """OSWorld's command forms as Popen arguments: ``~/`` is ``home``, a string split unless ``shell``."""

    def expand(arg: str) -> str:
        return home + arg[1:] if arg.startswith("~/") else arg

    if isinstance(command, list):
        if not all(isinstance(c, str) for c in command):
            raise RequestError(400, "'command' must be a string or a list of strings.")
        args = [expand(c) for c in command]
        return " ".join(shlex.quote(a) for a in args) if shell else args
    if not isinstance(command, str) or not command:
        raise RequestError(400, "'command' must be a non-empty string or a list of strings.")
    if shell:
        return command
    return [expand(c) for c in shlex.split(command)]

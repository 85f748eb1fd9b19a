"""The embedded desktop: Xvfb + openbox + D-Bus + AT-SPI + real apps in a bubblewrap sandbox.

Each instance gets private PID, network (loopback only), IPC and UTS namespaces,
its own ``/home/user``, ``/tmp`` and ``XDG_RUNTIME_DIR``, and runs as an
unprivileged ``user`` (uid 1000 inside). When the host process is root it first
drops to a host uid of its own (3,000,000 + slot) with ``setpriv``: a user
namespace created by root would map ``user`` onto host root, which owns
``/etc/shadow``. The env talks to the guest server over a Unix socket in a
control directory bound into the sandbox.

Teardown kills the namespace's PID 1, after which the kernel kills everything
in it. ``--die-with-parent`` covers a host that dies first; it is bound to the
forking *thread*, so sandboxes are spawned from one long-lived thread.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from osworld_mcp_env.backends.base import ExecResult, Frame, GuiResult, WindowInfo
from osworld_mcp_env.backends.framebuffer import XvfbFramebuffer, open_framebuffer
from osworld_mcp_env.backends.guest_client import GuestClient
from osworld_mcp_env.backends.home import chown_tree, clear_directory, write_home
from osworld_mcp_env.backends.lo_profile import ensure_template, install_template
from osworld_mcp_env.backends.sandbox import (
    SandboxProcess,
    SlotAllocator,
    namespace_members,
    read_child_pid,
    spawner,
)
from osworld_mcp_env.errors import DesktopError, DesktopStartError

GUEST_DIR = Path(__file__).resolve().parent.parent / "guest"
SANDBOX_UID = 1000
HOST_UID_BASE = 3_000_000
REQUIRED_BINARIES = ("bwrap", "Xvfb", "openbox", "dbus-daemon")


@dataclass(frozen=True)
class LocalDesktopConfig:
    """Settings of one embedded desktop.

    Attributes:
        screen_width: Screen width in pixels (OSWorld: 1920).
        screen_height: Screen height in pixels (OSWorld: 1080).
        root_dir: Host directory for instance directories; default ``$TMPDIR/osworld-mcp-env``.
        guest_python: Interpreter that runs the guest server inside the sandbox; it
            must import this package, mss, python-xlib, numpy and Pillow (and uno /
            pyatspi for the tools and the accessibility tree: Debian's Python 3.11).
        start_timeout_s: Deadline for the guest server to answer after spawn.
        request_timeout_s: Default deadline of one guest request.
        tmpfs_mb: Size cap of each private tmpfs (``/tmp``, ``/run``).
        enable_mcp: Start the MCP tool host beside the guest server.
        libreoffice_template: Start LibreOffice from a warmed profile (built once per
            host: ~0.45 s to a window instead of ~1.3 s).
        extra_env: More environment variables for the desktop session.
    """

    screen_width: int = 1920
    screen_height: int = 1080
    root_dir: Path | None = None
    guest_python: str = sys.executable
    start_timeout_s: float = 30.0
    request_timeout_s: float = 60.0
    tmpfs_mb: int = 2048
    enable_mcp: bool = False
    libreoffice_template: bool = True
    extra_env: dict[str, str] = field(default_factory=dict)


_LIVE: weakref.WeakSet[LocalDesktop] = weakref.WeakSet()
_SIGTERM_INSTALLED = False


def _install_sigterm_cleanup() -> None:
    """Makes SIGTERM run atexit handlers (and so tear sandboxes down) instead of dying silently."""
    global _SIGTERM_INSTALLED
    if _SIGTERM_INSTALLED or threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:

        def _exit(signum: int, frame: Any) -> None:
            raise SystemExit(128 + signum)

        signal.signal(signal.SIGTERM, _exit)
    _SIGTERM_INSTALLED = True


@atexit.register
def _close_all() -> None:
    for desktop in list(_LIVE):
        desktop.close()


def _cleanup(sandbox: SandboxProcess, directories: tuple[Path, ...], lock_fd: int, owner_pid: int) -> None:
    if os.getpid() != owner_pid:
        return  # a forked child inherited this handle; the desktop belongs to its parent
    sandbox.stop()
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.close(lock_fd)


class LocalDesktop:
    """One sandboxed embedded desktop; implements the ``Desktop`` protocol."""

    def __init__(self, config: LocalDesktopConfig | None = None) -> None:
        self.config = config or LocalDesktopConfig()
        _check_host()
        root = self.config.root_dir or Path(tempfile.gettempdir()) / "osworld-mcp-env"
        root.mkdir(parents=True, exist_ok=True)
        os.chmod(root, 0o711)  # the sandbox uid must traverse it to reach its own directory
        self._profile_template = (
            ensure_template(root, lambda: LocalDesktop(replace(self.config, libreoffice_template=False)))
            if self.config.libreoffice_template
            else None
        )
        self.slot, lock_fd = SlotAllocator(root).acquire()
        self._root_user = os.geteuid() == 0
        self.host_uid = HOST_UID_BASE + self.slot if self._root_user else os.geteuid()
        self.instance_dir = Path(tempfile.mkdtemp(prefix=f"desk{self.slot}-", dir=root))
        os.chmod(self.instance_dir, 0o711)
        self.home_dir = self.instance_dir / "home"
        self.ctl_dir = self.instance_dir / "ctl"
        self._token = secrets.token_hex(16)
        self.generation = 0  # bumped by every sandbox start: clients of the old one are stale
        self._sandbox = SandboxProcess()
        self.fb_dir = _frame_dir(root, self.instance_dir.name)
        self._framebuffer: XvfbFramebuffer | None = None
        self._framebuffer_generation = -1
        self._frame_id = 0
        self._finalizer = weakref.finalize(
            self, _cleanup, self._sandbox, (self.instance_dir, self.fb_dir), lock_fd, os.getpid()
        )
        self.client = GuestClient(
            unix_socket=str(self.ctl_dir / "guest.sock"),
            token=self._token,
            timeout=self.config.request_timeout_s,
        )
        _install_sigterm_cleanup()
        _LIVE.add(self)
        try:
            self._prepare_dirs()
            self.start()
        except BaseException:
            self.close()
            raise

    # --- lifecycle -----------------------------------------------------------
    def _prepare_dirs(self) -> None:
        etc = self.instance_dir / "etc"
        for directory in (self.home_dir, self.ctl_dir, etc):
            directory.mkdir(exist_ok=True)
        self.fb_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.fb_dir.parent, 0o711)  # bwrap resolves the bind source as the sandbox uid
        if self._root_user:
            os.chown(self.fb_dir, self.host_uid, self.host_uid)
        os.chmod(self.fb_dir, 0o700)
        (etc / "passwd").write_text(
            "root:x:0:0:root:/root:/bin/bash\n"
            f"user:x:{SANDBOX_UID}:{SANDBOX_UID}:user:/home/user:/bin/bash\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
        )
        (etc / "group").write_text(f"root:x:0:\nuser:x:{SANDBOX_UID}:\nnogroup:x:65534:\n")
        os.chmod(etc / "passwd", 0o644)
        os.chmod(etc / "group", 0o644)
        self._reset_home()

    def _reset_home(self) -> None:
        clear_directory(self.home_dir)
        write_home(self.home_dir)
        if self._profile_template is not None:
            install_template(self._profile_template, self.home_dir)
        if self._root_user:
            chown_tree(self.home_dir, self.host_uid, self.host_uid)
            chown_tree(self.ctl_dir, self.host_uid, self.host_uid)
        os.chmod(self.home_dir, 0o700)
        os.chmod(self.ctl_dir, 0o700)

    def start(self) -> None:
        """Spawns the sandbox and waits until its guest server answers."""
        if self._sandbox.process is not None:
            raise DesktopStartError("This desktop is already running; call restart().")
        for stale in ("guest.sock", "mcp.sock"):
            (self.ctl_dir / stale).unlink(missing_ok=True)
        started = time.monotonic()
        self.generation += 1
        read_fd, write_fd = os.pipe()
        try:
            command = self._command(info_fd=write_fd)
            process = (
                spawner()
                .submit(
                    subprocess.Popen,
                    command,
                    pass_fds=(write_fd,),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                )
                .result()
            )
        finally:
            os.close(write_fd)
        self._sandbox.process = process
        self._sandbox.namespace_pid = read_child_pid(read_fd, process, self.config.start_timeout_s)
        while not self.client.health(timeout=2.0):
            if process.poll() is not None:
                raise DesktopStartError(
                    f"The sandbox exited with {process.returncode}: {self._diagnostics()}"
                )
            if time.monotonic() - started > self.config.start_timeout_s:
                raise DesktopStartError(
                    f"The guest server did not answer within {self.config.start_timeout_s:g} s: "
                    f"{self._diagnostics()}"
                )
            time.sleep(0.01)

    def restart(self, *, full: bool = False) -> None:
        """Returns to the episode-start state: no app running, the episode-start home.

        The fast path kills the apps through the guest and keeps X, D-Bus, the
        window manager and the servers (~0.4 s saved per reset); a full restart
        replaces the whole sandbox. The fast path falls back to the full one
        whenever the session does not answer.

        Args:
            full: Always replace the whole sandbox.
        """
        if not full and self.running:
            try:
                self.client.reset_session()
                self._reset_home()
                return
            except DesktopError:
                pass  # a broken session gets a new sandbox
        self.client.close()
        self._sandbox.stop()
        self._reset_home()
        self.start()

    def close(self) -> None:
        """Stops the sandbox and deletes its directories; safe to call twice."""
        if self._framebuffer is not None:
            self._framebuffer.close()
            self._framebuffer = None
        self.client.close()
        self._finalizer()  # runs its cleanup once; later calls do nothing
        _LIVE.discard(self)

    @property
    def running(self) -> bool:
        """True while the sandbox process lives."""
        return self._sandbox.process is not None and self._sandbox.process.poll() is None

    def processes(self) -> list[int]:
        """Host pids of every process inside this desktop's PID namespace."""
        pid = self._sandbox.namespace_pid
        return namespace_members(pid) if pid else []

    def _diagnostics(self) -> str:
        parts = []
        process = self._sandbox.process
        if process is not None and process.poll() is not None and process.stderr is not None:
            parts.append(process.stderr.read().decode("utf-8", "replace")[-800:])
        log_dir = self.ctl_dir / "log"
        if log_dir.is_dir():
            for log in sorted(log_dir.iterdir()):
                if log.is_file() and not log.is_symlink():
                    tail = log.read_bytes()[-400:].decode("utf-8", "replace").strip()
                    if tail:
                        parts.append(f"[{log.name}] {tail}")
        return " | ".join(parts) or "no output"

    def _command(self, *, info_fd: int) -> list[str]:
        cfg = self.config
        inner_home, run_user = "/home/user", f"/run/user/{SANDBOX_UID}"
        session_env = {
            "PATH": f"{GUEST_DIR / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": inner_home,
            "USER": "user",
            "LOGNAME": "user",
            "SHELL": "/bin/bash",
            "LANG": "C.UTF-8",
            "DISPLAY": ":99",
            "XDG_RUNTIME_DIR": run_user,
            "DBUS_SESSION_BUS_ADDRESS": f"unix:path={run_user}/bus",
            "SAL_USE_VCLPLUGIN": "gtk3",
            "GTK_MODULES": "gail:atk-bridge",
            "GNOME_ACCESSIBILITY": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "OSWORLD_SCREEN": f"{cfg.screen_width}x{cfg.screen_height}x24",
            "OSWORLD_CTL": "/run/ctl",
            "OSWORLD_PYTHON": cfg.guest_python,
            "OSWORLD_MCP": "1" if cfg.enable_mcp else "0",
            "OSWORLD_GUEST_TOKEN": self._token,
            **cfg.extra_env,
        }
        size = str(cfg.tmpfs_mb * 1024 * 1024)
        bwrap = [
            "bwrap", "--unshare-all", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
            "--hostname", f"desktop{self.slot}", "--die-with-parent", "--new-session",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--perms", "1777", "--size", size, "--tmpfs", "/tmp",
            "--perms", "1777", "--size", size, "--tmpfs", "/dev/shm",
            "--size", size, "--tmpfs", "/run", "--perms", "0700", "--dir", run_user,
            "--tmpfs", "/home", "--bind", str(self.home_dir), inner_home,
            "--bind", str(self.ctl_dir), "/run/ctl",
            "--bind", str(self.fb_dir), "/run/fb",
            "--tmpfs", "/root",
            "--ro-bind", str(self.instance_dir / "etc" / "passwd"), "/etc/passwd",
            "--ro-bind", str(self.instance_dir / "etc" / "group"), "/etc/group",
        ]  # fmt: skip
        # The guest's code and interpreter may live under a directory the mounts above
        # hide (/root, /tmp, /home): bind them back at their own paths, read-only.
        for path in _guest_paths(cfg.guest_python):
            bwrap += ["--ro-bind", str(path), str(path)]
        bwrap += ["--clearenv"]
        for key, value in session_env.items():
            bwrap += ["--setenv", key, value]
        bwrap += [
            "--chdir",
            inner_home,
            "--info-fd",
            str(info_fd),
            "/bin/bash",
            str(GUEST_DIR / "session.sh"),
        ]
        if not self._root_user:
            return bwrap
        uid = str(self.host_uid)
        return [
            "setpriv",
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--",
            *bwrap,
        ]

    # --- Desktop protocol (delegated to the guest server) ---------------------
    @property
    def screen_size(self) -> tuple[int, int]:
        """(width, height)."""
        return (self.config.screen_width, self.config.screen_height)

    def execute(self, command: list[str] | str, *, shell: bool = False, timeout: float = 120.0) -> ExecResult:
        """Runs a command to completion as ``user`` inside the desktop."""
        return self.client.execute(command, shell=shell, timeout=timeout)

    def launch(self, command: list[str] | str, *, shell: bool = False) -> None:
        """Starts a command inside the desktop."""
        self.client.launch(command, shell=shell)

    def open_file(self, path: str, *, timeout: float = 30.0) -> None:
        """Opens a file with its default app and waits for its window."""
        self.client.open_file(path, timeout=timeout)

    def activate_window(self, window_name: str, *, strict: bool = False, by_class: bool = False) -> None:
        """Focuses a window."""
        self.client.activate_window(window_name, strict=strict, by_class=by_class)

    def close_window(self, window_name: str, *, strict: bool = False, by_class: bool = False) -> None:
        """Closes a window."""
        self.client.close_window(window_name, strict=strict, by_class=by_class)

    def upload_file(self, path: str, data: bytes) -> None:
        """Writes a file inside the desktop, as ``user``."""
        self.client.upload_file(path, data)

    def read_file(self, path: str) -> bytes | None:
        """Reads a file inside the desktop (through the guest, never through host symlinks)."""
        return self.client.read_file(path)

    def screenshot(self, *, with_layout: bool = False) -> Frame:
        """An RGB frame read from Xvfb's screen file, with the focused window (and layout hash).

        Falls back to the guest's ``/frame`` while the screen file is not mapped.
        """
        framebuffer = self._map_framebuffer()
        if framebuffer is None:
            return self.client.screenshot(with_layout=with_layout)
        pixels = framebuffer.rgb()
        self._frame_id += 1
        if with_layout:
            active, layout_hash = self.client.focus_and_layout()
        else:
            active, layout_hash = self.client.active_window(), ""
        return Frame(pixels=pixels, frame_id=self._frame_id, layout_hash=layout_hash, active_window=active)

    def _map_framebuffer(self) -> XvfbFramebuffer | None:
        if self._framebuffer is not None and self._framebuffer_generation == self.generation:
            return self._framebuffer
        if self._framebuffer is not None:
            self._framebuffer.close()
        self._framebuffer = open_framebuffer(self.fb_dir)
        self._framebuffer_generation = self.generation
        return self._framebuffer

    def windows(self) -> list[WindowInfo]:
        """Managed windows, bottom to top."""
        return self.client.windows()

    def active_window(self) -> WindowInfo | None:
        """The focused window."""
        return self.client.active_window()

    def accessibility_tree(self, *, max_nodes: int = 5000) -> str:
        """The AT-SPI tree as XML."""
        return self.client.accessibility_tree(max_nodes=max_nodes)

    def tool_socket(self) -> str | None:
        """The MCP tool host's socket in the control directory (None when tools are off)."""
        return str(self.ctl_dir / "mcp.sock") if self.config.enable_mcp else None

    def settle(
        self,
        *,
        first_change_ms: float | None = None,
        quiet_ms: float | None = None,
        max_ms: float | None = None,
    ) -> float:
        """Waits until the desktop is still (None: the guest's default threshold)."""
        return self.client.settle(first_change_ms=first_change_ms, quiet_ms=quiet_ms, max_ms=max_ms)

    def gui(
        self, action: dict[str, Any], *, expected_layout: str | None = None, timeout: float | None = None
    ) -> GuiResult:
        """One input action plus the settle wait, within ``timeout`` seconds."""
        return self.client.gui(action, expected_layout=expected_layout, timeout=timeout)


HIDDEN_BY_SANDBOX = (Path("/root"), Path("/tmp"), Path("/home"), Path("/run"), Path("/dev/shm"))


def _frame_dir(root: Path, name: str) -> Path:
    """Where Xvfb keeps the screen file: RAM-backed ``/dev/shm`` when the host has it."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return shm / "osworld-mcp-env" / name
    return root / f"{name}-fb"


def _guest_paths(guest_python: str) -> list[Path]:
    """Host directories the guest needs that the sandbox's private mounts would hide."""
    package_root = GUEST_DIR.parent.parent  # src/ of a checkout, or site-packages of a wheel
    venv = Path(guest_python).absolute().parent.parent
    wanted = {package_root.resolve(), venv}
    return sorted(p for p in wanted if any(p.is_relative_to(h) for h in HIDDEN_BY_SANDBOX))


def _check_host() -> None:
    missing = [b for b in REQUIRED_BINARIES if shutil.which(b) is None]
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        missing.append("setpriv")
    if missing:
        raise DesktopStartError(
            f"The local desktop needs {', '.join(missing)} on PATH; run tools/setup_debian.sh as root."
        )

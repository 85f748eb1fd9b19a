"""The embedded desktop: Xvfb + openbox + D-Bus + AT-SPI + real apps in a bubblewrap sandbox.

The trust boundary is built in, because an RL agent finds every shortcut:

- **Two host uids per desktop** (:mod:`~osworld_mcp_env.backends.local.userns`): the
  infrastructure (X server, window manager, guest server, MCP host) runs as the
  namespace's root, the desktop user's processes as uid 1000 inside. The agent can
  neither signal, trace nor replace the infrastructure, nor reach its sockets:
  the control directory belongs to the infrastructure and has mode 0700.
- **The host never touches what the desktop user controls.** The home directory,
  ``/tmp``, ``/dev/shm`` and ``/run/user/1000`` are size-capped tmpfs mounts inside
  the sandbox; the guest server restores them at every reset, after killing every
  process of the desktop user. The host reads files only through the guest, which
  opens them with the desktop user's credentials and a size cap. The screen file
  the host reads belongs to the X server and is read, not mapped.
- **The sandbox sees only what it needs** of the host: ``/usr``, ``/etc``, the
  guest's interpreter and this package's code without its bundled tasks.
- **Bounds**: a cgroup per desktop (memory, tasks) where the host has one,
  ``RLIMIT_NPROC`` and a cap on nested user namespaces everywhere.

Private PID, network (loopback only; internet mode adds a relay to a host proxy,
:mod:`osworld_mcp_env.network`, never an interface), IPC and UTS namespaces as before. Teardown
kills the namespace's PID 1, after which the kernel kills everything in it.
``--die-with-parent`` covers a host that dies first; it is bound to the forking
*thread*, so sandboxes are spawned from one long-lived thread. A host killed with
SIGKILL leaves its directories behind; the next desktop on the machine sweeps them.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
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

from osworld_mcp_env.backends.base import GuiResult, ScreenCapture
from osworld_mcp_env.backends.guest_backed import GuestBackedDesktop
from osworld_mcp_env.backends.guest_client import Focus, GuestClient
from osworld_mcp_env.backends.local.cgroups import CgroupLimits, DesktopCgroup, sweep_stale_groups
from osworld_mcp_env.backends.local.framebuffer import QuietFrame, XvfbFramebuffer, open_framebuffer
from osworld_mcp_env.backends.local.home import ensure_home_template
from osworld_mcp_env.backends.local.sandbox import (
    SandboxProcess,
    SlotAllocator,
    namespace_members,
    read_child_pid,
    spawner,
)
from osworld_mcp_env.backends.local.userns import DESKTOP_UID, UidPair, spawn_in_user_namespace
from osworld_mcp_env.errors import DesktopError, DesktopStartError
from osworld_mcp_env.network.config import NetworkConfig
from osworld_mcp_env.network.host_proxy import HostProxy

GUEST_DIR = Path(__file__).resolve().parents[2] / "guest"
PACKAGE_DIR = GUEST_DIR.parent
SANDBOX_UID = DESKTOP_UID
REQUIRED_BINARIES = ("bwrap", "Xvfb", "openbox", "dbus-daemon", "setpriv")
# Parts of this package the sandbox must not see: task definitions hold expected answers.
HIDDEN_PACKAGE_PARTS = ("tasks/bundled",)
INSTANCE_NAME = re.compile(r"^desk(\d+)-")
# The fast reset takes ~40 ms (a fork bomb's cleanup a little more); a guest that needs far
# longer is stuck, and the whole sandbox is replaced instead of waiting a request's timeout.
FAST_RESET_TIMEOUT_S = 15.0


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
        settle_horizon_ms: How long after a GUI input the settle wait still waits for an
            app's timers, one value for every app (None: by the focused app, 800 ms for
            LibreOffice, whose toolbar and status-bar refreshes come 0.3-0.73 s after the
            input, 400 ms for the rest: ``guest.settle.APP_TIMER_HORIZON_MS``; README,
            "Settle wait and typing").
        settle_app_horizons_ms: Horizons of single apps (``apps`` keys, such as
            ``{"code": 600}``) over ``settle_horizon_ms`` and the guest's table.
        enable_mcp: Start the MCP tool host beside the guest server.
        libreoffice_template: Start LibreOffice from a warmed profile (built once per
            host: ~0.45 s to a window instead of ~1.3 s).
        home_mb: Size cap of the desktop user's home (a tmpfs: RAM, counted in ``memory_mb``).
        tmp_mb: Size cap of ``/tmp``.
        shm_mb: Size cap of ``/dev/shm`` (Chromium keeps its shared memory there).
        run_mb: Size cap of ``/run`` and of ``/run/user/1000``.
        memory_mb: Memory of the whole desktop, tmpfs pages included (needs a host cgroup).
        max_tasks: Processes plus threads of the whole desktop (cgroup), and of the
            desktop user (``RLIMIT_NPROC``, enforced everywhere).
        max_user_namespaces: Nested user namespaces the desktop may create (Chromium's
            own sandbox needs a few).
        max_file_mb: Largest file the host reads back (evaluation, ``read_file``).
        extra_env: More environment variables for the desktop session.
        network: Loopback only (default), or the web through a host proxy
            (:mod:`osworld_mcp_env.network`; ``docs/security.md``, "Internet mode").
    """

    screen_width: int = 1920
    screen_height: int = 1080
    root_dir: Path | None = None
    guest_python: str = sys.executable
    start_timeout_s: float = 30.0
    request_timeout_s: float = 60.0
    settle_horizon_ms: float | None = None
    settle_app_horizons_ms: dict[str, float] = field(default_factory=dict)
    enable_mcp: bool = False
    libreoffice_template: bool = True
    home_mb: int = 2048
    tmp_mb: int = 1024
    shm_mb: int = 512
    run_mb: int = 64
    memory_mb: int = 4096
    max_tasks: int = 4096
    max_user_namespaces: int = 32
    max_file_mb: int = 128
    extra_env: dict[str, str] = field(default_factory=dict)
    network: NetworkConfig = field(default_factory=NetworkConfig)

    def __post_init__(self) -> None:
        object.__setattr__(self, "network", NetworkConfig.parse(self.network))  # also "internet" or a dict


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


def _cleanup(
    sandbox: SandboxProcess,
    cgroup: DesktopCgroup,
    directories: tuple[Path, ...],
    lock_fd: int,
    owner_pid: int,
    proxy: HostProxy,
) -> None:
    if os.getpid() != owner_pid:
        return  # a forked child inherited this handle; the desktop belongs to its parent
    sandbox.stop()
    proxy.stop()
    cgroup.close()
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.close(lock_fd)


class LocalDesktop(GuestBackedDesktop):
    """One sandboxed embedded desktop; implements the ``Desktop`` protocol."""

    config: LocalDesktopConfig

    def __init__(self, config: LocalDesktopConfig | None = None) -> None:
        self.config = config or LocalDesktopConfig()
        _check_host()
        root = self.config.root_dir or Path(tempfile.gettempdir()) / "osworld-mcp-env"
        root.mkdir(parents=True, exist_ok=True)
        os.chmod(root, 0o711)  # the sandbox uids must traverse it to reach their own directory
        _check_traversable(root)
        profile_template = _profile_template(root, self.config) if self.config.libreoffice_template else None
        self.home_template = ensure_home_template(root, profile_template)
        slots = SlotAllocator()
        self.slot, lock_fd = slots.acquire()
        _sweep_stale_instances(root, slots, self.slot)
        self.uids = UidPair.for_slot(self.slot)
        self.host_uid = self.uids.desktop
        self.instance_dir = Path(tempfile.mkdtemp(prefix=f"desk{self.slot}-", dir=root))
        os.chmod(self.instance_dir, 0o711)
        self.ctl_dir = self.instance_dir / "ctl"
        self._token = secrets.token_hex(16)
        self.generation = 0  # bumped by every sandbox start: clients of the old one are stale
        self._sandbox = SandboxProcess()
        self._proxy = HostProxy()
        self.cgroup = DesktopCgroup(
            self.instance_dir.name,
            CgroupLimits(self.config.memory_mb * 2**20, self.config.max_tasks),
        )
        self.fb_dir = _frame_dir(root, self.instance_dir.name)
        self._framebuffer: XvfbFramebuffer | None = None
        self._framebuffer_generation = -1
        self._quiet_frame = QuietFrame()
        self._finalizer = weakref.finalize(
            self,
            _cleanup,
            self._sandbox,
            self.cgroup,
            (self.instance_dir, self.fb_dir),
            lock_fd,
            os.getpid(),
            self._proxy,
        )
        self.client = GuestClient(
            unix_socket=str(self.ctl_dir / "guest.sock"),
            token=self._token,
            timeout=self.config.request_timeout_s,
            settle_horizon_ms=self.config.settle_horizon_ms,
            app_settle_horizons_ms=self.config.settle_app_horizons_ms,
        )
        _install_sigterm_cleanup()
        _LIVE.add(self)
        try:
            self._prepare_dirs()
            if self.config.network.internet:
                self._spawn_proxy()  # its start overlaps the sandbox's
            self.start()
            if self.config.network.internet:
                self._proxy.wait_ready()
        except BaseException:
            self.close()
            raise

    # --- lifecycle -----------------------------------------------------------
    def _prepare_dirs(self) -> None:
        """Host-side directories, all owned by the infrastructure uid: the desktop user owns none."""
        etc = self.instance_dir / "etc"
        for directory in (self.ctl_dir, etc):
            directory.mkdir(exist_ok=True)
        self.fb_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.fb_dir.parent, 0o711)  # bwrap resolves the bind source as the infrastructure uid
        for directory in (self.ctl_dir, self.fb_dir):
            os.chown(directory, self.uids.infra, self.uids.infra)
            os.chmod(directory, 0o700)
        (etc / "passwd").write_text(
            "root:x:0:0:root:/root:/bin/bash\n"
            f"user:x:{SANDBOX_UID}:{SANDBOX_UID}:user:/home/user:/bin/bash\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
        )
        (etc / "group").write_text(f"root:x:0:\nuser:x:{SANDBOX_UID}:\nnogroup:x:65534:\n")
        os.chmod(etc / "passwd", 0o644)
        os.chmod(etc / "group", 0o644)
        token = self.ctl_dir / "token"
        fd = os.open(token, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self._token)
        os.chown(token, self.uids.infra, self.uids.infra)

    def start(self) -> None:
        """Spawns the sandbox and waits until its guest server answers."""
        if self._sandbox.process is not None:
            raise DesktopStartError("This desktop is already running; call restart().")
        for stale in ("guest.sock", "mcp.sock"):
            # Root unlinks here safely: only the infrastructure can write this directory.
            (self.ctl_dir / stale).unlink(missing_ok=True)
        started = time.monotonic()
        self.generation += 1
        read_fd, write_fd = os.pipe()
        try:
            command = self._command(info_fd=write_fd)
            process = (
                spawner()
                .submit(
                    spawn_in_user_namespace,
                    command,
                    self.uids,
                    before_exec=self._enter_cgroup,
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

    def _spawn_proxy(self) -> None:
        """Starts the host proxy in the desktop's cgroup: what a hostile desktop makes it spend is its own."""
        self._proxy.spawn(
            self.config.network,
            self.ctl_dir / "net-proxy.sock",
            uid=self.uids.infra,
            log=self.instance_dir / "net-proxy.log",
        )
        if self._proxy.process is not None:
            self.cgroup.add(self._proxy.process.pid)

    def _enter_cgroup(self, pid: int) -> None:
        self.cgroup.add(pid)

    def set_cpu_weight(self, weight: int) -> None:
        """Sets the desktop's CPU weight against other desktops (1-10000, default 100).

        A no-op where the host gives no CPU cgroup.
        """
        self.cgroup.set_cpu_weight(weight)

    def restart(self, *, full: bool = False) -> None:
        """Returns to the episode-start state: no process of the desktop user, a fresh home.

        The fast path asks the guest to kill every process of the desktop user and to
        remount the user's tmpfs directories from the template, keeping X, the window
        manager and the servers (~0.4 s saved per reset); the guest refuses when one
        of those died or does not answer, and then the whole sandbox is replaced.

        Args:
            full: Always replace the whole sandbox.
        """
        if self.config.network.internet and not self._proxy.running:
            self._proxy.stop()
            self._spawn_proxy()  # the web comes back with the next episode
            self._proxy.wait_ready()
        if not full and self.running:
            try:
                self.client.reset_session(timeout=FAST_RESET_TIMEOUT_S)
                return
            except DesktopError:
                pass  # a broken session gets a new sandbox
        self.client.close()
        self._sandbox.stop()
        self.start()

    def close(self) -> None:
        """Stops the sandbox and deletes its directories; safe to call twice."""
        self._drop_framebuffer()
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
                    with open(log, "rb") as f:
                        f.seek(max(0, os.fstat(f.fileno()).st_size - 400))
                        tail = f.read(400).decode("utf-8", "replace").strip()
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
            # The user's site-packages would run the agent's code in every Python a setup
            # step or a getter starts inside the desktop (a .pth file in ~/.local).
            "PYTHONNOUSERSITE": "1",
            "OSWORLD_PYTHON": cfg.guest_python,
            # Read by the infrastructure only; the guest strips them from the user's processes.
            "OSWORLD_SCREEN": f"{cfg.screen_width}x{cfg.screen_height}x24",
            "OSWORLD_CTL": "/run/ctl",
            "OSWORLD_MCP": "1" if cfg.enable_mcp else "0",
            "OSWORLD_GUEST_TOKEN_FILE": "/run/ctl/token",
            "OSWORLD_DESKTOP_UID": str(SANDBOX_UID),
            "OSWORLD_HOME_TEMPLATE": "/run/osworld/home-template",
            "OSWORLD_HOME_MB": str(cfg.home_mb),
            "OSWORLD_TMP_MB": str(cfg.tmp_mb),
            "OSWORLD_SHM_MB": str(cfg.shm_mb),
            "OSWORLD_RUN_MB": str(cfg.run_mb),
            "OSWORLD_MAX_TASKS": str(cfg.max_tasks),
            "OSWORLD_MAX_USERNS": str(cfg.max_user_namespaces),
            "OSWORLD_MAX_FILE_BYTES": str(cfg.max_file_mb * 2**20),
            **cfg.network.session_env(),
            **({"OSWORLD_NET_RELAY": str(cfg.network.relay_port)} if cfg.network.internet else {}),
            **cfg.extra_env,
        }

        def size(mb: int) -> list[str]:
            return ["--size", str(mb * 2**20)]

        bwrap = [
            "bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--hostname", f"desktop{self.slot}", "--die-with-parent",
            "--new-session",
        ]  # fmt: skip
        bwrap += system_mounts()
        bwrap += [
            "--dev", "/dev", "--proc", "/proc",
            *size(cfg.tmp_mb), "--perms", "1777", "--tmpfs", "/tmp",
            *size(cfg.shm_mb), "--perms", "1777", "--tmpfs", "/dev/shm",
            *size(cfg.run_mb), "--perms", "0755", "--tmpfs", "/run",
            "--perms", "0755", "--dir", "/run/user",
            *size(cfg.run_mb), "--perms", "0700", "--tmpfs", run_user,
            "--perms", "0755", "--tmpfs", "/home",
            *size(cfg.home_mb), "--perms", "0700", "--tmpfs", inner_home,
            "--tmpfs", "/root",
            *size(16), "--perms", "1777", "--tmpfs", "/var/tmp",
            "--bind", str(self.ctl_dir), "/run/ctl",
            "--bind", str(self.fb_dir), "/run/fb",
            "--perms", "0755", "--dir", "/run/osworld",
            "--ro-bind", str(self.home_template), "/run/osworld/home-template",
            "--ro-bind", str(self.instance_dir / "etc" / "passwd"), "/etc/passwd",
            "--ro-bind", str(self.instance_dir / "etc" / "group"), "/etc/group",
        ]  # fmt: skip
        # The guest's code and interpreter: bound read-only at their own paths, with
        # the package's task definitions (expected answers) hidden.
        for path in _guest_paths(cfg.guest_python):
            bwrap += [*_parent_dirs(path), "--ro-bind", str(path), str(path)]
        for part in HIDDEN_PACKAGE_PARTS:
            if (PACKAGE_DIR / part).is_dir():
                bwrap += ["--tmpfs", str(PACKAGE_DIR / part)]
        bwrap += ["--clearenv"]
        for key, value in session_env.items():
            bwrap += ["--setenv", key, value]
        bwrap += ["--chdir", "/", "--info-fd", str(info_fd), "/bin/bash", str(GUEST_DIR / "session.sh")]
        return bwrap

    # --- Desktop protocol: the rest forwards to the guest (GuestBackedDesktop) -----
    def screenshot(self, *, with_layout: bool = False) -> ScreenCapture:
        """An RGB frame read from Xvfb's screen file, with the focused window (and layout hash).

        The focus comes first: its reply carries the screen's change count, and while
        that count stands the last frame read is still the screen (:class:`QuietFrame`).
        Falls back to the guest's ``/frame`` while the screen file cannot be read.
        """
        framebuffer = self._open_framebuffer()
        if framebuffer is not None:
            capture = self._capture(framebuffer, self.client.focus(with_layout=with_layout))
            if capture is not None:
                return capture
        return self.client.screenshot(with_layout=with_layout)

    def gui(
        self,
        action: dict[str, Any],
        *,
        expected_layout: str | None = None,
        timeout: float | None = None,
        capture: bool = False,
        with_layout: bool = False,
    ) -> GuiResult:
        """One input action plus the settle wait; with ``capture``, the screen file read after its reply.

        The reply carries the focus and change count (:meth:`GuestClient.gui_focus`), so the
        capture is :meth:`screenshot`'s without its request. Without a readable screen
        file the guest sends the frame instead.
        """
        framebuffer = self._open_framebuffer() if capture else None
        if framebuffer is None:
            return super().gui(
                action,
                expected_layout=expected_layout,
                timeout=timeout,
                capture=capture,
                with_layout=with_layout,
            )
        result, focus = self.client.gui_focus(
            action, expected_layout=expected_layout, timeout=timeout, with_layout=with_layout
        )
        return replace(result, capture=self._capture(framebuffer, focus) if focus is not None else None)

    def _capture(self, framebuffer: XvfbFramebuffer, focus: Focus) -> ScreenCapture | None:
        """The screen as of ``focus``'s reply: the last frame read while its count stands.

        None when the screen file cannot be read.
        """
        pixels = self._quiet_frame.get(self.generation, focus.changes)
        if pixels is None:
            read = framebuffer.rgb()
            if read is None:
                self._drop_framebuffer()
                return None
            pixels = self._quiet_frame.put(self.generation, focus.changes, read)
        return ScreenCapture(pixels=pixels, layout_hash=focus.layout_hash, active_window=focus.active)

    def _open_framebuffer(self) -> XvfbFramebuffer | None:
        if self._framebuffer is not None and self._framebuffer_generation == self.generation:
            return self._framebuffer
        self._drop_framebuffer()
        self._framebuffer = open_framebuffer(self.fb_dir, self.uids.infra)
        self._framebuffer_generation = self.generation
        return self._framebuffer

    def _drop_framebuffer(self) -> None:
        if self._framebuffer is not None:
            self._framebuffer.close()
            self._framebuffer = None

    def tool_socket(self) -> str | None:
        """The MCP tool host's socket in the control directory (None when tools are off)."""
        return str(self.ctl_dir / "mcp.sock") if self.config.enable_mcp else None


SYSTEM_DIRECTORIES = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SYSTEM_OPTIONAL = ("/var/lib/dbus", "/var/cache/fontconfig", "/sys")


def system_mounts() -> list[str]:
    """Read-only binds of the host's system directories; nothing else of the host is visible.

    Merged-``/usr`` hosts have ``/bin`` etc. as symlinks, which are recreated as symlinks.
    """
    args: list[str] = []
    for path in SYSTEM_DIRECTORIES:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in SYSTEM_OPTIONAL:
        if os.path.isdir(path):
            args += [*_parent_dirs(Path(path)), "--ro-bind", path, path]
    return [*args, "--perms", "0755", "--dir", "/var"]


def _parent_dirs(path: Path) -> list[str]:
    """bwrap, as namespace root, makes missing parents mode 0700: the user could not enter them."""
    args: list[str] = []
    for parent in reversed(path.parents[:-1]):
        args += ["--perms", "0755", "--dir", str(parent)]
    return args


def _frame_dir(root: Path, name: str) -> Path:
    """Where Xvfb keeps the screen file: RAM-backed ``/dev/shm`` when the host has it."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return shm / "osworld-mcp-env" / name
    return root / f"{name}-fb"


def _guest_paths(guest_python: str) -> list[Path]:
    """Host directories outside the system ones that the guest needs.

    This package's source root and the guest interpreter's environment.
    """
    package_root = PACKAGE_DIR.parent  # src/ of a checkout, or site-packages of a wheel
    venv = Path(guest_python).absolute().parent.parent
    wanted = {package_root.resolve(), venv}
    system = tuple(Path(p) for p in SYSTEM_DIRECTORIES)
    return sorted(p for p in wanted if not any(p.is_relative_to(s) for s in system))


def _profile_template(root: Path, config: LocalDesktopConfig) -> Path | None:
    from osworld_mcp_env.backends.local.lo_profile import ensure_template

    return ensure_template(root, lambda: LocalDesktop(replace(config, libreoffice_template=False)))


def _sweep_stale_instances(root: Path, slots: SlotAllocator, own_slot: int) -> None:
    """Removes what hosts killed with SIGKILL left behind: instance and frame dirs, cgroups.

    A leftover is stale when its slot's lock is free (a live host holds its slot's
    lock for the desktop's lifetime), or is the slot just acquired by the caller,
    whose own directories do not exist yet; the lock is held while it is removed.
    """
    frame_parent = _frame_dir(root, "x").parent
    candidates: dict[int, list[Path]] = {}
    for parent in (root, frame_parent):
        if not parent.is_dir():
            continue
        for entry in parent.iterdir():
            match = INSTANCE_NAME.match(entry.name)
            if match and entry.is_dir() and not entry.is_symlink():
                candidates.setdefault(int(match.group(1)), []).append(entry)
    stale_names: set[str] = set()
    for slot, paths in candidates.items():
        with slots.probe(slot) as free:
            if free or slot == own_slot:
                for path in paths:
                    shutil.rmtree(path, ignore_errors=True)
                    stale_names.add(path.name.removesuffix("-fb"))
    sweep_stale_groups(lambda name: name in stale_names or _slot_free(name, slots, own_slot))


def _slot_free(name: str, slots: SlotAllocator, own_slot: int) -> bool:
    match = INSTANCE_NAME.match(name)
    if not match:
        return False
    if int(match.group(1)) == own_slot:
        return True
    with slots.probe(int(match.group(1))) as free:
        return free


def _check_traversable(root: Path) -> None:
    """The sandbox's uids open their directories under ``root`` themselves: every parent needs o+x."""
    for parent in root.resolve().parents:
        if not os.stat(parent).st_mode & 0o001:
            raise DesktopStartError(
                f"root_dir {root} is under {parent}, which other users cannot enter; the sandbox "
                f"needs o+x on every parent (chmod o+x {parent}, or choose another root_dir)."
            )


def _check_host() -> None:
    if os.geteuid() != 0:
        raise DesktopStartError(
            "The local desktop needs root: it maps two host uids (infrastructure and desktop "
            "user) into each sandbox so that the agent cannot touch the infrastructure."
        )
    missing = [b for b in REQUIRED_BINARIES if shutil.which(b) is None]
    if missing:
        raise DesktopStartError(
            f"The local desktop needs {', '.join(missing)} on PATH; run tools/setup_debian.sh as root."
        )

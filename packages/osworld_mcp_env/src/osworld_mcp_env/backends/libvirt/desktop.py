"""The libvirt backend: each desktop is a QEMU VM booted from the image ``tools/build-image`` makes.

A domain per desktop runs on a fresh qcow2 overlay of the read-only base image.
Inside, the same session as the local backend's sandbox runs (Xvfb, the sanitized
openbox, the guest server as root, the agent's processes as ``user``); the host
reaches the guest server through a port QEMU forwards from the libvirt host's
loopback, with a bearer token handed in through fw_cfg (readable by the guest's
root only). Observations and input go through the same
:class:`~osworld_mcp_env.backends.guest_client.GuestClient` as the local backend,
so the env code is the same on both.

Readiness is the guest server answering ``/health`` (polled). Once it answers, an
internal snapshot with the VM's RAM is taken; a reset loads it back into the running
QEMU (about a second under TCG, instead of minutes of boot). A VM that died or cannot revert is replaced by a
new one on a new overlay. ``close()`` destroys the domain, undefines it and deletes
its overlay. The domain is started with libvirt's autodestroy, so a process that dies
without ``close()`` (SIGKILL, OOM) leaves no VM running; the definition and files it
leaves are removed by the next desktop's start (``vm_owner.sweep_orphaned_domains``).

With ``guest_api="osworld"`` the host speaks OSWorld's guest API only (port 5000, no
token: :class:`~osworld_mcp_env.backends.osworld_guest_client.OSWorldGuestClient`),
so an official OSWorld image (``disk_image``) runs the same env; this project's image
boots in that mode too. Chrome's 9222 and VLC's 8080 are forwarded to loopback then.

The connection URI is configurable, but the overlay and fw_cfg file are written on
this machine: a remote URI (``qemu+ssh://host/system``) needs ``work_dir`` and the
image on storage both machines see at the same path.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from osworld_mcp_env.backends.guest_backed import GuestBackedDesktop
from osworld_mcp_env.backends.guest_client import GuestClient
from osworld_mcp_env.backends.libvirt.ssh_tunnel import LOCAL_HOSTS, SshTunnel, ssh_target
from osworld_mcp_env.backends.libvirt.vm_domain import (
    DomainSpec,
    choose_accel,
    domain_xml,
    free_loopback_port,
    warn_once,
)
from osworld_mcp_env.backends.libvirt.vm_owner import DomainOwner, sweep_orphaned_domains
from osworld_mcp_env.backends.osworld_guest_client import (
    OSWORLD_FORWARDS,
    OSWORLD_GUEST_PORT,
    OSWorldGuestClient,
)
from osworld_mcp_env.errors import DesktopError, DesktopStartError, GuestRequestError
from osworld_mcp_env.guest.token_relay import HostRelay

SNAPSHOT_NAME = "ready"
GUEST_APIS = ("hybrid", "osworld")
RESET_MODES = ("snapshot", "overlay")
IMAGE_ENV = "OSWORLD_VM_IMAGE"
START_LIBVIRTD = "tools/image/start-libvirtd"


@dataclass(frozen=True)
class LibvirtDesktopConfig:
    """Settings of one desktop VM.

    Attributes:
        screen_width: Screen width in pixels (the guest's Xvfb).
        screen_height: Screen height in pixels.
        image_dir: Output of ``tools/build-image`` (``base.qcow2``, ``vmlinuz``,
            ``initrd.img``); default ``$OSWORLD_VM_IMAGE``.
        uri: libvirt connection URI. With ``qemu+ssh://[user@]host[:port]/system[?keyfile=...]``
            naming another machine, the VM's forwarded ports (on that host's loopback) are
            reached through an SSH tunnel with the same user, port and key; the overlay and
            the image must sit at the same paths on both machines (shared storage).
        accel: ``auto`` (KVM where it works, else TCG with a warning), ``kvm`` or ``tcg``.
        memory_mb: Guest RAM.
        vcpus: Guest CPUs.
        work_dir: Where overlays, console logs and fw_cfg files go; default
            ``$TMPDIR/osworld-mcp-env-vm``.
        boot_timeout_s: Deadline for a fresh VM's guest server to answer (TCG boots in ~1 min
            on an idle 2-core machine).
        reset_timeout_s: Deadline for the guest server to answer after a snapshot revert.
        request_timeout_s: Default deadline of one guest request.
        settle_horizon_ms: As :class:`~osworld_mcp_env.backends.local.desktop.LocalDesktopConfig`'s
            (this project's guest API only).
        settle_app_horizons_ms: As :class:`~osworld_mcp_env.backends.local.desktop.LocalDesktopConfig`'s
            (this project's guest API only).
        guest_port: The guest server's TCP port inside the VM (the image's: 80) under
            ``guest_api="hybrid"``; OSWorld's API is on 5000.
        warm_commands: Run as ``user`` once the guest answers and before the reset snapshot
            is taken, then undone by the guest's episode reset: the apps' files stay in the
            snapshot's page cache, so every episode's first start of them skips the disk
            (a cold Calc start under TCG missed the tasks' 30 s window wait).
        window_timeout_scale: Factor on the window waits of task setup (``open_file``):
            their timeouts assume a native desktop, and TCG runs apps ~10x slower.
        guest_api: ``hybrid``: this project's guest server (bearer token, raw frames, XTest
            input, settle and session reset). ``osworld``: OSWorld's guest API only, as an
            official OSWorld image serves it (port 5000, no token; GUI input as pyautogui
            code through ``/execute``; see ``backends/osworld_guest_client.py``). This
            project's image boots in either mode.
        disk_image: A bootable qcow2 with its own boot loader used instead of ``image_dir``:
            OSWorld's ``Ubuntu.qcow2`` (needs ``guest_api="osworld"``).
        enable_mcp: Start the MCP tool host in the VM (as in the local backend's sandbox);
            the host reaches it through :class:`~osworld_mcp_env.guest.token_relay.HostRelay`
            with the guest server's token. OSWorld's guest API serves no tools (warned once).
        tool_port: The guest's token-checking relay to the MCP tool host (the image's: 81).
        reset_mode: ``snapshot``: a reset reverts the VM to the snapshot taken once it was
            ready (seconds). ``overlay``: every reset boots a new VM on a new overlay of the
            base image (a full boot; no snapshot is taken and ``warm_commands`` are skipped,
            as the page cache they fill would not survive the next reset).
        tunnel_local: Tunnel through ssh even when a ``qemu+ssh`` URI names this machine (runs
            the remote path on one machine, as the tests do).
    """

    screen_width: int = 1920
    screen_height: int = 1080
    image_dir: Path | None = None
    uri: str = "qemu:///system"
    accel: str = "auto"
    memory_mb: int = 2048
    vcpus: int = 2
    work_dir: Path | None = None
    boot_timeout_s: float = 600.0
    reset_timeout_s: float = 120.0
    request_timeout_s: float = 60.0
    settle_horizon_ms: float | None = None
    settle_app_horizons_ms: dict[str, float] = field(default_factory=dict)
    guest_port: int = 80
    warm_commands: tuple[tuple[str, ...], ...] = (("soffice", "--calc", "--terminate_after_init"),)
    window_timeout_scale: float = 4.0
    enable_mcp: bool = False
    guest_api: str = "hybrid"
    disk_image: Path | None = None
    tool_port: int = 81
    reset_mode: str = "snapshot"
    tunnel_local: bool = False

    def __post_init__(self) -> None:
        # backend_options from a TOML or JSON config name paths as strings.
        for name in ("image_dir", "disk_image", "work_dir"):
            if isinstance(getattr(self, name), str):
                object.__setattr__(self, name, Path(getattr(self, name)))
        if self.guest_api not in GUEST_APIS:
            raise ValueError(f"guest_api must be one of {GUEST_APIS}, not {self.guest_api!r}.")
        if self.reset_mode not in RESET_MODES:
            raise ValueError(f"reset_mode must be one of {RESET_MODES}, not {self.reset_mode!r}.")
        if self.disk_image is not None and self.guest_api != "osworld":
            raise ValueError(
                "disk_image boots an image that serves OSWorld's guest API (such as OSWorld's "
                "Ubuntu.qcow2): set guest_api='osworld' with it."
            )


@dataclass
class _Domain:
    """What a live VM holds on the host; torn down by :func:`_teardown` (also at exit)."""

    uri: str
    name: str
    instance_dir: Path
    owner_pid: int
    tools: HostRelay | None


_LIVE: weakref.WeakSet[LibvirtDesktop] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for desktop in list(_LIVE):
        desktop.close()


def _teardown(domain: _Domain) -> None:
    """Destroys and undefines the domain (with its snapshot metadata) and deletes its files."""
    if os.getpid() != domain.owner_pid:
        return  # a forked child inherited this handle; the VM belongs to its parent
    import libvirt

    if domain.tools is not None:
        domain.tools.close()
    with contextlib.suppress(libvirt.libvirtError):
        conn = libvirt.open(domain.uri)
        try:
            _destroy(conn, domain.name)
        finally:
            conn.close()
    shutil.rmtree(domain.instance_dir, ignore_errors=True)


def _destroy(conn: Any, name: str) -> None:
    import libvirt

    try:
        dom = conn.lookupByName(name)
    except libvirt.libvirtError:
        return
    with contextlib.suppress(libvirt.libvirtError):
        if dom.isActive():
            dom.destroy()
    with contextlib.suppress(libvirt.libvirtError):
        dom.undefineFlags(libvirt.VIR_DOMAIN_UNDEFINE_SNAPSHOTS_METADATA)


class LibvirtDesktop(GuestBackedDesktop):
    """One desktop VM under libvirt; implements the ``Desktop`` protocol."""

    config: LibvirtDesktopConfig

    def __init__(self, config: LibvirtDesktopConfig | None = None) -> None:
        self.config = config or LibvirtDesktopConfig()
        try:
            import libvirt
        except ImportError as exc:
            raise DesktopStartError(
                "The libvirt backend needs libvirt-python: pip install 'osworld-mcp-env[libvirt]'."
            ) from exc
        self._libvirt = libvirt
        self.image_dir: Path | None = None  # this project's image: booted by its kernel
        if self.config.disk_image is not None:
            if not self.config.disk_image.is_file():
                raise DesktopStartError(
                    f"No disk image at {self.config.disk_image}: see docs/libvirt.md for "
                    "OSWorld's Ubuntu.qcow2."
                )
            self.base_disk = self.config.disk_image.resolve()
        else:
            from_env = Path(os.environ[IMAGE_ENV]) if os.environ.get(IMAGE_ENV) else None
            image = self.config.image_dir or from_env
            if image is None or not (image / "base.qcow2").is_file():
                raise DesktopStartError(
                    f"No VM image at {image}: build one with tools/build-image and pass its directory as "
                    f"image_dir (or set {IMAGE_ENV})."
                )
            self.image_dir = image.resolve()
            self.base_disk = self.image_dir / "base.qcow2"
        try:
            self._conn = libvirt.open(self.config.uri)
        except libvirt.libvirtError as exc:
            raise DesktopStartError(
                f"Cannot connect to libvirt at {self.config.uri}: {exc}. Where no service manager "
                f"runs, start the daemons with {START_LIBVIRTD} (as root)."
            ) from exc
        sweep_orphaned_domains(self._conn)  # what desktops of dead processes left
        if self.config.enable_mcp and self.config.guest_api == "osworld":
            warn_once("mcp", "OSWorld's guest API serves no MCP tools: only GUI actions reach the VM.")
        self.forwarded_ports: dict[str, int] = {}  # OSWorld's Chrome and VLC ports, on the host's loopback
        self.accel = choose_accel(
            self.config.accel, local=(urllib.parse.urlsplit(self.config.uri).hostname or "") in LOCAL_HOSTS
        )
        root = self.config.work_dir or Path(tempfile.gettempdir()) / "osworld-mcp-env-vm"
        root.mkdir(parents=True, exist_ok=True)
        self.name = f"osworld-{secrets.token_hex(6)}"
        self.instance_dir = Path(tempfile.mkdtemp(prefix=f"{self.name}-", dir=root))
        self.overlay = self.instance_dir / "overlay.qcow2"
        self.console_log = self.instance_dir / "console.log"
        self._token = secrets.token_hex(16)
        self.generation = 0  # bumped whenever the guest's processes are replaced (new VM or revert)
        self.boots = 0  # full boots; a reset by snapshot revert does not count
        self.boot_s = 0.0
        self.host_port = 0  # the guest server's port on this machine's loopback
        self._tunnel: SshTunnel | None = None  # to a remote libvirt host's loopback
        self.client = self._new_client(0)
        # The host end of the tool route; the VM's port is set at every boot.
        self._tools = HostRelay(self.instance_dir / "mcp.sock", self._token) if self._tools_wanted else None
        self._finalizer = weakref.finalize(
            self, _teardown, _Domain(self.config.uri, self.name, self.instance_dir, os.getpid(), self._tools)
        )
        _LIVE.add(self)
        try:
            self._write_fw_cfg()
            self.start()
        except BaseException:
            self.close()
            raise

    # --- lifecycle -----------------------------------------------------------
    def _write_fw_cfg(self) -> None:
        """The guest's settings, in a file only root reads here and (through fw_cfg) in the guest."""
        path = self.instance_dir / "fw_cfg"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(
                f"token={self._token}\nscreen={self.config.screen_width}x{self.config.screen_height}x24\n"
                f"api={self.config.guest_api}\nmcp={int(self._tools_wanted)}\n"
            )

    @property
    def _tools_wanted(self) -> bool:
        return self.config.enable_mcp and self.config.guest_api == "hybrid"

    def _new_client(self, port: int) -> GuestClient:
        """The client of the configured guest API on a forwarded loopback port."""
        timeout = self.config.request_timeout_s
        if self.config.guest_api == "osworld":
            return OSWorldGuestClient(host="127.0.0.1", port=port, timeout=timeout)
        return GuestClient(
            host="127.0.0.1",
            port=port,
            token=self._token,
            timeout=timeout,
            settle_horizon_ms=self.config.settle_horizon_ms,
            app_settle_horizons_ms=self.config.settle_app_horizons_ms,
        )

    def start(self) -> None:
        """Boots a VM on a fresh overlay, waits for its guest server, and takes the reset snapshot."""
        libvirt = self._libvirt
        started = time.monotonic()
        self.overlay.unlink(missing_ok=True)
        base = self.base_disk
        command = [
            "qemu-img",
            "create",
            "-q",
            "-f",
            "qcow2",
            "-F",
            "qcow2",
            "-b",
            str(base),
            str(self.overlay),
        ]
        subprocess.run(command, check=True, capture_output=True)
        self.console_log.unlink(missing_ok=True)
        # Ports on the libvirt host's loopback (QEMU's forwards); through an SSH tunnel when
        # that host is another machine, else the same ports here.
        osworld = self.config.guest_api == "osworld"
        vm_host_port = free_loopback_port()
        vm_forwards = {name: free_loopback_port() for name in OSWORLD_FORWARDS} if osworld else {}
        vm_tool_port = free_loopback_port() if self._tools is not None else None
        reach = self._reach([vm_host_port, *vm_forwards.values(), *([vm_tool_port] if vm_tool_port else [])])
        self.host_port = reach[vm_host_port]
        self.client.close()
        self.client = self._new_client(self.host_port)
        self.forwarded_ports = {name: reach[port] for name, port in vm_forwards.items()}
        if self._tools is not None and vm_tool_port is not None:
            self._tools.target = ("127.0.0.1", reach[vm_tool_port])
        forwards = [(port, OSWORLD_FORWARDS[name]) for name, port in vm_forwards.items()]
        if vm_tool_port is not None:
            forwards.append((vm_tool_port, self.config.tool_port))
        spec = DomainSpec(
            name=self.name,
            accel=self.accel,
            memory_mb=self.config.memory_mb,
            vcpus=self.config.vcpus,
            kernel=self.image_dir / "vmlinuz" if self.image_dir else None,
            initrd=self.image_dir / "initrd.img" if self.image_dir else None,
            disk=self.overlay,
            console_log=self.console_log,
            host_port=vm_host_port,
            guest_port=OSWORLD_GUEST_PORT if osworld else self.config.guest_port,
            fw_cfg_file=self.instance_dir / "fw_cfg",
            owner=DomainOwner.this_process(self.instance_dir),
            forwards=tuple(forwards),
        )
        try:
            self._launch(spec)
        except libvirt.libvirtError as exc:
            if spec.accel != "kvm" or self.config.accel != "auto":
                raise DesktopStartError(f"libvirt could not start the VM: {exc}") from exc
            warn_once("kvm-failed", f"KVM could not start a VM ({exc}): VMs run under TCG, ~10x slower.")
            self.accel = "tcg"
            try:
                self._launch(replace(spec, accel="tcg"))
            except libvirt.libvirtError as exc2:
                raise DesktopStartError(f"libvirt could not start the VM: {exc2}") from exc2
        self.generation += 1
        self.boots += 1
        self._wait_ready(started, self.config.boot_timeout_s)
        self._wait_tools(started, self.config.boot_timeout_s)
        self.boot_s = time.monotonic() - started
        if self.config.reset_mode == "overlay":
            return
        for warm in self.config.warm_commands:
            self.client.execute(list(warm), timeout=self.config.boot_timeout_s)
        if self.config.warm_commands:
            self.client.reset_session(timeout=self.config.reset_timeout_s)
        try:
            self._dom.snapshotCreateXML(f"<domainsnapshot><name>{SNAPSHOT_NAME}</name></domainsnapshot>", 0)
        except libvirt.libvirtError as exc:
            raise DesktopStartError(f"libvirt could not snapshot the ready VM: {exc}") from exc

    def _reach(self, vm_ports: list[int]) -> dict[int, int]:
        """Where this machine reaches each port of the libvirt host's loopback.

        The same port for a local URI; for a ``qemu+ssh://`` URI naming another machine a
        new SSH tunnel (the previous boot's closed) forwards fresh local ports to them.
        """
        if self._tunnel is not None:
            self._tunnel.close()
            self._tunnel = None
        target = ssh_target(self.config.uri, tunnel_local=self.config.tunnel_local)
        if target is None:
            return {port: port for port in vm_ports}
        forwards: dict[int, int] = {}
        while len(forwards) < len(vm_ports):  # with the libvirt host here too, never a VM's port
            local = free_loopback_port()
            if local not in vm_ports and local not in forwards:
                forwards[local] = vm_ports[len(forwards)]
        self._tunnel = SshTunnel(target, forwards, self.instance_dir / "ssh.log")
        return {remote: local for local, remote in forwards.items()}

    def _launch(self, spec: DomainSpec) -> None:
        """Defines and starts the domain; a failed start leaves no definition behind.

        Started with autodestroy: libvirt destroys the VM when ``self._conn`` closes, also
        when this process dies without ``close()``.
        """
        _destroy(self._conn, spec.name)
        self._dom = self._conn.defineXML(domain_xml(spec))
        try:
            self._dom.createWithFlags(self._libvirt.VIR_DOMAIN_START_AUTODESTROY)
        except self._libvirt.libvirtError:
            _destroy(self._conn, spec.name)
            raise

    def _wait_ready(self, started: float, timeout: float) -> None:
        self._wait_for(lambda: self.client.health(timeout=2.0), "guest server", started, timeout)

    def _wait_tools(self, started: float, timeout: float) -> None:
        """Waits until the MCP tool host answers through both relays.

        Before the snapshot is taken: every revert then comes back with the host listening.
        """
        if self._tools is None:
            return
        probe = GuestClient(unix_socket=str(self._tools.path), timeout=2.0)

        def answered() -> bool:
            with contextlib.suppress(GuestRequestError):
                return probe.request("GET", "/health", timeout=2.0)[0] == 200
            return False

        try:
            self._wait_for(answered, "MCP tool host", started, timeout)
        finally:
            probe.close()

    def _wait_for(self, answered: Callable[[], bool], what: str, started: float, timeout: float) -> None:
        """Polls ``answered`` until it holds; a VM that stopped or a passed deadline is a start error."""
        while not answered():
            if not self.running:
                raise DesktopStartError(f"The VM stopped before its {what} answered: {self._diagnostics()}")
            if time.monotonic() - started > timeout:
                raise DesktopStartError(
                    f"The VM's {what} did not answer within {timeout:g} s: {self._diagnostics()}"
                )
            time.sleep(0.2)

    def restart(self, *, full: bool = False) -> None:
        """Returns to the episode-start state: a snapshot revert, or a new VM on a new overlay.

        Under ``reset_mode="snapshot"`` the VM reverts to its ready snapshot; a VM that is not
        running, or whose revert or guest fails, is replaced by a new VM on a new overlay (a
        full boot), which ``reset_mode="overlay"`` does at every reset.

        Args:
            full: Always replace the VM.
        """
        if self._tools is not None:
            self._tools.drop_connections()  # their sessions die with the guest's state
        if not full and self.running and self.config.reset_mode == "snapshot":
            started = time.monotonic()
            try:
                self.client.close()
                self._load_snapshot()
                self.generation += 1
                self._wait_ready(started, self.config.reset_timeout_s)
                return
            except (self._libvirt.libvirtError, DesktopError):
                pass  # a broken VM gets a new one
        self.client.close()
        _destroy(self._conn, self.name)
        self.start()

    def _load_snapshot(self) -> None:
        """Loads the ready snapshot into the running QEMU process (its monitor's ``loadvm``).

        Not libvirt's ``revertToSnapshot``: libvirt 9 replaces the QEMU process for it, and
        the new one is not autodestroyed (measured: after one such reset, a killed owner's
        VM kept running). ``loadvm`` reads the internal snapshot libvirt's snapshot took.
        """
        import libvirt_qemu

        hmp = libvirt_qemu.VIR_DOMAIN_QEMU_MONITOR_COMMAND_HMP
        reply = libvirt_qemu.qemuMonitorCommand(self._dom, f"loadvm {SNAPSHOT_NAME}", hmp).strip()
        if reply:  # the monitor answers nothing on success, the error otherwise
            raise DesktopError(f"QEMU could not load the {SNAPSHOT_NAME!r} snapshot: {reply}")

    def close(self) -> None:
        """Destroys the VM, undefines it and deletes its overlay; safe to call twice."""
        self.client.close()
        self._finalizer()
        if self._tunnel is not None:
            self._tunnel.close()
        with contextlib.suppress(Exception):
            self._conn.close()
        _LIVE.discard(self)

    @property
    def running(self) -> bool:
        """True while the domain runs."""
        try:
            return bool(self._dom.isActive())
        except (AttributeError, self._libvirt.libvirtError):
            return False

    def _diagnostics(self) -> str:
        """The tail of the guest's serial console."""
        try:
            with open(self.console_log, "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - 800))
                return f.read().decode("utf-8", "replace").strip() or "empty console"
        except OSError:
            return "no console log"

    # --- Desktop protocol: the rest forwards to the guest (GuestBackedDesktop) -----
    def open_file(self, path: str, *, timeout: float = 30.0) -> None:
        """Opens a file with its default app and waits for its window (``window_timeout_scale`` x longer)."""
        self.client.open_file(path, timeout=timeout * self.config.window_timeout_scale)

    def tool_socket(self) -> str | None:
        """The host end of the relay to the VM's MCP tool host (None when tools are off)."""
        return str(self._tools.path) if self._tools is not None else None

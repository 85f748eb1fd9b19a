"""Ports on a remote libvirt host's loopback, reached from here through SSH local forwards.

QEMU forwards a VM's guest port to its own host's 127.0.0.1 only, so that nothing on
the network reaches the guest API. With a ``qemu+ssh://`` connection that host is
another machine: the backend then opens one ``ssh -N -L`` per VM, which binds the same
number of ports on this machine's loopback and carries each connection to the remote
loopback over the SSH connection libvirt itself uses (same user, port and key file).
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
import urllib.parse
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from osworld_mcp_env.errors import DesktopStartError

LOCAL_HOSTS = frozenset({"", "localhost", "127.0.0.1", "::1"})


@dataclass(frozen=True)
class SshTarget:
    """Where ``ssh`` connects: the libvirt URI's host, user, port and ``keyfile``."""

    host: str
    user: str | None = None
    port: int | None = None
    keyfile: str | None = None
    verify_host_key: bool = True

    def command(self) -> list[str]:
        """``ssh`` with this target's options, before the forwards and the destination."""
        command = ["ssh", "-N", "-o", "BatchMode=yes", "-o", "ExitOnForwardFailure=yes"]
        command += ["-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4"]
        if self.port is not None:
            command += ["-p", str(self.port)]
        if self.keyfile:
            command += ["-i", self.keyfile]
        if not self.verify_host_key:
            command += ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"]
        return command

    @property
    def destination(self) -> str:
        """``[user@]host``."""
        return f"{self.user}@{self.host}" if self.user else self.host


def ssh_target(uri: str, *, tunnel_local: bool = False) -> SshTarget | None:
    """The SSH target of a libvirt URI whose transport is ``ssh``, else None.

    A URI naming this machine needs no tunnel (QEMU's forwards are already on this
    loopback) unless ``tunnel_local``, which the tests use to run the remote path here.
    """
    parts = urllib.parse.urlsplit(uri)
    if not parts.scheme.endswith("+ssh") or ((parts.hostname or "") in LOCAL_HOSTS and not tunnel_local):
        return None
    query = dict(urllib.parse.parse_qsl(parts.query))
    return SshTarget(
        host=parts.hostname or "localhost",
        user=parts.username,
        port=parts.port,
        keyfile=query.get("keyfile"),
        verify_host_key=query.get("no_verify") != "1",
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class SshTunnel:
    """One ``ssh -N`` carrying local loopback ports to the remote host's loopback.

    Args:
        target: Where to connect.
        forwards: Local port -> remote loopback port.
        log_path: Where ssh's messages go (a file: a pipe nobody reads would fill up with the
            refused channels of a VM still booting, and stall ssh).
        timeout_s: How long to wait for ssh to bind every local port.

    Raises:
        DesktopStartError: ssh exited (authentication, a local port taken) or did not bind in time.
    """

    def __init__(
        self, target: SshTarget, forwards: Mapping[int, int], log_path: Path, timeout_s: float = 30.0
    ) -> None:
        self.target = target
        self.forwards = dict(forwards)
        command = target.command()
        for local, remote in self.forwards.items():
            command += ["-L", f"127.0.0.1:{local}:127.0.0.1:{remote}"]
        command.append(target.destination)
        with open(log_path, "ab") as log:
            self._process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log
            )
        self._finalizer = weakref.finalize(self, _stop, self._process)
        deadline = time.monotonic() + timeout_s
        for local in self.forwards:
            while not _listening(local):
                if self._process.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    error = log_path.read_bytes()[-500:].decode(errors="replace").strip()
                    raise DesktopStartError(
                        f"ssh to {target.destination} did not forward port {local}: {error}"
                    )
                time.sleep(0.05)

    @property
    def alive(self) -> bool:
        """True while ssh runs."""
        return self._process.poll() is None

    def close(self) -> None:
        """Stops ssh; safe to call twice."""
        self._finalizer()


def _listening(port: int) -> bool:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as probe:
        probe.settimeout(1.0)
        return probe.connect_ex(("127.0.0.1", port)) == 0

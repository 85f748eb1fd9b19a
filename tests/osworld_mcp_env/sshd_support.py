"""A private sshd on 127.0.0.1 for the tests of the libvirt backend's remote path.

It accepts one generated key for root and local forwards only; the tests point a
``qemu+ssh://`` URI at it, so the path to another libvirt host runs on this machine.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from polling import wait_until

SSHD = "/usr/sbin/sshd"


def sshd_missing() -> str | None:
    """Why a private sshd cannot run here, or None."""
    if not Path(SSHD).exists() or shutil.which("ssh-keygen") is None:
        return "no sshd (apt-get install openssh-server)"
    if os.geteuid() != 0:
        return "the private sshd logs in as root"
    return None


@dataclass(frozen=True)
class Sshd:
    """A running private sshd: its port and the key it accepts."""

    port: int
    keyfile: Path

    def uri(self, path: str = "/system") -> str:
        """A ``qemu+ssh`` libvirt URI through this sshd."""
        return f"qemu+ssh://root@127.0.0.1:{self.port}{path}?keyfile={self.keyfile}&no_verify=1"


@contextmanager
def private_sshd(folder: Path) -> Iterator[Sshd]:
    """Starts sshd on a free loopback port with a fresh host key and user key; stops it after."""
    for name in ("host_key", "user_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / name)], check=True)
    (folder / "authorized_keys").write_bytes((folder / "user_key.pub").read_bytes())
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = folder / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {folder / 'host_key'}\n"
        f"AuthorizedKeysFile {folder / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
        "AllowTcpForwarding local\n"
    )
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation directory
    process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: _accepts(port) or process.poll() is not None, 30, "sshd to listen")
        assert process.poll() is None, "sshd exited"
        yield Sshd(port, folder / "user_key")
    finally:
        process.terminate()
        process.wait(timeout=30)


def _accepts(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0

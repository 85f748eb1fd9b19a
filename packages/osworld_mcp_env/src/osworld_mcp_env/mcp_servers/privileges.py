"""The tool host's identity inside the sandbox: infrastructure outside, the desktop user within.

The tool host is infrastructure (the agent must not be able to kill, trace or
replace it), yet every file a tool touches and every program it starts belongs
to the agent. So the host binds its socket as the namespace's root, then keeps
root only as its *real and saved* uid and acts with the desktop user's
*effective* uid: the kernel checks file access against the effective uid, while
signals and ptrace from the user's processes need a match with the real or saved
uid, which they never have. Children must not inherit the real uid 0 (they could
switch back to it), so every spawn goes through :func:`spawn_kwargs`, which makes
them the user through and through.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any


def bind_unix_socket(path: str | Path) -> socket.socket:
    """A listening Unix socket only its owner can connect to (the host's root can as well)."""
    path = Path(path)
    path.unlink(missing_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    os.chmod(path, 0o600)
    sock.listen(128)
    return sock


def act_as_desktop_user(uid: int) -> None:
    """Keeps root as real and saved uid, takes ``uid`` (and gid) as the effective one."""
    if os.getuid() != 0:
        raise PermissionError("--desktop-uid needs the tool host to start as root of its namespace.")
    os.setgroups([])
    os.setresgid(0, uid, 0)
    os.setresuid(0, uid, 0)


def spawn_kwargs() -> dict[str, Any]:
    """Popen arguments that make a tool's child wholly the desktop user (empty when not acting)."""
    euid = os.geteuid()
    if os.getuid() == 0 and euid != 0:
        return {"user": euid, "group": os.getegid()}
    return {}

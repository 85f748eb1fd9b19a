"""The tool host's identity inside the sandbox: infrastructure outside, the desktop user within.

The tool host is infrastructure (the agent must not be able to kill, trace or
replace it), yet every file a tool touches and every program it starts belongs
to the agent. So the host binds its socket as the namespace's root, then keeps
root only as its *real and saved* uid and acts with the desktop user's
*effective* uid: the kernel checks file access against the effective uid, while
signals and ptrace from the user's processes need a match with the real or saved
uid, which they never have. Children must not inherit the real uid 0 (they could
switch back to it), so every program a tool starts goes through :func:`run` or
:func:`start`, which make it the user through and through (real, effective and
saved ids); ``tests/osworld_mcp_env/mcp_servers/test_mcp_hardening.py`` fails if any other
module of ``mcp_servers`` spawns a process.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Sequence
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


def run(argv: Sequence[str], *, timeout: float) -> subprocess.CompletedProcess[str]:
    """Runs a command to completion as the desktop user; stdin is empty, output captured as text.

    Raises:
        subprocess.TimeoutExpired: After ``timeout`` seconds (the child is killed).
    """
    return subprocess.run(
        list(argv),
        **_as_user(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def start(argv: Sequence[str], *, cwd: Path | None = None) -> subprocess.Popen[bytes]:
    """Starts a program (a window) as the desktop user in its own session, output discarded."""
    return subprocess.Popen(
        list(argv),
        **_as_user(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        cwd=cwd,
    )


def start_piped(argv: Sequence[str]) -> subprocess.Popen[bytes]:
    """Starts a helper as the desktop user with pipes on stdin and stdout (the accessibility worker).

    Its stderr is discarded: the user's process must not fill the tool host's log.
    """
    return subprocess.Popen(
        list(argv),
        **_as_user(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        bufsize=0,
    )


def _as_user() -> dict[str, Any]:
    """Popen arguments that make a child wholly the effective user (none when not acting).

    Only ``user`` and ``group``: ``extra_groups`` would need ``setgroups``, a capability
    the acting process no longer has; its supplementary groups are already empty.
    """
    euid = os.geteuid()
    if os.getuid() == 0 and euid != 0:
        return {"user": euid, "group": os.getegid()}
    return {}

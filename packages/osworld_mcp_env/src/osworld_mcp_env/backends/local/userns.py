"""A user namespace with two host uids: the desktop's infrastructure and its user.

bubblewrap, run unprivileged, maps exactly one uid, so everything in the sandbox
shared one host uid: the agent's processes could signal, trace and impersonate the
X server and the guest server. Here a root host writes a two-entry map instead:

===========  ==========================  =====================================
inside       host                        who
===========  ==========================  =====================================
0            ``base + 2*slot``           X, window manager, guest and MCP servers
1000         ``base + 2*slot + 1``       every process of the desktop user
===========  ==========================  =====================================

Namespace root holds capabilities only over what its namespace owns, so even the
infrastructure is unprivileged on the host; the desktop user holds none at all.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from osworld_mcp_env.errors import DesktopStartError

CHILD_SCRIPT = Path(__file__).with_name("userns_child.py")
DESKTOP_UID = 1000  # the desktop user's uid inside; ``user`` in the sandbox's passwd
HOST_UID_BASE = 3_000_000


@dataclass(frozen=True)
class UidPair:
    """The two host uids of one sandbox (also used as gids)."""

    infra: int
    desktop: int

    @classmethod
    def for_slot(cls, slot: int) -> UidPair:
        """The pair of a slot: disjoint from every other slot's and from real accounts."""
        return cls(HOST_UID_BASE + 2 * slot, HOST_UID_BASE + 2 * slot + 1)

    def id_map(self) -> str:
        """``uid_map`` / ``gid_map`` text: inside 0 -> infra, inside 1000 -> desktop."""
        return f"0 {self.infra} 1\n{DESKTOP_UID} {self.desktop} 1\n"


def spawn_in_user_namespace(
    command: Sequence[str],
    uids: UidPair,
    *,
    before_exec: Callable[[int], None] = lambda pid: None,
    pass_fds: Sequence[int] = (),
    timeout: float = 10.0,
    **popen_kwargs,
) -> subprocess.Popen:
    """Starts ``command`` as root of a new user namespace mapped onto ``uids``.

    Args:
        command: What runs as namespace root (bubblewrap).
        uids: Host uids of the infrastructure and the desktop user.
        before_exec: Called with the child's pid after the maps are written and
            before ``command`` runs (to put the process into cgroups).
        pass_fds: More descriptors the command inherits.
        timeout: Deadline for the child to create its namespace.
        **popen_kwargs: Passed to :class:`subprocess.Popen`.

    Raises:
        DesktopStartError: The host is not root, or the namespace could not be set up.
    """
    if os.geteuid() != 0:
        raise DesktopStartError(
            "The local desktop needs root: it maps two host uids (infrastructure and "
            "desktop user) into the sandbox, which an unprivileged process cannot do."
        )
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    try:
        process = subprocess.Popen(
            [sys.executable, "-I", "-S", str(CHILD_SCRIPT), str(ready_w), str(go_r), *command],
            pass_fds=(ready_w, go_r, *pass_fds),
            **popen_kwargs,
        )
    except BaseException:
        for fd in (ready_r, ready_w, go_r, go_w):
            os.close(fd)
        raise
    os.close(ready_w)
    os.close(go_r)
    try:
        if not _read_one(ready_r, timeout):
            process.kill()
            process.wait()
            raise DesktopStartError(
                f"The sandbox's user namespace was not created (exit {process.returncode})."
            )
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{process.pid}/{name}", "w") as f:
                f.write(uids.id_map())
        before_exec(process.pid)
        os.write(go_w, b"1")
    except BaseException:
        if process.poll() is None:
            process.kill()
            process.wait()
        raise
    finally:
        os.close(ready_r)
        os.close(go_w)
    return process


def _read_one(fd: int, timeout: float) -> bool:
    readable, _, _ = select.select([fd], [], [], timeout)
    return bool(readable) and os.read(fd, 1) == b"1"

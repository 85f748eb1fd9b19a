"""Memory and process bounds of one desktop, from the host's cgroups.

An agent can fill RAM-backed ``/tmp`` or fork without end; rlimits alone bound
neither well (``RLIMIT_AS`` breaks Chromium, which reserves terabytes of address
space). A cgroup per desktop bounds what its processes and tmpfs pages use. Both
layouts are handled: cgroup v2 (one unified tree) and v1 (one tree per controller,
as on hosts with a hybrid mount). Where neither is writable the desktop runs
without these bounds and :attr:`DesktopCgroup.active` says so; the sandbox's
rlimits and size-capped tmpfs mounts still hold.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP_NAME = "osworld-mcp-env"


@dataclass(frozen=True)
class CgroupLimits:
    """Bounds of one desktop.

    Attributes:
        memory_bytes: Memory of all its processes plus its tmpfs pages.
        max_tasks: Processes plus threads (Chromium alone runs a few hundred threads).
    """

    memory_bytes: int
    max_tasks: int


def _controllers_v2() -> set[str]:
    try:
        return set((CGROUP_ROOT / "cgroup.controllers").read_text().split())
    except OSError:
        return set()


def _writable(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK)


class DesktopCgroup:
    """The cgroup(s) of one desktop: created empty, filled by :meth:`add`, removed by :meth:`close`."""

    def __init__(self, name: str, limits: CgroupLimits) -> None:
        self.name = name
        self.limits = limits
        self.directories: list[Path] = []
        try:
            self._create()
        except OSError:
            self.close()
            self.directories = []

    @property
    def active(self) -> bool:
        """True when the bounds are enforced by at least one controller."""
        return bool(self.directories)

    def _create(self) -> None:
        if {"memory", "pids"} <= _controllers_v2() and _writable(CGROUP_ROOT):
            parent = CGROUP_ROOT / GROUP_NAME
            parent.mkdir(exist_ok=True)
            (CGROUP_ROOT / "cgroup.subtree_control").write_text("+memory +pids")
            (parent / "cgroup.subtree_control").write_text("+memory +pids")
            group = parent / self.name
            group.mkdir(exist_ok=True)
            self.directories.append(group)
            (group / "memory.max").write_text(str(self.limits.memory_bytes))
            (group / "memory.swap.max").write_text("0")
            (group / "pids.max").write_text(str(self.limits.max_tasks))
            return
        for controller, settings in (
            ("memory", {"memory.limit_in_bytes": self.limits.memory_bytes}),
            ("pids", {"pids.max": self.limits.max_tasks}),
        ):
            if not _writable(CGROUP_ROOT / controller):
                continue
            group = CGROUP_ROOT / controller / GROUP_NAME / self.name
            group.mkdir(parents=True, exist_ok=True)
            self.directories.append(group)
            for key, value in settings.items():
                (group / key).write_text(str(value))

    def add(self, pid: int) -> None:
        """Moves ``pid`` into the cgroup(s); its children are born inside."""
        for group in self.directories:
            (group / "cgroup.procs").write_text(str(pid))

    def close(self, timeout: float = 10.0) -> None:
        """Kills what is still inside and removes the cgroup(s)."""
        for group in self.directories:
            remove_group(group, timeout)


def remove_group(group: Path, timeout: float = 10.0) -> None:
    """SIGKILLs the members of ``group`` until it is empty, then removes it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        members = _members(group)
        if not members:
            break
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.005)
    with contextlib.suppress(OSError):
        group.rmdir()


def _members(group: Path) -> list[int]:
    try:
        return [int(p) for p in (group / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def sweep_stale_groups(is_stale: Callable[[str], bool]) -> None:
    """Removes desktop cgroups whose owner is gone (a host killed with SIGKILL cannot).

    Args:
        is_stale: Tells from a cgroup's name (the instance directory's) whether its
            desktop is dead; only empty groups are removed in any case.
    """
    bases = (CGROUP_ROOT / GROUP_NAME, CGROUP_ROOT / "memory" / GROUP_NAME, CGROUP_ROOT / "pids" / GROUP_NAME)
    for base in bases:
        if not base.is_dir():
            continue
        for group in base.iterdir():
            if group.is_dir() and is_stale(group.name):
                remove_group(group, timeout=2.0)

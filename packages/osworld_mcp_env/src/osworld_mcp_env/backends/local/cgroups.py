"""Memory and process bounds of one desktop, and its CPU weight, from the host's cgroups.

An agent can fill RAM-backed ``/tmp`` or fork without end; rlimits alone bound
neither well (``RLIMIT_AS`` breaks Chromium, which reserves terabytes of address
space). A cgroup per desktop bounds what its processes and tmpfs pages use. Both
layouts are handled: cgroup v2 (one unified tree) and v1 (one tree per controller,
as on hosts with a hybrid mount). Where neither is writable the desktop runs
without these bounds and :attr:`DesktopCgroup.active` says so; the sandbox's
rlimits and size-capped tmpfs mounts still hold.

The CPU weight is a priority, not a bound: a desktop prepared in the background for
the next episode (``prepared_reset``) gets a low one, so that under contention the
episode the agent is acting in gets the CPU first.
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
DEFAULT_CPU_WEIGHT = 100  # cgroup v2's default and scale (1-10000); v1 shares are 10.24x it


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
        self.cpu_group: Path | None = None  # where the CPU weight is set; a v1 tree of its own
        self._unified = False  # cgroup v2
        try:
            self._create()
        except OSError:
            self.close()
            self.directories = []
        with contextlib.suppress(OSError):  # a priority only: the desktop runs without one
            self._create_cpu()

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
            self._unified = True
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

    def _create_cpu(self) -> None:
        """The group whose weight :meth:`set_cpu_weight` sets; it starts at the kernel's default (100)."""
        if self._unified:
            if "cpu" in _controllers_v2():
                for parent in (CGROUP_ROOT, CGROUP_ROOT / GROUP_NAME):
                    (parent / "cgroup.subtree_control").write_text("+cpu")
                self.cpu_group = self.directories[0]
        elif _writable(CGROUP_ROOT / "cpu") and (CGROUP_ROOT / "cpu" / "cpu.shares").exists():
            group = CGROUP_ROOT / "cpu" / GROUP_NAME / self.name
            group.mkdir(parents=True, exist_ok=True)
            self.cpu_group = group

    @property
    def cpu_weight(self) -> int | None:
        """The weight the kernel holds (v1 shares read back on v2's scale); None without a CPU cgroup."""
        if self.cpu_group is None:
            return None
        try:
            if self._unified:
                return int((self.cpu_group / "cpu.weight").read_text())
            return round(int((self.cpu_group / "cpu.shares").read_text()) * DEFAULT_CPU_WEIGHT / 1024)
        except (OSError, ValueError):
            return None

    def set_cpu_weight(self, weight: int) -> None:
        """Sets the desktop's CPU weight (1-10000, default 100); a no-op without a CPU cgroup."""
        if not 1 <= weight <= 10000:
            raise ValueError(f"cpu weight must be in 1..10000, got {weight}")
        if self.cpu_group is None:
            return
        if self._unified:
            (self.cpu_group / "cpu.weight").write_text(str(weight))
        else:
            (self.cpu_group / "cpu.shares").write_text(str(max(2, weight * 1024 // DEFAULT_CPU_WEIGHT)))

    def add(self, pid: int) -> None:
        """Moves ``pid`` into the cgroup(s); its children are born inside."""
        for group in self._groups():
            (group / "cgroup.procs").write_text(str(pid))

    def close(self, timeout: float = 10.0) -> None:
        """Kills what is still inside and removes the cgroup(s)."""
        for group in self._groups():
            remove_group(group, timeout)

    def _groups(self) -> list[Path]:
        """Every group the desktop's processes join (the v1 CPU tree is apart from the bounds')."""
        extra = (
            [self.cpu_group] if self.cpu_group is not None and self.cpu_group not in self.directories else []
        )
        return [*self.directories, *extra]


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
    bases = [
        CGROUP_ROOT / GROUP_NAME,
        *(CGROUP_ROOT / tree / GROUP_NAME for tree in ("memory", "pids", "cpu")),
    ]
    for base in bases:
        if not base.is_dir():
            continue
        for group in base.iterdir():
            if group.is_dir() and is_stale(group.name):
                remove_group(group, timeout=2.0)

"""A thread's /proc files kept open and reread in place, so a CPU sample walks no paths.

A task's procfs file read from offset 0 again (``pread``) shows the task's state at that
read: the kernel regenerates the text on every read from the start. Opening the file
walks ``/proc/TID/task/TID/NAME`` through procfs's lookups, and under a VM's emulated
CPU (TCG) that walk and Python's file objects are most of a read's cost: rereading kept
descriptors is about five times cheaper than opening the same files again, natively too.

A kept file outlives its thread: its read then fails (ESRCH), every file kept for that
id is closed, and the path is opened afresh (a new thread may carry the id by then).
The files of threads a sample no longer lists are closed. How many stay open is capped,
so a desktop user who starts thousands of threads cannot exhaust the guest server's
descriptors: past the cap a file is opened, read and closed, as before.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# One read of a cgroup's thread list: some 9,000 thread ids.
CGROUP_READ = 65536


class KeptProcFiles:
    """Per-thread /proc files, opened once and reread with ``pread``; one caller at a time."""

    def __init__(self, limit: int = 1024) -> None:
        self._limit = limit
        # (tid or cgroup directory, file name; "" for /proc/TID) -> fd
        self._fds: dict[tuple[str, str], int] = {}
        weakref.finalize(self, _close_all, self._fds)

    def read(self, tid: str, name: str, size: int = 1024) -> bytes:
        """``/proc/TID/task/TID/NAME`` as the kernel writes it now; OSError once the thread is gone."""
        data = self._reread(tid, name, size)
        if data is None:  # the path is built only for a file not kept
            data = self._read_new(tid, name, f"/proc/{tid}/task/{tid}/{name}", size)
        return data

    def read_cgroup(self, directory: str, name: str) -> bytes:
        """A cgroup's file (``cgroup.threads``) as it is now; OSError once the cgroup is removed.

        Kept like a thread's, under the directory in place of a thread id. A file larger
        than one read (a user's thousands of threads) is read whole, opened afresh.
        """
        data = self._reread(directory, name, CGROUP_READ)
        if data is None:
            data = self._read_new(directory, name, f"{directory}/{name}", CGROUP_READ)
        if len(data) < CGROUP_READ:
            return data
        with open(f"{directory}/{name}", "rb") as whole:
            return whole.read()

    def _reread(self, owner: str, name: str, size: int) -> bytes | None:
        """The kept file read again; None when none is kept (any more)."""
        kept = self._fds.get((owner, name))
        if kept is None:
            return None
        try:
            return os.pread(kept, size, 0)
        except OSError:  # the thread exited; its id may belong to a new thread now
            self._forget(owner)
            return None

    def _read_new(self, owner: str, name: str, path: str, size: int) -> bytes:
        """``path`` opened, read, and kept under (``owner``, ``name``) while under the cap."""
        return self._open((owner, name), path, os.O_RDONLY, lambda fd: os.pread(fd, size, 0))

    def owner(self, tid: str) -> int:
        """The effective uid of process ``tid`` now (procfs computes a /proc/PID directory's owner per stat).

        A directory kept open stays the old task's after it exits, so call this after a
        :meth:`read` of the same id: a failed read forgets every file of the id.
        """
        kept = self._fds.get((tid, ""))
        if kept is not None:
            return os.fstat(kept).st_uid
        directory = os.O_RDONLY | os.O_DIRECTORY
        return self._open((tid, ""), f"/proc/{tid}", directory, lambda fd: os.fstat(fd).st_uid)

    def keep_only(self, owners: set[str]) -> None:
        """Closes the files of every thread and cgroup not in ``owners``."""
        for owner in {owner for owner, _name in self._fds} - owners:
            self._forget(owner)

    def close(self) -> None:
        """Closes every kept file."""
        _close_all(self._fds)

    def open_count(self) -> int:
        """How many descriptors are kept."""
        return len(self._fds)

    def _open(self, key: tuple[str, str], path: str, flags: int, use: Callable[[int], T]) -> T:
        """``use`` of ``path`` opened afresh; the descriptor is kept under ``key`` while under the cap."""
        fd = os.open(path, flags | os.O_CLOEXEC)
        try:
            value = use(fd)
        except OSError:
            os.close(fd)
            raise
        if len(self._fds) < self._limit:
            self._fds[key] = fd
        else:
            os.close(fd)
        return value

    def _forget(self, owner: str) -> None:
        for key in [key for key in self._fds if key[0] == owner]:
            os.close(self._fds.pop(key))


def _close_all(fds: dict[tuple[str, str], int]) -> None:
    while fds:
        os.close(fds.popitem()[1])

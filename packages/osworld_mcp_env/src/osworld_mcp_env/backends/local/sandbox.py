"""Process plumbing of one bubblewrap sandbox: slots, the spawner thread, PID 1 and its namespace.

Kept apart from :mod:`osworld_mcp_env.backends.local.desktop` (which decides *what* runs in the
sandbox) because these pieces carry the measured pitfalls: ``--die-with-parent`` is
bound to the forking thread, threads do not survive ``fork()``, and killing the
namespace's PID 1 kills the rest asynchronously.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import fcntl
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from osworld_mcp_env.errors import DesktopStartError

MAX_SLOTS = 4096


SLOT_DIR = Path("/run/osworld-mcp-env/slots")


class SlotAllocator:
    """Hands out instance slots with ``flock``: a crashed process frees its slots automatically.

    Slots are machine-wide (not per root directory) because a slot names the host
    uids of a sandbox: two desktops with the same slot would share uids and so
    each other's files and processes.
    """

    def __init__(self, directory: Path = SLOT_DIR) -> None:
        self._dir = directory
        self._dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self._dir, 0o700)

    def acquire(self) -> tuple[int, int]:
        """Returns (slot, fd of its held lock file); closing the fd frees the slot."""
        for slot in range(MAX_SLOTS):
            fd = self._try_lock(slot)
            if fd is not None:
                return slot, fd
        raise DesktopStartError(f"All {MAX_SLOTS} desktop slots under {self._dir} are in use.")

    @contextlib.contextmanager
    def probe(self, slot: int) -> Iterator[bool]:
        """Yields True, holding the slot's lock meanwhile, when no live desktop holds ``slot``."""
        fd = self._try_lock(slot)
        try:
            yield fd is not None
        finally:
            if fd is not None:
                os.close(fd)

    def _try_lock(self, slot: int) -> int | None:
        fd = os.open(self._dir / f"{slot}.lock", os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return fd


# One long-lived thread forks every sandbox (see the module docstring). Threads do
# not survive fork(): a forked process (AsyncVectorEnv's workers) makes its own.
_SPAWNER: tuple[int, concurrent.futures.ThreadPoolExecutor] | None = None


def spawner() -> concurrent.futures.ThreadPoolExecutor:
    """This process's long-lived thread for forking sandboxes."""
    global _SPAWNER
    if _SPAWNER is None or _SPAWNER[0] != os.getpid():
        _SPAWNER = (
            os.getpid(),
            concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="desktop-spawner"),
        )
    return _SPAWNER[1]


@dataclass
class SandboxProcess:
    """The host-side handles of one running sandbox, kept apart so a finalizer can clean them."""

    process: subprocess.Popen | None = None
    namespace_pid: int | None = None

    def stop(self) -> None:
        """Kills the namespace's PID 1 and returns once every process of the namespace is gone."""
        members = namespace_members(self.namespace_pid) if self.namespace_pid else []
        if self.namespace_pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.namespace_pid, signal.SIGKILL)
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=10)
            for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
                if stream is not None:
                    stream.close()  # the diagnostics pipe: a dead sandbox's end would leak
        # The kernel kills the rest of the namespace asynchronously: wait for it, so
        # that close() means "no process left", not "no process left soon".
        deadline = time.monotonic() + 10
        while any(_running(pid) for pid in members) and time.monotonic() < deadline:
            time.sleep(0.005)
        self.process, self.namespace_pid = None, None


def namespace_members(pid: int) -> list[int]:
    """Host pids of every process in the PID namespace of ``pid``."""
    try:
        namespace = os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return []
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{entry}/ns/pid") == namespace:
                    found.append(int(entry))
    return found


def _running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def read_child_pid(read_fd: int, process: subprocess.Popen, timeout: float) -> int | None:
    """Reads bwrap's ``--info-fd`` JSON (``{"child-pid": N, ...}``)."""
    deadline = time.monotonic() + timeout
    buffer = b""
    os.set_blocking(read_fd, False)
    try:
        while time.monotonic() < deadline:
            try:
                chunk = os.read(read_fd, 4096)
            except BlockingIOError:
                chunk = None
            if chunk:
                buffer += chunk
                try:
                    return int(json.loads(buffer)["child-pid"])
                except (json.JSONDecodeError, KeyError):
                    continue
            if chunk == b"" or process.poll() is not None:
                return None
            time.sleep(0.002)
        return None
    finally:
        os.close(read_fd)

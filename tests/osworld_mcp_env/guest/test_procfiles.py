"""The CPU witness's kept /proc files read what the thread is now, never a gone thread's."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from osworld_mcp_env.guest.procfiles import KeptProcFiles

# Prints a line once started, then spins.
SPIN = "print(flush=True)\nwhile True: pass"
# Runs as root, drops to nobody when a line arrives on stdin, then sleeps.
DROP = (
    "import os, sys, time; print(flush=True); sys.stdin.readline(); "
    "os.setresgid(65534, 65534, 65534); os.setresuid(65534, 65534, 65534); print(flush=True); time.sleep(60)"
)


def _run_ns(files: KeptProcFiles, tid: str) -> int:
    return int(files.read(tid, "schedstat").split()[0])


def test_a_kept_file_shows_the_threads_state_at_each_read():
    files = KeptProcFiles()
    with subprocess.Popen([sys.executable, "-c", SPIN], stdout=subprocess.PIPE) as spinner:
        try:
            spinner.stdout.readline()
            tid = str(spinner.pid)
            first = _run_ns(files, tid)
            assert files.open_count() == 1
            # The spinner runs: its run time grows, read through the same descriptor.
            while _run_ns(files, tid) == first:
                pass
            assert files.open_count() == 1
            assert files.read(tid, "stat").rsplit(b")", 1)[1].split()[0] in (b"R", b"S")
        finally:
            spinner.kill()
            spinner.wait()
    # Gone (and reaped): the kept file fails and is forgotten, the path no longer opens.
    with pytest.raises(OSError):
        files.read(tid, "schedstat")
    assert files.open_count() == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping to another user needs root")
def test_the_owner_follows_a_process_that_drops_to_another_user():
    """The desktop user's threads are told apart by owner: a kept directory must not go stale."""
    files = KeptProcFiles()
    command = [sys.executable, "-c", DROP]
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as child:
        try:
            child.stdout.readline()
            tid = str(child.pid)
            assert files.owner(tid) == 0
            child.stdin.write(b"\n")
            child.stdin.flush()
            child.stdout.readline()  # it dropped
            assert files.owner(tid) == 65534
            assert files.open_count() == 1
        finally:
            child.kill()
            child.wait()


def test_past_the_cap_files_are_read_and_closed():
    """A user who starts many threads cannot make the server hold a descriptor for each."""
    files = KeptProcFiles(limit=2)
    tid = str(os.getpid())
    before = len(os.listdir("/proc/self/fd"))
    for name in ("schedstat", "stat", "syscall", "status", "comm"):
        assert files.read(tid, name)
    assert files.open_count() == 2
    assert len(os.listdir("/proc/self/fd")) == before + 2


def test_files_of_threads_no_longer_listed_are_closed():
    files = KeptProcFiles()
    own = str(os.getpid())
    with subprocess.Popen(["sleep", "60"]) as child:
        try:
            files.read(own, "stat")
            files.read(str(child.pid), "stat")
            files.owner(str(child.pid))
            assert files.open_count() == 3
            files.keep_only({own})
            assert files.open_count() == 1
            files.close()
            assert files.open_count() == 0
        finally:
            child.kill()
            child.wait()


def test_a_cgroup_list_longer_than_one_read_is_read_whole(tmp_path):
    """A user's thousands of threads make ``cgroup.threads`` longer than one read: none is lost."""
    listing = "".join(f"{tid}\n" for tid in range(100_000, 120_000)).encode()
    (tmp_path / "cgroup.threads").write_bytes(listing)
    files = KeptProcFiles()
    assert files.read_cgroup(str(tmp_path), "cgroup.threads") == listing
    (tmp_path / "cgroup.threads").write_bytes(b"7\n")
    assert files.read_cgroup(str(tmp_path), "cgroup.threads") == b"7\n"  # the kept file, reread

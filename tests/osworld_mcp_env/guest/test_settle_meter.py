"""The settle wait's CPU witness reads the desktop's threads, not the kernel's.

A VM's guest server sees the whole VM's /proc, kernel threads included, like this test
on the host does; reading them made each CPU sample cost 134 ms under TCG. There it
reads the session's cgroup instead.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from osworld_mcp_env.guest.settle import CpuMeter, is_kernel_thread, own_cgroup


def test_the_cpu_meter_skips_kernel_threads_and_reads_processes():
    kernel = {pid for pid in os.listdir("/proc") if pid.isdigit() and is_kernel_thread(pid)}
    if not kernel:
        pytest.skip("no kernel threads visible here (a PID namespace)")
    assert "2" in kernel  # kthreadd
    meter = CpuMeter()
    with subprocess.Popen(["sleep", "60"]) as child:
        try:
            threads = dict(meter.threads())
            assert threads[str(child.pid)] is True  # its main thread
            assert str(os.getpid()) not in threads  # the meter's own process
            assert not threads.keys() & kernel
            sample = meter.sample()
            assert sample.run_s > 0
        finally:
            child.kill()


def test_a_gone_process_is_no_kernel_thread():
    with subprocess.Popen(["true"]) as child:
        child.wait()
    assert not is_kernel_thread(str(child.pid))
    assert not is_kernel_thread("not-a-pid")


def _cgroup2_mount() -> Path | None:
    for line in Path("/proc/mounts").read_text().splitlines():
        fields = line.split()
        if fields[2] == "cgroup2" and os.access(fields[1], os.W_OK):
            return Path(fields[1])
    return None


@pytest.fixture
def cgroup() -> Iterator[Path]:
    """A fresh cgroup v2 directory; its processes are the test's to kill before removal."""
    mount = _cgroup2_mount()
    if mount is None:
        pytest.skip("no writable cgroup v2 hierarchy here")
    group = mount / f"osworld-settle-test-{secrets.token_hex(4)}"
    group.mkdir()
    try:
        yield group
    finally:
        subgroups = [path for path in group.rglob("*") if path.is_dir()]
        for directory in [*sorted(subgroups, reverse=True), group]:
            directory.rmdir()


def test_the_cpu_meter_reads_only_its_cgroup_subtree(cgroup):
    """A VM's desktop is the session's cgroup: its processes and subgroups, nothing else."""
    # As a user other than root: the meter keeps run times of desktop users' main threads.
    children = [subprocess.Popen(["sleep", "60"], user=65534) for _ in range(3)]
    member, nested, outsider = (str(child.pid) for child in children)
    try:
        (cgroup / "cgroup.procs").write_text(member)
        meter = CpuMeter(cgroup)
        assert meter.threads() == [(member, True)]  # no subgroup: the cgroup alone is read
        # A subgroup made later shows in the next listing (cgroup.stat counts it).
        (cgroup / "inner").mkdir()
        (cgroup / "inner" / "cgroup.procs").write_text(nested)
        assert sorted(meter.threads()) == sorted([(member, True), (nested, True)])
        assert set(meter.sample().main_ns) == {member, nested}  # not the outsider
        # The cgroup's lists are reread through kept descriptors: a process that joins shows.
        (cgroup / "inner" / "cgroup.procs").write_text(outsider)
        assert set(meter.sample().main_ns) == {member, nested, outsider}
    finally:
        for child in children:
            child.kill()
            child.wait()


def test_the_cpu_meter_leaves_out_its_own_threads_in_its_cgroup(cgroup):
    """The guest server is in the session's cgroup too."""
    lines = Path("/proc/self/cgroup").read_text().splitlines()
    home = cgroup.parent / next(line[3:] for line in lines if line.startswith("0::")).lstrip("/")
    (cgroup / "cgroup.procs").write_text(str(os.getpid()))
    try:
        assert CpuMeter(cgroup).threads() == []
    finally:
        (home / "cgroup.procs").write_text(str(os.getpid()))


def test_own_cgroup_is_none_at_the_root_or_a_cgroup_v2_directory():
    group = own_cgroup()
    assert group is None or (group / "cgroup.threads").is_file()

"""The settle wait's CPU witness reads the desktop's threads, not the kernel's.

A VM's guest server sees the whole VM's /proc, kernel threads included, like this test
on the host does; reading them made each CPU sample cost 134 ms under TCG.
"""

from __future__ import annotations

import os
import subprocess

import pytest
from osworld_mcp_env.guest.settle import CpuMeter, is_kernel_thread


def test_the_cpu_meter_skips_kernel_threads_and_reads_processes():
    kernel = {pid for pid in os.listdir("/proc") if pid.isdigit() and is_kernel_thread(pid)}
    if not kernel:
        pytest.skip("no kernel threads visible here (a PID namespace)")
    assert "2" in kernel  # kthreadd
    meter = CpuMeter()
    with subprocess.Popen(["sleep", "60"]) as child:
        try:
            pids = set(meter.pids())
            assert str(child.pid) in pids
            assert str(os.getpid()) not in pids  # the meter's own process
            assert not pids & kernel
            sample = meter.sample()
            assert sample.run_s > 0
        finally:
            child.kill()


def test_a_gone_process_is_no_kernel_thread():
    with subprocess.Popen(["true"]) as child:
        child.wait()
    assert not is_kernel_thread(str(child.pid))
    assert not is_kernel_thread("not-a-pid")

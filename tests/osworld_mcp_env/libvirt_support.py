"""What the libvirt test modules share: why a machine cannot run VMs, daemon and QEMU lookups.

The session fixtures built on these (``vm_image``, ``libvirt_daemon``) live in
``conftest.py``, so each test session builds or finds the image and starts libvirtd once.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
BINARIES = ("debootstrap", "mkfs.ext4", "qemu-img", "qemu-system-x86_64", "libvirtd", "virtlogd")
DAEMON_PIDFILES = (Path("/run/libvirtd.pid"), Path("/run/virtlogd.pid"))
ENV_ID = "osworld_mcp_env:OSWorldMCP-v0"
# A cold image build (debootstrap + LibreOffice, Chromium, GIMP, ...) plus a TCG boot on a busy
# 2-core machine: generous, as every deadline here; nothing is asserted about speed.
SLOW_S = 3600


def libvirt_missing() -> str | None:
    """Why this machine cannot build or run the VM, or None."""
    if os.geteuid() != 0:
        return "building the image (debootstrap, chroot) needs root"
    missing = [b for b in BINARIES if shutil.which(b) is None]
    if missing:
        packages = "debootstrap qemu-system-x86 qemu-utils libvirt-daemon-system"
        return f"missing {', '.join(missing)} (apt-get install {packages})"
    try:
        import libvirt  # noqa: F401
    except ImportError:
        return "libvirt-python is not installed (the osworld-mcp-env[libvirt] extra)"
    return None


def daemon_pids() -> list[int]:
    """The running libvirtd and virtlogd, by their pid files (a zombie awaiting its reaper is not running)."""
    pids = []
    for pidfile in DAEMON_PIDFILES:
        try:
            pid = int(pidfile.read_text())
            stat = Path(f"/proc/{pid}/stat").read_text()
        except (OSError, ValueError):
            continue
        if stat.rsplit(")", 1)[1].split()[0] != "Z":
            pids.append(pid)
    return pids


def qemu_processes(name: str) -> list[int]:
    """QEMU processes whose command line mentions ``name`` (a domain name, a work folder)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if b"qemu-system" in cmdline and name.encode() in cmdline:
                found.append(int(entry))
    return found


def score_episode(env: Any, actions: list[dict]) -> float:
    """Steps ``actions`` until the episode ends and returns its reward; no step may be an error."""
    for action in actions:
        _obs, reward, terminated, truncated, info = env.step(action)
        assert "error" not in info, info["error"]
        if terminated or truncated:
            return float(reward)
    raise AssertionError("the action list did not end the episode")

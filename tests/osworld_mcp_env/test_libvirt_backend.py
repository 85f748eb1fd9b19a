"""The libvirt backend end to end: a QEMU VM from the image tools/build-image makes.

Skipped where the machine cannot build or run the VM (no root, no debootstrap,
libvirt or libvirt-python). The image is built once per content (a cached build
returns at once); libvirtd is started by tools/image/start-libvirtd when no daemon
runs, and stopped again at the end of the session. One VM serves the module:
a boot under TCG takes a minute or more, a reset by snapshot revert seconds.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest
from osworld_mcp_env.tasks.bundled import bundled_solution

REPO = Path(__file__).resolve().parents[2]
BINARIES = ("debootstrap", "mkfs.ext4", "qemu-img", "qemu-system-x86_64", "libvirtd", "virtlogd")
DAEMON_PIDFILES = (Path("/run/libvirtd.pid"), Path("/run/virtlogd.pid"))
ENV_ID = "osworld_mcp_env:OSWorldMCP-v0"
# A cold image build (debootstrap + LibreOffice, Chromium, GIMP, ...) plus a TCG boot on a busy
# 2-core machine: generous, as every deadline here; nothing is asserted about speed.
SLOW_S = 3600

pytestmark = [pytest.mark.libvirt, pytest.mark.slow, pytest.mark.timeout(SLOW_S)]


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


@pytest.fixture(scope="session")
def vm_image() -> Path:
    """The image: ``$OSWORLD_VM_IMAGE``, else built by tools/build-image (or reused from its cache)."""
    reason = libvirt_missing()
    if reason:
        pytest.skip(f"libvirt backend unavailable: {reason}")
    if os.environ.get("OSWORLD_VM_IMAGE"):
        return Path(os.environ["OSWORLD_VM_IMAGE"])
    done = subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), str(REPO / "tools" / "build-image")],
        capture_output=True,
        text=True,
        timeout=SLOW_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return Path(done.stdout.split()[-1])


def _daemon_pids() -> list[int]:
    pids = []
    for pidfile in DAEMON_PIDFILES:
        try:
            pid = int(pidfile.read_text())
            os.kill(pid, 0)
        except (OSError, ValueError):
            continue
        pids.append(pid)
    return pids


@pytest.fixture(scope="session")
def libvirt_daemon(vm_image: Path) -> Iterator[str]:
    """A libvirtd to talk to; the one this session started is stopped at its end."""
    before = set(_daemon_pids())
    subprocess.run(["bash", str(REPO / "tools" / "image" / "start-libvirtd")], check=True, timeout=300)
    started = set(_daemon_pids()) - before
    yield "qemu:///system"
    for pid in started:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while set(_daemon_pids()) & started and time.monotonic() < deadline:
        time.sleep(0.1)


@pytest.fixture(scope="module")
def vm_env(vm_image: Path, libvirt_daemon: str) -> Iterator[gym.Env]:
    """One env on one VM for the module."""
    env = gym.make(
        ENV_ID,
        backend="libvirt",
        enable_mcp=False,
        backend_options={"image_dir": vm_image, "uri": libvirt_daemon},
    )
    yield env
    env.close()


def _run(env: gym.Env, actions: list[dict]) -> float:
    for action in actions:
        _obs, reward, terminated, truncated, info = env.step(action)
        assert "error" not in info, info["error"]
        if terminated or truncated:
            return float(reward)
    raise AssertionError("the action list did not end the episode")


def _qemu_processes(name: str) -> list[int]:
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


def test_calc_task_scores_by_the_gui_route_as_on_the_local_backend(vm_env: gym.Env) -> None:
    scores = {}
    for variant in ("oracle", "wrong"):
        obs, info = vm_env.reset(seed=0, options={"task": "calc-sum-column"})
        assert "error" not in info, info.get("error")
        assert obs["screenshot"].shape == (1080, 1920, 3)
        assert obs["screenshot"].any()  # the guest's screen, not a black frame
        scores[variant] = _run(vm_env, bundled_solution("calc-sum-column", variant))
    # The local backend's scores for the same scripts (test_env_desktop.py).
    assert scores == {"oracle": 1.0, "wrong": 0.0}


def test_reset_reverts_the_snapshot_and_drops_what_the_episode_wrote(vm_env: gym.Env) -> None:
    vm_env.reset(seed=0, options={"task": "calc-sum-column"})
    desktop = vm_env.unwrapped.desktop
    boots = desktop.boots
    desktop.upload_file("/home/user/episode-marker.txt", b"written in the episode")
    assert desktop.execute(["cat", "/home/user/episode-marker.txt"]).output == "written in the episode"
    vm_env.reset(seed=0, options={"task": "calc-sum-column"})
    assert desktop.read_file("/home/user/episode-marker.txt") is None
    assert desktop.boots == boots  # the reset reverted the snapshot; it did not boot a new VM


def test_close_leaves_no_domain_overlay_or_qemu_process(vm_env: gym.Env) -> None:
    import libvirt

    desktop = vm_env.unwrapped.desktop
    name, instance_dir, overlay = desktop.name, desktop.instance_dir, desktop.overlay
    assert overlay.is_file() and _qemu_processes(name)
    vm_env.close()
    conn = libvirt.open("qemu:///system")
    try:
        assert name not in [d.name() for d in conn.listAllDomains()]
    finally:
        conn.close()
    assert not overlay.exists() and not instance_dir.exists()
    assert _qemu_processes(name) == []

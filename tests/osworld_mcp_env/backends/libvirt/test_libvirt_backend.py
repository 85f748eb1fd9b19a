"""The libvirt backend end to end: a QEMU VM from the image tools/build-image makes.

Skipped where the machine cannot build or run the VM (no root, no debootstrap,
libvirt or libvirt-python). The image is built once per content (a cached build
returns at once); libvirtd is started by tools/image/start-libvirtd when no daemon
runs, and stopped again at the end of the session. A boot under TCG takes a minute
or more and a reset by snapshot revert seconds, so one env (with MCP tools) serves
the tests in file order: GUI route, tool route, snapshot reset, who reaches the tool
host, a killed VM (which boots a new one), and ``close()``. The reset by a new
overlay boots its own VM twice, after that env is closed.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest
from libvirt_support import ENV_ID, SLOW_S, qemu_processes, score_episode
from osworld_mcp_env.backends import make_desktop
from osworld_mcp_env.tasks.bundled import bundled_solution
from polling import wait_until

TASK = "calc-sum-column"
CLICK = {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [400, 300]}}
SET_CELL = {"name": "libreoffice_calc.set_cell_value", "arguments": {"cell": "C1", "value": "7"}}
# Run as the desktop user inside the VM: present a token to the tool relay (port 81) and
# print what comes back (b'' when the relay closes the connection unanswered).
RELAY_PROBE = """
import socket, sys
s = socket.create_connection(("127.0.0.1", 81), timeout=60)
s.settimeout(60)
try:
    s.sendall(sys.argv[1].encode() + b"\\nGET /health HTTP/1.1\\r\\nHost: 127.0.0.1:8000\\r\\n\\r\\n")
    print(repr(s.recv(200)))
except ConnectionResetError:
    print("reset")
"""

pytestmark = [pytest.mark.libvirt, pytest.mark.slow, pytest.mark.timeout(SLOW_S)]


@pytest.fixture(scope="module")
def vm_env(vm_image: Path, libvirt_daemon: str) -> Iterator[gym.Env]:
    """One env with MCP tools on one VM (snapshot resets) for the module."""
    env = gym.make(
        ENV_ID,
        backend="libvirt",
        enable_mcp=True,
        backend_options={"image_dir": vm_image, "uri": libvirt_daemon},
    )
    yield env
    env.close()


def _snapshot_count(uri: str, name: str) -> int:
    import libvirt

    conn = libvirt.open(uri)
    try:
        return int(conn.lookupByName(name).snapshotNum(0))
    finally:
        conn.close()


def test_calc_task_scores_by_the_gui_route_as_on_the_local_backend(vm_env: gym.Env) -> None:
    scores = {}
    for variant in ("oracle", "wrong"):
        obs, info = vm_env.reset(seed=0, options={"task": TASK})
        assert "error" not in info, info.get("error")
        assert obs["screenshot"].shape == (1080, 1920, 3)
        assert obs["screenshot"].any()  # the guest's screen, not a black frame
        scores[variant] = score_episode(vm_env, bundled_solution(TASK, variant))
    # The local backend's scores for the same scripts (test_env_desktop.py).
    assert scores == {"oracle": 1.0, "wrong": 0.0}


def test_calc_task_scores_by_the_tool_route_as_on_the_local_backend(vm_env: gym.Env) -> None:
    _obs, info = vm_env.reset(seed=0, options={"task": TASK})
    # The catalog came from the VM's tool host, listed through both relays.
    assert any(t["name"] == SET_CELL["name"] for t in info["tools"]), info.get("tools_error")
    script = bundled_solution(TASK, "tools")
    assert {a["name"] for a in script[:-1]} <= {t["name"] for t in info["tools"]}
    # The local backend's score for the same script (test_env_tools.py).
    assert score_episode(vm_env, script) == 1.0


def test_reset_reverts_the_snapshot_and_drops_what_the_episode_wrote(vm_env: gym.Env) -> None:
    vm_env.reset(seed=0, options={"task": TASK})
    desktop = vm_env.unwrapped.desktop
    boots = desktop.boots
    desktop.upload_file("/home/user/episode-marker.txt", b"written in the episode")
    assert desktop.execute(["cat", "/home/user/episode-marker.txt"]).output == "written in the episode"
    vm_env.reset(seed=0, options={"task": TASK})
    assert desktop.read_file("/home/user/episode-marker.txt") is None
    assert desktop.boots == boots  # the reset reverted the snapshot; it did not boot a new VM


def test_the_desktop_user_cannot_reach_the_tool_host(vm_env: gym.Env) -> None:
    """Inside the VM, the user's processes can connect to the relay's port but get nothing through.

    As in the local sandbox, the tool host's socket and the token are root's.
    """
    vm_env.reset(seed=0, options={"task": TASK})
    desktop = vm_env.unwrapped.desktop
    assert desktop.execute(["id", "-un"]).output.strip() == "user"
    assert not desktop.execute(["cat", "/run/ctl/token"]).ok
    assert not desktop.execute(
        ["python3", "-c", "import socket; socket.socket(socket.AF_UNIX).connect('/run/ctl/mcp.sock')"]
    ).ok
    for token in ("", "0" * 32):
        probe = desktop.execute(["python3", "-c", RELAY_PROBE, token])
        assert probe.ok and probe.output.strip() in ("b''", "reset"), (probe.output, probe.error)


def test_a_killed_vm_is_an_error_value_and_the_next_reset_recovers(vm_env: gym.Env) -> None:
    vm_env.reset(seed=0, options={"task": TASK})
    desktop = vm_env.unwrapped.desktop
    (qemu,) = qemu_processes(desktop.name)
    os.kill(qemu, signal.SIGKILL)
    wait_until(lambda: not qemu_processes(desktop.name), timeout=120, what="QEMU gone")
    for action in (CLICK, SET_CELL):
        _obs, reward, terminated, truncated, info = vm_env.step(action)  # values, no exception
        assert reward == 0.0 and not terminated and not truncated
        assert info["error"]["code"] == "desktop_error", (action, info["error"])
    obs, info = vm_env.reset(seed=0, options={"task": TASK})
    assert "error" not in info, info.get("error")
    assert obs["screenshot"].any()
    # Recovered by the backend (the domain restored from its snapshot, or a new VM on a new
    # overlay) or, when that failed, by the env with a new desktop (``desktop_replaced``).
    recovered = vm_env.unwrapped.desktop
    assert recovered.running and qemu_processes(recovered.name), info.get("desktop_replaced")
    assert score_episode(vm_env, bundled_solution(TASK, "tools")) == 1.0
    # The recovered VM has its ready snapshot: the next reset reverts it, with no boot.
    boots = recovered.boots
    vm_env.reset(seed=0, options={"task": TASK})
    assert vm_env.unwrapped.desktop is recovered and recovered.boots == boots


def test_close_leaves_no_domain_overlay_or_qemu_process(vm_env: gym.Env) -> None:
    import libvirt

    desktop = vm_env.unwrapped.desktop
    name, instance_dir, overlay = desktop.name, desktop.instance_dir, desktop.overlay
    assert overlay.is_file() and qemu_processes(name)
    vm_env.close()
    conn = libvirt.open("qemu:///system")
    try:
        assert name not in [d.name() for d in conn.listAllDomains()]
    finally:
        conn.close()
    assert not overlay.exists() and not instance_dir.exists()
    assert qemu_processes(name) == []


def test_reset_by_a_new_overlay_drops_what_the_episode_wrote(vm_image: Path, libvirt_daemon: str) -> None:
    """reset_mode='overlay': every reset boots a new VM from the base image (no snapshot)."""
    desktop = make_desktop(
        "libvirt",
        screen_width=1920,
        screen_height=1080,
        image_dir=vm_image,
        uri=libvirt_daemon,
        reset_mode="overlay",
        warm_commands=(),
    )
    try:
        desktop.upload_file("/home/user/episode-marker.txt", b"written in the episode")
        # Past the guest's episode reset: only a new disk drops this one.
        assert desktop.execute(["sh", "-c", "echo system > /var/tmp/marker; cat /var/tmp/marker"]).ok
        assert desktop.read_file("/home/user/episode-marker.txt") == b"written in the episode"
        desktop.restart()
        # A new boot on a new disk: the overlay's inode number proves nothing (ext4 hands the
        # deleted overlay's number to the new file); what the episode wrote being gone does.
        assert desktop.boots == 2
        assert desktop.read_file("/home/user/episode-marker.txt") is None
        assert desktop.read_file("/var/tmp/marker") is None
        assert _snapshot_count(libvirt_daemon, desktop.name) == 0
    finally:
        desktop.close()

"""OSWorld's guest contract end to end: the env driving a VM through OSWorld's API only.

An official OSWorld image serves its guest API on port 5000 without a token, and
nothing of this project's hybrid routes. This project's image boots that way when
the host asks for ``guest_api="osworld"`` (fw_cfg ``api=osworld``): its guest server
is relayed on the VM's port 5000 with no token, QEMU forwards it (and Chrome's 9222,
VLC's 8080) to the host's loopback, and the host uses
:class:`~osworld_mcp_env.backends.osworld_guest_client.OSWorldGuestClient`: PNG
screenshots, pyautogui code through ``/execute``, the snapshot revert as reset.
The bundled calc task must score as on the local backend.

Same requirements and skips as ``test_libvirt_backend.py`` (root, libvirtd, the
image); one VM serves the module.
"""

from __future__ import annotations

import http.client
import socket
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest
from libvirt_support import ENV_ID, SLOW_S, score_episode
from osworld_mcp_env.backends.osworld_guest_client import OSWorldGuestClient
from osworld_mcp_env.backends.pyautogui_code import pyautogui_command
from osworld_mcp_env.errors import InputRejected
from osworld_mcp_env.tasks.bundled import bundled_solution

TASK = "calc-sum-column"
NO_ACTION = [{"name": "computer_use", "arguments": {"action": "terminate", "status": "success"}}]


def on_vm(test):
    """Marks a test that boots the module's VM (run with ``-m libvirt_extended``: CI's time goes to
    test_libvirt_backend.py)."""
    marks = (pytest.mark.libvirt, pytest.mark.libvirt_extended, pytest.mark.slow, pytest.mark.timeout(SLOW_S))
    for mark in marks:
        test = mark(test)
    return test


def test_pyautogui_code_is_python_and_refuses_what_pyautogui_would_drop() -> None:
    command = pyautogui_command("left_click", {"coordinate": [10, 20], "keys": ["ctrl", "Shift"]})
    assert command[:2] == ["python", "-c"]
    compile(command[2], "<pyautogui>", "exec")  # held keys make a try/finally block
    assert "pyautogui.keyDown('ctrl'); pyautogui.keyDown('shift')" in command[2]
    assert "pyautogui.click(x=10, y=20, clicks=1" in command[2]
    assert "pyautogui.hotkey(*['ctrl', 'home'])" in pyautogui_command("key", {"keys": ["ctrl", "Home"]})[2]
    assert (
        "pyautogui.scroll(-2, x=5, y=6)"
        in pyautogui_command("scroll", {"pixels": -100, "coordinate": [5, 6]})[2]
    )
    for action, arguments in (
        ("key", {"keys": ["hyper_x"]}),
        ("type", {"text": "naïve"}),
        ("wait", {"time": 1}),
    ):
        with pytest.raises(InputRejected):
            pyautogui_command(action, arguments)


@pytest.fixture(scope="module")
def osworld_env(vm_image: Path, libvirt_daemon: str) -> Iterator[gym.Env]:
    """One env on one VM of this project's image, reached through OSWorld's API only."""
    env = gym.make(
        ENV_ID,
        backend="libvirt",
        enable_mcp=False,
        # Each action starts python and pyautogui in the VM and polls PNG screenshots: under TCG
        # on a busy machine a step took tens of seconds, near the default 60 s deadline.
        step_timeout_s=180.0,
        backend_options={"image_dir": vm_image, "uri": libvirt_daemon, "guest_api": "osworld"},
    )
    yield env
    env.close()


@on_vm
def test_calc_task_scores_through_osworlds_api_as_on_the_local_backend(osworld_env: gym.Env) -> None:
    scores = {}
    for variant, actions in (("oracle", bundled_solution(TASK, "oracle")), ("no action", NO_ACTION)):
        obs, info = osworld_env.reset(seed=0, options={"task": TASK})
        assert "error" not in info, info.get("error")
        assert obs["screenshot"].shape == (1080, 1920, 3) and obs["screenshot"].any()
        assert obs["active_app"] == "libreoffice_calc"  # the focused window, from the window script
        scores[variant] = score_episode(osworld_env, actions)
    # The local backend's scores for the same scripts (test_env_desktop.py).
    assert scores == {"oracle": 1.0, "no action": 0.0}


@on_vm
def test_the_guest_answers_as_osworlds_does_on_loopback_ports(osworld_env: gym.Env) -> None:
    desktop = osworld_env.unwrapped.desktop
    assert isinstance(desktop.client, OSWorldGuestClient)
    # No token: a bare request to the forwarded port 5000 is answered, as OSWorld's server answers it.
    conn = http.client.HTTPConnection("127.0.0.1", desktop.host_port, timeout=60)
    try:
        conn.request("GET", "/platform")
        response = conn.getresponse()
        assert (response.status, response.read()) == (200, b"Linux")
    finally:
        conn.close()
    # Chrome's and VLC's ports are forwarded, on the host's loopback only.
    assert sorted(desktop.forwarded_ports) == ["chrome_devtools", "vlc_http"]
    for port in (desktop.host_port, *desktop.forwarded_ports.values()):
        assert _listening_addresses(port) == {"127.0.0.1"}
        socket.create_connection(("127.0.0.1", port), timeout=30).close()


def _listening_addresses(port: int) -> set[str]:
    """The local addresses a TCP socket listens on ``port`` at (from /proc/net/tcp and tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                address, hex_port = local.rsplit(":", 1)
                if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                    raw = bytes.fromhex(address)
                    # The kernel prints each 32-bit word in host (little-endian) order.
                    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
                    found.add(socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, words))
    return found

"""The libvirt backend on a host reached over SSH: the remote path, run against this machine.

A ``qemu+ssh://`` URI through a private sshd defines the VM, and with ``tunnel_local``
the VM's forwarded ports (the guest API and the tool relay) are reached through the
backend's SSH tunnel rather than directly, as they would be on another machine.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest
from libvirt_support import ENV_ID, SLOW_S, score_episode
from osworld_mcp_env.tasks.bundled import bundled_solution
from polling import wait_until
from sshd_support import Sshd, private_sshd, sshd_missing

pytestmark = [
    pytest.mark.libvirt,
    pytest.mark.libvirt_extended,
    pytest.mark.slow,
    pytest.mark.timeout(SLOW_S),
]
TASK = "calc-sum-column"


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    reason = sshd_missing()
    if reason:
        pytest.skip(reason)
    with private_sshd(tmp_path_factory.mktemp("sshd")) as running:
        yield running


def test_a_vm_on_a_host_reached_over_ssh_scores_through_the_tunnel(
    vm_image: Path, libvirt_daemon: str, sshd: Sshd
) -> None:
    env = gym.make(
        ENV_ID,
        backend="libvirt",
        enable_mcp=True,
        backend_options={"image_dir": vm_image, "uri": sshd.uri(), "tunnel_local": True},
    )
    try:
        env.reset(options={"task": TASK})
        desktop = env.unwrapped.desktop
        tunnel = desktop._tunnel
        assert tunnel is not None and tunnel.alive
        # The client and the tool relay use the tunnel's local ends, not QEMU's ports.
        assert desktop.host_port in tunnel.forwards
        assert desktop._tools.target[1] in tunnel.forwards
        assert score_episode(env, bundled_solution(TASK, "oracle")) == 1.0
        env.reset(options={"task": TASK})
        assert score_episode(env, bundled_solution(TASK, "tools")) == 1.0
    finally:
        env.close()
    wait_until(lambda: not tunnel.alive, 30, "the tunnel's ssh to exit")

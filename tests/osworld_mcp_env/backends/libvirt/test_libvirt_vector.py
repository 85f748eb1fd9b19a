"""Two QEMU VMs as the two members of one group vector env, one per libvirt URI.

Both URIs are this machine's (``qemu:///system``), which exercises the same path as one
URI per host: each member's ``LibvirtDesktopConfig.uri`` comes from
:func:`~osworld_mcp_env.backends.libvirt.hosts.libvirt_env_fns`. The members run in subprocesses
(``executor="async"``), so the two VMs boot and step at the same time. Skipped, with the
image and libvirtd fixtures, where test_libvirt_backend.py is skipped.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from grpo_trainer.rollouts.vector import make_group_env
from libvirt_support import SLOW_S, qemu_processes
from osworld_mcp_env.backends.libvirt.hosts import libvirt_env_fns
from osworld_mcp_env.tasks.bundled import bundled_solution
from polling import wait_until

# Two VMs at once: ~12 min under TCG on two cores, so deselected by default (``-m libvirt_extended``).
pytestmark = [
    pytest.mark.libvirt,
    pytest.mark.libvirt_extended,
    pytest.mark.slow,
    pytest.mark.timeout(SLOW_S),
]

WAIT = json.dumps({"name": "computer_use", "arguments": {"action": "wait", "time": 0}})


def _domains_under(uri: str, folder: Path) -> list[str]:
    """Domains whose definition names a file under ``folder`` (this test's overlays)."""
    import libvirt

    conn = libvirt.open(uri)
    try:
        return [d.name() for d in conn.listAllDomains() if str(folder) in d.XMLDesc(0)]
    finally:
        conn.close()


def test_two_vms_on_two_uris_step_in_one_vector_env_and_score(
    vm_image: Path,
    libvirt_daemon: str,
    tmp_path: Path,
) -> None:
    # The overlays go under tmp_path: the VMs of other tests (and engineers) are told apart by it.
    fns = libvirt_env_fns(
        [libvirt_daemon, libvirt_daemon],
        backend_options={"image_dir": vm_image, "work_dir": tmp_path},
        enable_mcp=False,
    )
    venv = make_group_env(fns, executor="async")
    try:
        obs, infos = venv.reset(seed=0, options={"task": "calc-sum-column"})
        assert "crash" not in infos, infos.get("crash")
        assert obs["screenshot"].shape == (2, 1080, 1920, 3) and obs["screenshot"].any(axis=(1, 2, 3)).all()
        assert len(_domains_under(libvirt_daemon, tmp_path)) == 2
        oracle = [json.dumps(a) for a in bundled_solution("calc-sum-column", "oracle")]
        idle = [WAIT] * (len(oracle) - 1) + [oracle[-1]]  # no action, then the same terminate
        for pair in zip(oracle, idle, strict=True):
            _obs, rewards, _terminated, _truncated, infos = venv.step(pair)
            assert "error" not in infos and "crash" not in infos, infos
        assert infos["terminated"].tolist() == [True, True] and infos["score"].tolist() == [1.0, 0.0]
        assert rewards.tolist() == [1.0, 0.0]
    finally:
        venv.close()
    assert _domains_under(libvirt_daemon, tmp_path) == []
    wait_until(lambda: not qemu_processes(str(tmp_path)), 120, "the test's QEMU processes to exit")
    assert list(tmp_path.iterdir()) == []  # no overlay left

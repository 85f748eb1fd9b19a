"""Group members in Ray actors on a local 2-node Ray cluster: the same values as the sync vector env,
crashes as values, two real desktops on two nodes, and nothing left running after close.

Skipped when ray (the grpo-trainer[ray] extra) is not installed; the desktop test also when the
embedded desktop cannot run. One cluster serves the module: its start takes 15-30 s on a busy
2-core machine.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

# Under `uv run`, Ray's driver would start every worker through `uv run` again (its uv hook) and
# the workers fail to start here; the workers share this venv, so the hook is turned off. It is
# read when ray is imported.
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
ray = pytest.importorskip("ray", reason="ray is not installed (the grpo-trainer[ray] extra)")

from grpo_trainer.rollouts.vector import make_group_env  # noqa: E402
from grpo_trainer.rollouts.vector_ray import RayPlacement  # noqa: E402
from osworld_mcp_env.tasks.bundled import bundled_solution  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[2] / "osworld_mcp_env"))
from desktop_support import desktop_missing  # noqa: E402
from polling import wait_until  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

TOY = partial(gym.make, "grpo_trainer:ToolOrGui-v0")
OBJECT_STORE = 100 * 1024 * 1024  # per node; a 1080p frame is 6 MB
WAIT = json.dumps({"name": "computer_use", "arguments": {"action": "wait", "time": 0}})


def _processes() -> dict[int, tuple[int, str, str]]:
    """pid -> (ppid, comm, cmdline) of every live (non-zombie) process."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        rest = stat[stat.rindex(")") + 2 :].split()
        if rest[0] != "Z":
            table[int(entry)] = (int(rest[1]), stat[stat.index("(") + 1 : stat.rindex(")")], cmdline)
    return table


def _tree(roots: set[int]) -> dict[int, str]:
    """pid -> comm of ``roots`` and all their live descendants."""
    table = _processes()
    found = {pid: table[pid][1] for pid in roots if pid in table}
    grew = True
    while grew:
        children = {pid: t[1] for pid, t in table.items() if t[0] in found and pid not in found}
        found.update(children)
        grew = bool(children)
    return found


def _is_ray(comm: str, cmdline: str) -> bool:
    """A process of Ray's: its daemons, its workers (``ray::<Actor>``), its Python services."""
    return comm in ("raylet", "gcs_server") or comm.startswith("ray::") or "/ray/" in cmdline


def _alive(pids: dict[int, str]) -> dict[int, str]:
    table = _processes()
    return {pid: comm for pid, comm in pids.items() if pid in table and table[pid][1] == comm}


def _ray_processes() -> dict[int, str]:
    """pid -> comm of the Ray processes this test process started (its descendants)."""
    table = _processes()
    tree = _tree({os.getpid()})
    ours = {pid: c for pid, c in tree.items() if pid != os.getpid()}
    return {pid: c for pid, c in ours.items() if _is_ray(c, table.get(pid, (0, c, ""))[2])}


def _start_cluster() -> tuple[Cluster, list[str]]:
    """A head without CPUs (nothing runs there) and two 1-CPU worker nodes.

    Ray waits a fixed 30 s for a new node's raylet to register: on a loaded 2-core machine that
    can run out, so a failed start is cleaned up and tried once more.
    """
    for attempt in (1, 2):
        cluster = Cluster()
        try:
            cluster.add_node(num_cpus=0, include_dashboard=False, object_store_memory=OBJECT_STORE)
            workers = [cluster.add_node(num_cpus=1, object_store_memory=OBJECT_STORE) for _ in range(2)]
            cluster.wait_for_nodes()
            return cluster, [w.node_id for w in workers]
        except Exception:  # Ray raises a bare Exception when the raylet did not register in time
            if attempt == 2:
                raise
            cluster.shutdown()
            for pid in _ray_processes():  # a node that failed to start is not in the cluster's list
                os.kill(pid, signal.SIGKILL)
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def worker_ids() -> Iterator[list[str]]:
    """A local 2-worker Ray cluster; yields the workers' node ids.

    At the end the cluster is shut down and every Ray process it started must be gone.
    """
    cluster, workers = _start_cluster()
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        yield workers
    finally:
        started = _ray_processes()
        ray.shutdown()
        cluster.shutdown()
    assert started, "found no Ray process to check"
    wait_until(lambda: not _alive(started), 120, f"the Ray processes {_alive(started)} to exit")


def _run(venv: gym.vector.VectorEnv, reset_options: dict, actions: list[tuple[str, str]]) -> list:
    """Every value the vector env returns for one episode."""
    results: list = [venv.reset(seed=[3, 3], options=reset_options)]
    results += [venv.step(a) for a in actions]
    return results


def test_ray_members_return_what_the_sync_vector_env_returns(worker_ids):
    typed = json.dumps({"name": "computer_use", "arguments": {"action": "type", "text": "5"}})
    end = json.dumps({"name": "computer_use", "arguments": {"action": "terminate"}})
    actions = [(typed, "not json"), (end, typed), (WAIT, end), (WAIT, WAIT)]
    sync = make_group_env(TOY, 2)
    remote = make_group_env(TOY, 2, executor="ray", placement=RayPlacement(num_cpus=0.5))
    try:
        for options in ({}, {"crash_at": 1}):
            expected, got = _run(sync, options, actions), _run(remote, options, actions)
            np.testing.assert_equal(got, expected)
        # The second episode crashed both members at step 1 (inside HoldAfterEnd, in the actor).
        assert all("desktop died at step 1" in c for c in got[2][4]["crash"])
    finally:
        sync.close()
        remote.close()


def test_per_member_options_and_a_killed_actor_give_crash_values_then_reset_recovers(worker_ids):
    venv = make_group_env(TOY, 2, executor="ray", placement=RayPlacement(num_cpus=1, node_ids=worker_ids))
    try:
        where = venv.locations()
        assert [w.node_id for w in where] == worker_ids  # one member pinned on each worker node
        _obs, infos = venv.reset(options=[{"crash_at": 0}, None])
        _obs, _r, _t, _tr, infos = venv.step((WAIT, WAIT))
        assert infos["_crash"].tolist() == [True, False]
        os.kill(where[1].pid, signal.SIGKILL)  # the node's desktop host dies mid-episode
        _obs, rewards, terminated, truncated, infos = venv.step((WAIT, WAIT))
        assert infos["_crash"].tolist() == [True, True] and "Actor" in infos["crash"][1]
        assert infos["ended"].tolist() == [True, True] and rewards.tolist() == [0.0, 0.0]
        assert not terminated.any() and not truncated.any()
        _obs, _r, _t, _tr, infos = venv.step((WAIT, WAIT))
        assert infos["held"].tolist() == [True, True]
        # The next reset starts a new actor for the dead member, on its node.
        _obs, infos = venv.reset(options={})
        assert "crash" not in infos
        again = venv.locations()
        assert again[1].pid != where[1].pid and again[1].node_id == worker_ids[1]
        _obs, _r, _t, _tr, infos = venv.step((WAIT, WAIT))
        assert "crash" not in infos
    finally:
        venv.close()


@pytest.mark.desktop
@pytest.mark.skipif(desktop_missing() is not None, reason=f"no embedded desktop: {desktop_missing()}")
def test_two_desktops_on_two_nodes_score_and_no_desktop_process_outlives_its_member(worker_ids):
    env_fn = partial(gym.make, "osworld_mcp_env:OSWorldMCP-v0", enable_mcp=False)
    placement = RayPlacement(num_cpus=1, node_ids=worker_ids)
    venv = make_group_env(env_fn, 2, executor="ray", placement=placement)
    try:
        obs, infos = venv.reset(seed=0, options={"task": "calc-sum-column"})
        assert "crash" not in infos, infos.get("crash")
        assert obs["screenshot"].shape == (2, 1080, 1920, 3) and obs["screenshot"].any(axis=(1, 2, 3)).all()
        where = venv.locations()
        hosts = _tree({w.pid for w in where})
        for name in ("bwrap", "Xvfb", "soffice.bin"):  # each node runs its own desktop
            assert list(hosts.values()).count(name) >= 2, hosts
        oracle = [json.dumps(a) for a in bundled_solution("calc-sum-column", "oracle")]
        idle = [WAIT] * (len(oracle) - 1) + [oracle[-1]]  # no action, then the same terminate
        for pair in zip(oracle, idle, strict=True):
            _obs, rewards, terminated, _truncated, infos = venv.step(pair)
            assert "error" not in infos and "crash" not in infos, infos
        # HoldAfterEnd (in each actor) reports the end in info and never sets the flags.
        assert not terminated.any() and rewards.tolist() == [1.0, 0.0]
        assert infos["terminated"].tolist() == [True, True] and infos["score"].tolist() == [1.0, 0.0]
        # A member's host killed: its desktop goes with it (the sandbox dies with its parent).
        second = _tree({where[1].pid})
        os.kill(where[1].pid, signal.SIGKILL)
        wait_until(lambda: not _alive(second), 120, f"the killed member's desktop {_alive(second)} to exit")
        _obs, _r, _t, _tr, infos = venv.step((WAIT, WAIT))
        assert infos["_crash"].tolist() == [False, True] and infos["held"][0]
    finally:
        venv.close()
    wait_until(lambda: not _alive(hosts), 120, f"the desktops' processes {_alive(hosts)} to exit")

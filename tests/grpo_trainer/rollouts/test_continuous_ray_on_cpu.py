"""Continuous rollouts whose desktops are Ray actors: the threaded desktops' jobs and groups, a killed
actor's episode as a crash, and a replacement actor for the desktop's next job.

One local Ray instance (2 CPUs, no dashboard) serves the module; the toy env stands in for the
desktop. The kill is timed by state, not by sleeps: the actor's env blocks inside ``step`` and
writes its pid to a marker file, the test waits for that file and then kills the actor.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import gymnasium as gym
import pytest
import torch

# Under `uv run`, Ray would start every worker through `uv run` again (its uv hook), which fails
# here; the workers share this venv, so the hook is turned off before ray is imported.
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
ray = pytest.importorskip("ray", reason="ray is not installed (the grpo-trainer[ray] extra)")

from grpo_trainer.cli import main  # noqa: E402
from grpo_trainer.errors import ConfigError  # noqa: E402
from grpo_trainer.model.tiny import TinyPolicy  # noqa: E402
from grpo_trainer.model.toy_menu import MENU  # noqa: E402
from grpo_trainer.rollouts.continuous import ContinuousRollouts, RolloutJob, group_jobs  # noqa: E402
from grpo_trainer.rollouts.episode import Episode  # noqa: E402
from grpo_trainer.rollouts.group import RolloutConfig  # noqa: E402
from grpo_trainer.rollouts.toy_env import ENV_ID  # noqa: E402
from grpo_trainer.rollouts.vector_ray import RayPlacement, RayVectorEnv  # noqa: E402
from grpo_trainer.training import trainer as engine  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[2] / "osworld_mcp_env"))
from polling import wait_until  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

DEADLINE_S = 120
# Near-greedy sampling: an episode's actions follow from its observations alone, whichever
# requests share its batches, so the threaded and the actor-hosted runs must agree.
GREEDY = RolloutConfig(group_size=2, temperature=1e-6)
PLACEMENT = RayPlacement(num_cpus=0.5, call_timeout_s=DEADLINE_S)


class BlockInStep(gym.Wrapper):
    """``options["block_at"] = k``: step k writes this process's pid to ``options["marker"]`` and
    blocks (until the deadline; the test kills the actor first)."""

    def reset(self, *, seed=None, options=None):
        self.options, self.t = dict(options or {}), 0
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        if self.t == self.options.get("block_at"):
            Path(self.options["marker"]).write_text(str(os.getpid()))
            threading.Event().wait(DEADLINE_S)
        self.t += 1
        return self.env.step(action)


def _blocking_toy() -> gym.Env:
    return BlockInStep(gym.make(ENV_ID))


# The workers cannot import this test module: the wrapper travels by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def _view(groups: list[list[Episode]]) -> list[list[tuple]]:
    """What a job's episode is: its job, its replies, and its end (score, or the crash's first line)."""
    return [
        [
            (
                e.task_id,
                e.group,
                e.member,
                [s.text for s in e.samples],
                e.score,
                e.crash and e.crash.splitlines()[0],
            )
            for e in group
        ]
        for group in groups
    ]


def _job(group: int, member: int, crash_at: int | None = None) -> RolloutJob:
    return RolloutJob("toy", group, member, seed=group, reset_options={"crash_at": crash_at})


def test_actor_hosted_desktops_give_the_threaded_desktops_jobs_and_groups():
    # Three groups over two desktops; some episodes crash in the env (in the actor, for ray) at
    # step k, after k + 1 model calls. The near-greedy tiny policy never terminates: 6 calls.
    jobs = [_job(0, 0), _job(0, 1, 3), _job(1, 0, 0), _job(1, 1, 0), _job(2, 0, 1), _job(2, 1)]
    results = []
    for executor, placement in (("sync", None), ("ray", PLACEMENT)):
        rollouts = ContinuousRollouts(
            [partial(gym.make, ENV_ID)] * 2,
            TinyPolicy(MENU, seed=0),
            GREEDY,
            torch.Generator().manual_seed(0),
            executor=executor,
            placement=placement,
        )
        try:
            assert all(isinstance(venv, RayVectorEnv) == (executor == "ray") for venv in rollouts.envs)
            results.append(_view(rollouts.collect(jobs)))
        finally:
            rollouts.close()
    threaded, hosted = results
    assert hosted == threaded
    assert [[(g, m, len(replies)) for _, g, m, replies, _, _ in group] for group in hosted] == [
        [(0, 0, 6), (0, 1, 4)],
        [(1, 0, 1), (1, 1, 1)],
        [(2, 0, 2), (2, 1, 6)],
    ]
    crashes = [[crash for *_, crash in group] for group in hosted]
    assert crashes == [
        [None, "RuntimeError: desktop died at step 3"],
        ["RuntimeError: desktop died at step 0"] * 2,
        ["RuntimeError: desktop died at step 1", None],
    ]
    # A crash is kept apart from the scores: no score, where the others have one.
    assert [[score is None for *_, score, _ in group] for group in hosted] == [
        [False, True],
        [True, True],
        [True, False],
    ]


def test_desktop_i_is_pinned_to_the_placements_node_i_in_turn_and_placement_needs_ray():
    placement = RayPlacement(num_cpus=0.5, node_ids=("a", "b"))
    assert [placement.member(i).node_ids for i in range(3)] == [("a",), ("b",), ("a",)]
    assert placement.member(1) == RayPlacement(num_cpus=0.5, node_ids=("b",))
    assert RayPlacement().member(5).node_ids == ()
    with pytest.raises(ConfigError, match="placement applies to executor 'ray' only"):
        ContinuousRollouts([], TinyPolicy(MENU), GREEDY, torch.Generator(), placement=placement)


def test_a_killed_actor_gives_its_job_a_crash_and_the_next_collect_a_new_actor(tmp_path):
    marker = tmp_path / "blocked"
    rollouts = ContinuousRollouts(
        [_blocking_toy] * 2,
        TinyPolicy(MENU, seed=0),
        GREEDY,
        torch.Generator().manual_seed(0),
        executor="ray",
        placement=PLACEMENT,
    )
    try:
        pids = [venv.locations()[0].pid for venv in rollouts.envs]
        blocked = {"block_at": 0, "marker": str(marker)}
        jobs = [RolloutJob("toy", 0, 0, seed=1), RolloutJob("toy", 0, 1, seed=1, reset_options=blocked)]
        with ThreadPoolExecutor(1) as pool:
            collecting = pool.submit(rollouts.collect, jobs)
            wait_until(marker.exists, DEADLINE_S, "an actor to block in step")
            wait_until(marker.read_text, DEADLINE_S, "the blocked actor's pid")
            killed = pids.index(int(marker.read_text()))
            ray.kill(rollouts.envs[killed].actors[0], no_restart=True)
            ((ok, crashed),) = collecting.result(timeout=DEADLINE_S)
        assert (ok.member, ok.crash, ok.score is not None) == (0, None, True)
        assert (crashed.member, crashed.score) == (1, None)
        assert crashed.crash is not None and "Actor" in crashed.crash  # Ray's actor-died error, not the env's
        # The next collect: every desktop resets, the dead one on a new actor, and both jobs score.
        again = rollouts.collect(group_jobs("toy", 1, seed=2, group_size=2))
        assert [(e.member, e.crash, e.score is not None) for e in again[0]] == [
            (0, None, True),
            (1, None, True),
        ]
        now = [venv.locations()[0].pid for venv in rollouts.envs]
        assert now[1 - killed] == pids[1 - killed] and now[killed] not in pids
    finally:
        rollouts.close()


def test_rollout_desktops_with_the_ray_executor_train_on_actor_hosted_desktops_from_the_cli(
    tmp_path, monkeypatch
):
    built = []

    class Recorded(engine.ContinuousRollouts):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            built.append([type(venv) for venv in self.envs])

    monkeypatch.setattr(engine, "ContinuousRollouts", Recorded)
    config = tmp_path / "c.toml"
    config.write_text(
        'policy = "tiny"\ntasks = ["toy", "toy"]\n'
        '[rollout]\ngroup_size = 4\ntasks_per_step = 2\ndesktops = 2\nexecutor = "ray"\n'
        "[reward]\nmax_steps = 6\n[optim]\ntotal_steps = 1\n"
        f'[engine]\nbackend = "torch"\noutput_dir = "{tmp_path / "run"}"\n'
    )
    assert main(["--config", str(config)]) == 0
    assert built == [[RayVectorEnv] * 2]  # the CLI's env factory pickled into two actors (1 CPU each)
    steps = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [s["step"] for s in steps] == [0] and len(steps[0]["rollout/tasks"]) == 2

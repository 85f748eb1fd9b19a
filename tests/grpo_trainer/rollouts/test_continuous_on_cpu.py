"""Continuous batching on the toy env with the tiny model: episodes of uneven length, no group lockstep.

Waits are on events with a deadline, never on sleeps: an env whose step waits for another
env to start the next group proves that nobody waits for a group to end (a lockstep
schedule would time the wait out), and the dispatcher's queue says which requests are
pending when a batch starts.
"""

import threading
from collections.abc import Sequence

import gymnasium as gym
import pytest
import torch
from grpo_trainer.errors import ConfigError
from grpo_trainer.model.tiny import TinyPolicy
from grpo_trainer.model.toy_menu import CLICK, MENU, READ
from grpo_trainer.rollouts.continuous import ContinuousRollouts, RolloutJob, group_jobs
from grpo_trainer.rollouts.group import RolloutConfig
from grpo_trainer.rollouts.toy_env import ToolOrGuiEnv
from grpo_trainer.training.trainer import Trainer
from hybrid_agent.policies.base import Generation, PolicyRequest
from toy_setup import toy_config

DEADLINE_S = 120


class Paced(gym.Wrapper):
    """Ends each episode after ``options["steps"]`` steps; ``options["wait_for_group"]`` makes a
    step wait until some env reset into that group. Resets are logged in ``log``."""

    def __init__(self, env: gym.Env, log: list[int], changed: threading.Condition) -> None:
        super().__init__(env)
        self.log, self.changed = log, changed
        self.options: dict = {}
        self.t = 0
        self.waited: list[bool] = []

    def reset(self, *, seed=None, options=None):
        self.options, self.t = dict(options or {}), 0
        with self.changed:
            self.log.append(self.options["group"])
            self.changed.notify_all()
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        wanted = self.options.get("wait_for_group")
        if wanted is not None and self.t == 1:
            with self.changed:
                self.waited.append(self.changed.wait_for(lambda: wanted in self.log, DEADLINE_S))
        obs, reward, terminated, _, info = self.env.step(action)
        self.t += 1
        return obs, reward, terminated, self.t >= self.options["steps"], info


def _rollouts(n_envs: int):
    log: list[int] = []
    changed = threading.Condition()
    wrappers: list[Paced] = []

    def make() -> gym.Env:
        wrappers.append(Paced(ToolOrGuiEnv(max_steps=50), log, changed))
        return wrappers[-1]

    policy = TinyPolicy([CLICK, READ], seed=0)  # never terminates: the wrapper sets each length
    rollouts = ContinuousRollouts([make] * n_envs, policy, RolloutConfig(group_size=2), torch.Generator())
    return rollouts, wrappers, log


def _job(group: int, member: int, steps: int, **extra) -> RolloutJob:
    return RolloutJob(
        "toy", group, member, seed=group, reset_options={"group": group, "steps": steps, **extra}
    )


@pytest.mark.timeout(600)
def test_an_env_that_ends_its_episode_starts_the_next_group_while_its_group_still_runs():
    rollouts, wrappers, log = _rollouts(n_envs=2)
    # Group 0: a 1-step and a 3-step episode; the long one's second step waits for group 1 to start.
    jobs = [_job(0, 0, 1), _job(0, 1, 3, wait_for_group=1), _job(1, 0, 1), _job(1, 1, 2)]
    groups = rollouts.collect(jobs)
    rollouts.close()
    assert [w.waited for w in wrappers if w.waited] == [[True]]  # group 1 reset while group 0 ran
    assert sorted(log) == [0, 0, 1, 1]
    assert [[e.member for e in g] for g in groups] == [[0, 1], [0, 1]]
    assert [[e.group for e in g] for g in groups] == [[0, 0], [1, 1]]
    assert [[e.length for e in g] for g in groups] == [[1, 3], [1, 2]]
    assert all(
        s.response_ids and len(s.old_logprobs) == len(s.response_ids)
        for g in groups
        for e in g
        for s in e.samples
    )


class _Recording:
    """The dispatcher's policy, recording each batch's requests; its first batch waits until
    ``hold`` more requests are pending, so the second batch must hold exactly those."""

    def __init__(self, rollouts: ContinuousRollouts, hold: int) -> None:
        self.inner, self.rollouts, self.hold = rollouts.agent, rollouts, hold
        self.name = "recording"
        self.batches: list[list[tuple[str, int]]] = []
        self.pending_seen: bool | None = None

    def generate(self, requests: Sequence[PolicyRequest]) -> list[Generation]:
        if not self.batches:
            assert self.rollouts.dispatcher is not None
            self.pending_seen = self.rollouts.dispatcher.wait_pending(self.hold, DEADLINE_S)
        self.batches.append([(r.task_id, r.step) for r in requests])
        return self.inner.generate(requests)


@pytest.mark.timeout(600)
def test_each_batch_holds_exactly_the_requests_pending_when_it_starts():
    rollouts, _, _ = _rollouts(n_envs=3)
    recorder = _Recording(rollouts, hold=2)
    rollouts.agent = recorder
    # Three single-member groups on distinct tasks, so each request names its env's episode.
    jobs = [
        RolloutJob(task, g, 0, seed=g, reset_options={"group": g, "steps": 2}) for g, task in enumerate("abc")
    ]
    groups = rollouts.collect(jobs)
    rollouts.close()
    assert recorder.pending_seen is True
    first, second = recorder.batches[0], recorder.batches[1]
    assert len(first) == 1  # the first asker starts a batch at once: nobody waits for a full one
    # Both requests that were pending while it ran make the next batch (the first env's next
    # request may have joined them: it was pending too by then).
    ((task, _),) = first
    others = sorted((t, 0) for t in "abc" if t != task)
    assert sorted(r for r in second if r[1] == 0) == others
    assert set(second) - set(others) <= {(task, 1)}
    # Every request was answered exactly once: two steps of three episodes.
    asked = sorted(r for batch in recorder.batches for r in batch)
    assert asked == sorted((t, s) for t in "abc" for s in (0, 1))
    assert [g[0].task_id for g in groups] == ["a", "b", "c"]


def test_group_jobs_share_task_and_seed():
    jobs = group_jobs("toy", group=3, seed=11, group_size=2, reset_options={"labels": {}})
    assert [(j.task, j.group, j.member, j.seed) for j in jobs] == [("toy", 3, 0, 11), ("toy", 3, 1, 11)]


@pytest.mark.timeout(900)
def test_the_trainer_rolls_out_its_groups_continuously_over_fewer_desktops_than_g(tmp_path):
    config = toy_config(seed=0, steps=1)  # G = 8, two groups a step, on three desktops
    trainer = Trainer(
        config,
        TinyPolicy(MENU, seed=0),
        None,
        tmp_path,
        desktops=[lambda: gym.make(config.env_id)] * 3,
    )
    groups = trainer.rollout()
    assert [len(g) for g in groups] == [8, 8]
    assert [[e.member for e in g] for g in groups] == [list(range(8))] * 2
    assert len({g[0].group for g in groups}) == 2
    log = trainer._learn(groups, {})
    assert log["rollout/samples"] > 0
    trainer.continuous.close()


def test_the_trainer_takes_a_group_env_or_desktops(tmp_path):
    config = toy_config()
    with pytest.raises(ConfigError, match="not both"):
        Trainer(config, TinyPolicy(MENU), None, tmp_path)

"""Prepared resets in the trainer: on where memory allows; continuous rollouts name the next task."""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium as gym
import pytest
from grpo_trainer.config import GRPOConfig, RolloutSettings
from grpo_trainer.errors import ConfigError
from grpo_trainer.model.tiny import TinyPolicy
from grpo_trainer.model.toy_menu import MENU
from grpo_trainer.rollouts.continuous import RolloutJob
from grpo_trainer.rollouts.env_setup import env_kwargs
from grpo_trainer.training.trainer import Trainer
from toy_setup import toy_config

DESKTOP = "osworld_mcp_env:OSWorldMCP-v0"


class RecordResets(gym.Wrapper):
    """Logs each reset's task, seed and prepared next task; the toy env ignores the hint."""

    def __init__(self, env: gym.Env, log: list[tuple[Any, int | None, Any]]) -> None:
        super().__init__(env)
        self.log = log

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        options = options or {}
        self.log.append((options.get("task"), seed, options.get("prepare_next")))
        return self.env.reset(seed=seed, options=options)


def _continuous(tmp_path, prepare: bool, desktops: int = 2):
    config = dataclasses.replace(
        toy_config(steps=2),
        tasks=("t0", "t1", "t2"),
        rollout=RolloutSettings(group_size=2, tasks_per_step=3, desktops=desktops),
    )
    logs: list[list[tuple[Any, int | None, Any]]] = [[] for _ in range(desktops)]
    factories = [lambda log=log: RecordResets(gym.make(config.env_id), log) for log in logs]
    trainer = Trainer(
        config, TinyPolicy(MENU, seed=0), None, tmp_path, desktops=factories, prepare_resets=prepare
    )
    return trainer, logs


def test_each_desktop_prepares_the_task_it_resets_to_next_across_steps(tmp_path):
    trainer, logs = _continuous(tmp_path, prepare=True)
    steps = [trainer._collect(0), trainer._collect(1)]  # the run's two steps
    trainer.continuous.close()
    # 3 groups a step x G = 2: tasks cycle t0 t1 t2 | t0 t1 t2, seeds engine seed + group index.
    for step, groups in enumerate(steps):
        assert [[(e.task_id, e.group, e.member) for e in g] for g in groups] == [
            [(task, 3 * step + j, 0), (task, 3 * step + j, 1)] for j, task in enumerate(("t0", "t1", "t2"))
        ]
    resets = [r for log in logs for r in log]
    jobs = [(task, index) for index, task in enumerate(("t0", "t1", "t2") * 2) for _ in range(2)]
    assert sorted((task, seed) for task, seed, _ in resets) == sorted(jobs)  # each job once
    for log in (log for log in logs if log):  # a desktop may find the queue empty
        # The hint of each reset is the task this desktop reset to next, over the step boundary;
        # the run's last reset on it prepares nothing.
        assert [hint for _, _, hint in log[:-1]] == [task for task, _, _ in log[1:]]
        assert log[-1][2] is None
        # Each desktop's jobs left the queue in order (group, then member: seeds never go back).
        seeds = [seed for _, seed, _ in log]
        assert seeds == sorted(seeds)


def test_a_desktop_out_of_jobs_prepares_the_next_steps_first_and_starts_it_with_it(tmp_path):
    trainer, (log,) = _continuous(tmp_path, prepare=True, desktops=1)
    trainer.rollout()
    assert log == [
        ("t0", 0, "t0"),
        ("t0", 0, "t1"),
        ("t1", 1, "t1"),
        ("t1", 1, "t2"),
        ("t2", 2, "t2"),
        ("t2", 2, "t0"),  # step 1's first job: group 3, task t0
    ]
    assert [(j.task, j.group, j.member) for j in trainer.continuous.reserved if j] == [("t0", 3, 0)]
    trainer.step = 1
    trainer.rollout()
    trainer.continuous.close()
    assert log[6:] == [
        ("t0", 3, "t0"),
        ("t0", 3, "t1"),
        ("t1", 4, "t1"),
        ("t1", 4, "t2"),
        ("t2", 5, "t2"),
        ("t2", 5, None),
    ]


def test_a_reservation_the_batch_does_not_hold_is_dropped(tmp_path):
    trainer, (log,) = _continuous(tmp_path, prepare=True, desktops=1)
    trainer.continuous.reserved = [RolloutJob("gone", 99, 0, 99)]
    groups = trainer.continuous.collect(trainer._jobs(0))
    trainer.continuous.close()
    assert [g[0].group for g in groups] == [0, 1, 2]
    assert [task for task, _, _ in log] == ["t0", "t0", "t1", "t1", "t2", "t2"]  # never the dropped one
    assert trainer.continuous.reserved == [None]


def test_without_prepared_resets_no_desktop_names_a_next_task(tmp_path):
    trainer, logs = _continuous(tmp_path, prepare=False)
    trainer.rollout()
    trainer.continuous.close()
    assert sum(map(len, logs)) == 6
    assert all(hint is None for log in logs for _, _, hint in log)


def _desktop_config(prepared: bool | str, **env: Any) -> GRPOConfig:
    return GRPOConfig(env_id=DESKTOP, env_kwargs=env, rollout=RolloutSettings(prepared_resets=prepared))


@pytest.mark.parametrize("fits", [True, False])
def test_auto_turns_them_on_where_memory_allows_with_the_runners_check(monkeypatch, fits):
    asked = []

    def fit(envs: int) -> bool:
        asked.append(envs)
        return fits

    monkeypatch.setattr("osworld_mcp_env.env.prepared_reset.prepared_resets_fit", fit)
    assert env_kwargs(_desktop_config("auto", max_steps=5), 8) == {"max_steps": 5, "prepare_resets": fits}
    assert asked == [8]


def test_forced_settings_and_hand_set_kwargs_skip_the_memory_check(monkeypatch):
    monkeypatch.setattr(
        "osworld_mcp_env.env.prepared_reset.prepared_resets_fit", lambda envs: pytest.fail("asked")
    )
    assert env_kwargs(_desktop_config(True), 4) == {"prepare_resets": True}
    assert env_kwargs(_desktop_config(False), 4) == {"prepare_resets": False}
    assert env_kwargs(_desktop_config("auto", prepare_resets=False), 4) == {"prepare_resets": False}


def test_other_envs_get_their_kwargs_as_written_and_refuse_true():
    toy = toy_config()
    assert env_kwargs(dataclasses.replace(toy, env_kwargs={"max_steps": 3}), 8) == {"max_steps": 3}
    forced = dataclasses.replace(toy, rollout=dataclasses.replace(toy.rollout, prepared_resets=True))
    with pytest.raises(ConfigError, match="prepared_resets = true needs the desktop env"):
        env_kwargs(forced, 8)


def test_the_setting_is_checked():
    with pytest.raises(ConfigError, match="prepared_resets must be true, false or 'auto', got 'yes'"):
        RolloutSettings(prepared_resets="yes")
    with pytest.raises(ConfigError, match="not both"):
        _desktop_config(True, prepare_resets=True)

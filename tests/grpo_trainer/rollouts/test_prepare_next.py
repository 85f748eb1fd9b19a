"""The trainer names each group's next task in its reset, so prepared resets set up the right episode."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import gymnasium as gym
from grpo_trainer.config import RolloutSettings
from grpo_trainer.model.tiny import TinyPolicy
from grpo_trainer.model.toy_menu import MENU
from grpo_trainer.rollouts.vector import make_group_env
from grpo_trainer.training.trainer import Trainer, group_index
from toy_setup import toy_config


def test_group_index_blocks_ranks_and_steps():
    # 2 ranks x 3 groups a step: rank 1 owns 3, 4, 5 at step 0 and 9, 10, 11 at step 1.
    assert [group_index(0, j, 3, 1, 2) for j in range(3)] == [3, 4, 5]
    assert [group_index(1, j, 3, 1, 2) for j in range(3)] == [9, 10, 11]
    # One past the block is the rank's first group of the next step.
    assert group_index(0, 3, 3, 1, 2) == 9
    assert group_index(4, 2, 3, 0, 1) == 14


class RecordResets(gym.Wrapper):
    def __init__(self, env: gym.Env, log: list[dict[str, Any]]) -> None:
        super().__init__(env)
        self.log = log

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self.log.append(dict(options or {}))
        return self.env.reset(seed=seed, options=options)


def run_two_steps(tmp_path, env_kwargs: dict[str, Any]) -> list[dict[str, Any]]:
    config = replace(
        toy_config(steps=2),
        tasks=("t0", "t1", "t2"),
        env_kwargs=env_kwargs,
        rollout=RolloutSettings(group_size=2, tasks_per_step=2),
    )
    log: list[dict[str, Any]] = []
    venv = make_group_env(lambda: RecordResets(gym.make(config.env_id), log), 2)
    trainer = Trainer(config, TinyPolicy(MENU, seed=0), venv, tmp_path)
    trainer.train()
    venv.close()
    return log[::2]  # both members of a group reset with the same options


def test_each_reset_names_the_task_of_the_reset_after_it(tmp_path):
    resets = run_two_steps(tmp_path, {"prepare_resets": True})
    # Tasks cycle t0 t1 | t2 t0; each reset prepares the next one, across the step boundary.
    assert [r["task"] for r in resets] == ["t0", "t1", "t2", "t0"]
    assert [r["prepare_next"] for r in resets] == ["t1", "t2", "t0", "t1"]


def test_without_prepared_resets_no_reset_names_a_next_task(tmp_path):
    resets = run_two_steps(tmp_path, {})
    assert [r["task"] for r in resets] == ["t0", "t1", "t2", "t0"]
    assert not any("prepare_next" in r for r in resets)

"""A tiny GRPO run on the toy env, shared by the engine tests."""

from __future__ import annotations

import gymnasium as gym
from grpo_trainer.config import EngineSettings, GRPOConfig, OptimSettings, RolloutSettings
from grpo_trainer.model.tiny import TinyPolicy
from grpo_trainer.model.toy_menu import MENU
from grpo_trainer.objectives.rewards import RewardConfig
from grpo_trainer.rollouts.vector import make_group_env
from grpo_trainer.training.trainer import Trainer


def toy_config(seed: int = 0, steps: int = 10, lambda_mcp: float = 0.1, **engine) -> GRPOConfig:
    return GRPOConfig(
        rollout=RolloutSettings(group_size=8, tasks_per_step=2),
        reward=RewardConfig(max_steps=6, lambda_mcp=lambda_mcp),
        optim=OptimSettings(lr=3e-3, total_steps=steps, updates_per_batch=2),
        engine=EngineSettings(backend="torch", precision="fp32", seed=seed, **engine),
    )


def toy_trainer(config: GRPOConfig, run_dir, reset_options=None) -> Trainer:
    venv = make_group_env(lambda: gym.make(config.env_id), config.rollout.group_size)
    return Trainer(config, TinyPolicy(MENU, seed=config.engine.seed), venv, run_dir, reset_options)

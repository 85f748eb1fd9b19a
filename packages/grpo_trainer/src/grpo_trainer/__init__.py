"""Multi-turn GRPO for hybrid GUI + MCP computer-use agents.

The math is pure and hand-checked: :mod:`~grpo_trainer.objectives.rewards` (R(tau) and the
post-normalisation step terms), :mod:`~grpo_trainer.objectives.advantage` (group z-score,
1/T broadcast, accuracy filter) and :mod:`~grpo_trainer.objectives.loss` (clipped
surrogate, k3 KL). :mod:`~grpo_trainer.rollouts.group` runs G rollouts per task over a
Gymnasium vector env with ``hybrid_agent``'s context builder;
:mod:`~grpo_trainer.training.trainer` trains on the step samples and checkpoints exactly,
synchronously or with rollouts overlapping updates (:mod:`~grpo_trainer.rollouts.async_worker`),
and logs through :mod:`~grpo_trainer.training.metrics` (JSONL and TensorBoard).
torch is imported only by the modules that need it.

One room per role: ``objectives`` (the math), ``rollouts`` (envs, tasks, episodes),
``model`` (the policy, its inputs, the rollout engines), ``training`` (the loop, backends,
checkpoints, metrics, export) and ``sft``. The flat import paths of before the layout by role
are aliases that warn (the table is :mod:`grpo_trainer._moved`).
"""

from osworld_mcp_env.module_aliases import alias_moved_modules

from grpo_trainer._moved import MOVED_MODULES
from grpo_trainer.objectives.advantage import AdvantageConfig, GroupAdvantages, group_advantages
from grpo_trainer.objectives.rewards import (
    RETURN_TERMS,
    STEP_TERMS,
    RewardConfig,
    episode_return,
    step_bonuses,
)
from grpo_trainer.rollouts.episode import Episode, StepSample

__all__ = [
    "RETURN_TERMS",
    "STEP_TERMS",
    "AdvantageConfig",
    "Episode",
    "GroupAdvantages",
    "RewardConfig",
    "StepSample",
    "episode_return",
    "group_advantages",
    "step_bonuses",
]

import gymnasium as _gym

alias_moved_modules(MOVED_MODULES)

_gym.register(id="ToolOrGui-v0", entry_point="grpo_trainer.rollouts.toy_env:ToolOrGuiEnv")

"""GRPO learns on the real desktop: real Calc, real evaluator rewards, the project's Trainer and group env.

A :class:`~grpo_trainer.model.menu_policy.MenuPolicy` chooses, turn by turn through
``hybrid_agent``'s agent loop, among four plans for one pinned seeded task (see
``desktop_menu.py``); only the task's tool oracle scores 1, so the untrained policy
succeeds in about 1/4 of its episodes. A few steps of the real GRPO loop (group
advantages, accuracy filter, clipped surrogate with KL, AdamW) on two sandboxed
desktops must raise the evaluator-scored success rate well above that.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import gymnasium as gym
import pytest
import torch
from desktop_menu import one_cell_plans
from grpo_trainer.config import EngineSettings, GRPOConfig, OptimSettings, RolloutSettings
from grpo_trainer.model.menu_policy import MenuPolicy
from grpo_trainer.objectives.rewards import RewardConfig
from grpo_trainer.rollouts.vector import make_group_env
from grpo_trainer.training.trainer import Trainer

sys.path.insert(0, str(Path(__file__).parents[2] / "osworld_mcp_env"))
from desktop_support import desktop_missing

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.slow,
    pytest.mark.skipif(
        desktop_missing() is not None, reason=f"embedded desktop unavailable: {desktop_missing()}"
    ),
]

TASK = "calc-fix-cell@1000"  # a training seed (>= 1000), pinned so the menu holds its answer
STEPS = 5


def _config() -> GRPOConfig:
    return GRPOConfig(
        env_id="osworld_mcp_env:OSWorldMCP-v0",
        # Plans take at most 3 calls; a small screen keeps frames cheap. No prepared resets: an
        # episode of three calls ends before a fresh desktop could be set up beside it, so they
        # would double the desktops on two cores and save nothing.
        env_kwargs={"max_steps": 4, "screen_width": 800, "screen_height": 600},
        tasks=(TASK,),
        # Four desktops, one subprocess each (their resets overlap); G = 4 makes a group with
        # both outcomes likely (68 % at p = 1/4), and only such groups carry a gradient.
        rollout=RolloutSettings(group_size=4, tasks_per_step=1, executor="async"),
        reward=RewardConfig(max_steps=4),
        # A table of logits moves in a few updates at a large constant step (5e-6 is a VLM's).
        optim=OptimSettings(lr=1.0, schedule="constant", total_steps=STEPS),
        engine=EngineSettings(backend="torch", precision="fp32", seed=0, save_every=STEPS),
    )


def _plan_probability(policy: MenuPolicy, plan: list[str]) -> float:
    """The policy's probability of playing ``plan`` from the first turn to its end (temperature 1)."""
    prompt, total = [policy.start], 0.0
    with torch.no_grad():
        for response in plan:
            index = policy.responses.index(response)
            total += float(policy.logprobs([prompt], [[index]])[0, 0])
            prompt = [*prompt, index]
    return math.exp(total)


@pytest.mark.timeout(1800)  # minutes alone on 2 cores; far more when the machine is shared
def test_grpo_raises_the_evaluator_scored_success_rate_on_real_calc(tmp_path):
    plans = one_cell_plans(TASK)
    policy = MenuPolicy(plans)
    config = _config()
    venv = make_group_env(
        lambda: gym.make(config.env_id, **config.env_kwargs),
        config.rollout.group_size,
        executor=config.rollout.executor,
    )
    try:
        logs = Trainer(config, policy, venv, tmp_path).train()
    finally:
        venv.close()
    curve = [m["rollout/success"] for m in logs]
    print("success rate per step (real evaluator):", " ".join(f"{s:.2f}" for s in curve))
    print("groups kept per step:", [int(m["rollout/groups_kept"]) for m in logs])
    print("crashed episodes per step:", [int(m["rollout/crashed"]) for m in logs])
    oracle = _plan_probability(policy, plans[0])
    print(f"probability of the oracle plan: 0.25 -> {oracle:.3f}")
    # Untrained: 1/4 (plans are equally likely). Trained: the policy plays the oracle plan far more
    # often than the three wrong ones together, and the last two steps succeed more than the first.
    assert oracle > 0.75, oracle
    assert sum(curve[-2:]) / 2 >= 0.6 and sum(curve[-2:]) / 2 > curve[0], curve

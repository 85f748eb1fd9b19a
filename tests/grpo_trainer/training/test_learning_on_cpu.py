"""GRPO raises mean reward on the toy env, and the tool bonus raises tool adoption (trend over seeds)."""

import numpy as np
import pytest
from toy_setup import toy_config, toy_trainer

SEEDS = (0, 1, 2)
STEPS = 10


def _run(seed, lambda_mcp, tmp_path):
    trainer = toy_trainer(toy_config(seed, STEPS, lambda_mcp), tmp_path / f"{seed}-{lambda_mcp}")
    return trainer.train()


@pytest.mark.slow
@pytest.mark.timeout(1800)  # six short runs; ~4 min alone on 2 cores, far more when shared
def test_grpo_raises_reward_and_the_tool_bonus_raises_adoption(tmp_path):
    def tail(logs, key):
        return np.mean([m[key] for m in logs[-3:]])

    def head(logs, key):
        return np.mean([m[key] for m in logs[:3]])

    with_bonus = [_run(s, 0.1, tmp_path) for s in SEEDS]
    without = [_run(s, 0.0, tmp_path) for s in SEEDS]
    gains = [tail(logs, "rollout/reward") - head(logs, "rollout/reward") for logs in with_bonus + without]
    # Reward is in [-1.25, 1]: a mean gain of 0.3 is far beyond seed noise of the untrained policy.
    assert np.mean(gains) > 0.3, gains
    assert sum(g > 0 for g in gains) >= len(gains) - 1, gains
    adoption_bonus = np.mean([tail(logs, "rollout/adoption") for logs in with_bonus])
    adoption_plain = np.mean([tail(logs, "rollout/adoption") for logs in without])
    assert adoption_bonus > adoption_plain, (adoption_bonus, adoption_plain)

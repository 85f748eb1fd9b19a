import dataclasses
import math

import numpy as np
import pytest
from grpo_helpers import episode, gui, sample, tool
from grpo_trainer.advantage import (
    AdvantageConfig,
    broadcast_per_step,
    broadcast_whole,
    group_advantages,
    hybridcua_config,
    keep_group,
    keep_spread,
    zscore,
)
from grpo_trainer.errors import ConfigError, RegistryError
from grpo_trainer.rewards import RewardConfig


def test_zscore_uses_the_unbiased_group_std():
    # returns 1, -1, -1, 1: mean 0, sample std sqrt(4/3)
    z = zscore([1.0, -1.0, -1.0, 1.0], eps=0.0)
    assert z == pytest.approx(np.array([1, -1, -1, 1]) / math.sqrt(4 / 3))


def test_broadcast_divides_by_length():
    assert broadcast_per_step([0.9, -0.6], [3, 2]) == [[0.3, 0.3, 0.3], [-0.3, -0.3]]


def test_hybridcua_broadcast_has_no_one_over_t():
    assert broadcast_whole([0.9, -0.6], [3, 2]) == [[0.9, 0.9, 0.9], [-0.6, -0.6]]


def test_filter_bounds_are_strict():
    config = AdvantageConfig()
    assert not keep_group([], 0.0, config) and not keep_group([], 1.0, config)
    assert keep_group([], 0.125, config) and keep_group([], 0.875, config)
    assert not keep_group([], 0.05, config) and not keep_group([], 0.95, config)


def test_reward_spread_drops_only_groups_whose_combined_rewards_are_all_equal():
    config = AdvantageConfig()
    assert not keep_spread([1.1, 1.1, 1.1], 1.0, config)
    assert keep_spread([1.1, 1.0, 1.0], 1.0, config)  # all succeeded, the bonus differs: kept
    assert keep_spread([-1.0, 1.0], 0.5, config)


def test_hybridcua_group_advantages_hand_computed():
    rewards, config = hybridcua_config()
    label = {"preferred_interface": "cli"}
    # A: success with an executed shell command: R = 1 + 0.1 = 1.1, two steps.
    # B: success through the GUI alone: R = 1.0, three steps.
    # C: failure whose only command failed: R = -1, and -0.3 on that step after normalisation.
    a = episode(1.0, [sample(tool("bash", command="ls")), sample(gui("terminate"), index=1)], label)
    b = episode(1.0, [sample(gui(), index=i) for i in range(3)], label)
    c = episode(0.0, [sample(tool("bash", command="false"), exec_ok=False)], label)
    result = group_advantages([a, b, c], rewards, dataclasses.replace(config, std_eps=0.0))
    # mean 11/30; deviations 22/30, 19/30, -41/30; sample var (484 + 361 + 1681) / 900 / 2 = 2526/1800
    std = math.sqrt(2526 / 1800)
    za, zb, zc = 22 / 30 / std, 19 / 30 / std, -41 / 30 / std
    assert result.returns == pytest.approx([1.1, 1.0, -1.0])
    assert result.kept  # R differ (success rate 2/3)
    assert result.advantages[0] == pytest.approx([za, za])  # no 1/T
    assert result.advantages[1] == pytest.approx([zb] * 3)
    assert result.advantages[2] == pytest.approx([zc - 0.3])
    same = [episode(1.0, [sample(gui())], label) for _ in range(3)]
    assert not group_advantages(same, rewards, config).kept  # all R = 1.0


def test_unknown_broadcast_or_filter_names_raise_with_a_suggestion():
    with pytest.raises(RegistryError, match="Did you mean 'repeat'"):
        AdvantageConfig(broadcast="repeats")
    with pytest.raises(RegistryError, match="Did you mean 'reward_spread'"):
        AdvantageConfig(group_filter="reward_sprea")


def test_group_advantages_hand_computed():
    rewards = RewardConfig(max_steps=10, lambda_len=0.1)
    # A: success in 2 steps, a new tool call first: R = 1 - 0.1*2/10 = 0.98
    # B: failure in 4 GUI steps: R = -1 - 0.1*4/10 = -1.04
    a = episode(1.0, [sample(tool(cell="A1")), sample(gui("terminate"), index=1)])
    b = episode(0.0, [sample(gui(), index=i) for i in range(4)])
    result = group_advantages([a, b], rewards, AdvantageConfig(std_eps=0.0))
    # mean -0.03, sample std = |0.98 - -1.04| / sqrt(2) -> z = +-1/sqrt(2)
    z = 1 / math.sqrt(2)
    assert result.returns == pytest.approx([0.98, -1.04])
    assert result.kept and result.success_rate == 0.5
    assert result.advantages[0] == pytest.approx([z / 2 + 0.1, z / 2])  # tool bonus after normalisation
    assert result.advantages[1] == pytest.approx([-z / 4] * 4)


def test_crashed_episodes_leave_the_group_and_are_counted():
    ok = episode(1.0, [sample(gui())])
    bad = episode(0.0, [sample(gui())])
    crashed = episode(None, [sample(gui())], crash="EnvCrash: boom")
    with_crash = group_advantages([ok, crashed, bad], RewardConfig(), AdvantageConfig())
    without = group_advantages([ok, bad], RewardConfig(), AdvantageConfig())
    assert with_crash.crashed == 1 and with_crash.episodes == [ok, bad]
    assert with_crash.advantages == without.advantages  # not scored as a 0 / failure


def test_uniform_groups_are_filtered_out():
    group = [episode(1.0, [sample(gui())]) for _ in range(4)]
    assert not group_advantages(group, RewardConfig(), AdvantageConfig()).kept


def test_a_group_with_one_survivor_is_dropped():
    group = [episode(1.0, [sample(gui())]), episode(None, [sample(gui())], crash="x")]
    assert not group_advantages(group, RewardConfig(), AdvantageConfig(acc_lo=0.0, acc_hi=1.0)).kept


def test_bad_bounds_raise():
    with pytest.raises(ConfigError, match="acc_lo < acc_hi"):
        AdvantageConfig(acc_lo=0.9, acc_hi=0.1)

import dataclasses
import math

import numpy as np
import pytest
from grpo_helpers import episode, gui, sample, shell, tool
from grpo_trainer.errors import ConfigError, RegistryError
from grpo_trainer.objectives.advantage import (
    AdvantageConfig,
    broadcast_per_step,
    broadcast_whole,
    group_advantages,
    hybridcua_config,
    keep_group,
    keep_spread,
    zscore,
)
from grpo_trainer.objectives.rewards import RewardConfig


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
    # C: failure whose only command failed (exit 2): R = -1, and -0.3 on that step after normalisation.
    a = episode(1.0, [shell("ls"), sample(gui("terminate"), index=1)], label)
    b = episode(1.0, [sample(gui(), index=i) for i in range(3)], label)
    c = episode(0.0, [shell("ls /nonexistent", 2, "ls: cannot access '/nonexistent'")], label)
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


CLI_LABEL = {"preferred_interface": "cli"}


def _cli_success():
    return episode(1.0, [shell("ls"), sample(gui("terminate"), index=1)], CLI_LABEL)


def _gui_success():
    return episode(1.0, [sample(gui()), sample(gui("terminate"), index=1)], CLI_LABEL)


def _failure(score: float = 0.0):
    return episode(score, [sample(gui()), sample(gui("terminate"), index=1)], CLI_LABEL)


def test_the_issues_first_group_cli_vs_gui_success_gap_on_both_outcome_scales():
    # 2 CLI successes, 2 GUI successes, 4 failures; label cli, unbiased std, eps 1e-6.
    group = [_cli_success(), _cli_success(), _gui_success(), _gui_success()] + [_failure() for _ in range(4)]
    released, config = hybridcua_config("released")
    paper, _ = hybridcua_config("paper")
    # raw_score: R = 1.1, 1.1, 1.0, 1.0, 0 x4; mean 4.2/8 = 0.525
    # squared deviations 2*0.575^2 + 2*0.475^2 + 4*0.525^2 = 0.66125 + 0.45125 + 1.1025 = 2.215
    # std = sqrt(2.215/7) = 0.56252; gap = 0.1 / std = 0.1778
    raw = group_advantages(group, released, config)
    assert raw.returns == pytest.approx([1.1, 1.1, 1.0, 1.0, 0, 0, 0, 0])
    gap_raw = raw.advantages[0][0] - raw.advantages[2][0]
    assert gap_raw == pytest.approx(0.1 / (math.sqrt(2.215 / 7) + 1e-6)) and round(gap_raw, 3) == 0.178
    # binary: R = 1.1, 1.1, 1.0, 1.0, -1 x4; mean 0.2/8 = 0.025
    # squared deviations 2*1.075^2 + 2*0.975^2 + 4*1.025^2 = 2.31125 + 1.90125 + 4.2025 = 8.415
    # std = sqrt(8.415/7) = 1.09642; gap = 0.1 / std = 0.0912
    binary = group_advantages(group, paper, config)
    gap_binary = binary.advantages[0][0] - binary.advantages[2][0]
    assert gap_binary == pytest.approx(0.1 / (math.sqrt(8.415 / 7) + 1e-6)) and round(gap_binary, 3) == 0.091


def test_the_issues_second_group_a_half_score_rollout_on_both_outcome_scales():
    # Scores 0.5, 1.0 and six 0 (GUI only, so no interface bonus).
    group = [_failure(0.5), _gui_success()] + [_failure() for _ in range(6)]
    released, config = hybridcua_config("released")
    paper, _ = hybridcua_config("paper")
    # raw_score: R = 0.5, 1.0, 0 x6; mean 1.5/8 = 0.1875
    # squared deviations 0.3125^2 + 0.8125^2 + 6*0.1875^2 = 0.09765625 + 0.66015625 + 0.2109375 = 0.96875
    # std = sqrt(0.96875/7) = 0.372012; A(0.5) = 0.3125 / std = +0.840
    raw = group_advantages(group, released, config)
    assert raw.advantages[0] == pytest.approx([0.3125 / (math.sqrt(0.96875 / 7) + 1e-6)] * 2)
    assert round(raw.advantages[0][0], 3) == 0.840
    # binary: R = -1 (0.5 is below the threshold), 1, -1 x6; mean -6/8 = -0.75
    # squared deviations 0.25^2 + 1.75^2 + 6*0.25^2 = 0.0625 + 3.0625 + 0.375 = 3.5
    # std = sqrt(3.5/7) = sqrt(0.5) = 0.707107; A(0.5) = -0.25 / std = -0.354
    binary = group_advantages(group, paper, config)
    assert binary.advantages[0] == pytest.approx([-0.25 / (math.sqrt(0.5) + 1e-6)] * 2)
    assert round(binary.advantages[0][0], 3) == -0.354


def test_a_partial_credit_group_with_the_execution_term():
    # raw_score with lambda_exec 0.3 (the paper's coefficient on the released scale), label cli.
    # A: score 1.0 through the CLI: R = 1.0 + 0.1 = 1.1
    # B: score 0.5, its first step a failed command (exit 2): R = 0.5 (the bonus needs score >= 1),
    #    -0.3 on that step
    # C: score 0.25 with grep's silent exit 1: R = 0.25, no execution term
    # D: score 0: R = 0
    rewards, config = hybridcua_config("released", lambda_exec=0.3)
    a = _cli_success()
    b = episode(0.5, [shell("ls /nonexistent", 2, "ls: cannot access"), sample(gui(), index=1)], CLI_LABEL)
    c = episode(0.25, [shell("grep zzz /etc/hostname", 1, ""), sample(gui(), index=1)], CLI_LABEL)
    d = _failure()
    result = group_advantages([a, b, c, d], rewards, dataclasses.replace(config, std_eps=0.0))
    # mean 1.85/4 = 0.4625; deviations 0.6375, 0.0375, -0.2125, -0.4625
    # squared: 0.40640625 + 0.00140625 + 0.04515625 + 0.21390625 = 0.666875; std = sqrt(0.666875/3) = 0.471478
    std = math.sqrt(0.666875 / 3)
    assert result.returns == pytest.approx([1.1, 0.5, 0.25, 0.0]) and result.kept
    assert result.advantages[0] == pytest.approx([0.6375 / std] * 2)  # +1.352 on both steps
    assert result.advantages[1] == pytest.approx([0.0375 / std - 0.3, 0.0375 / std])  # -0.220, +0.080
    assert result.advantages[2] == pytest.approx([-0.2125 / std] * 2)  # -0.451: exit 1, empty stderr
    assert result.advantages[3] == pytest.approx([-0.4625 / std] * 2)  # -0.981


def test_an_all_equal_group_is_dropped_before_the_execution_term():
    # Four failures, R = 0 each (raw) / -1 each (binary): the z-scores are all 0 and the group is
    # dropped although one member has a failed command that would have cost -0.3.
    failed = episode(0.0, [shell("foobarbaz", 127, "bash: line 1: foobarbaz: command not found")], CLI_LABEL)
    group = [failed] + [_failure() for _ in range(3)]
    for variant in ("paper", "released"):
        rewards, config = hybridcua_config(variant, lambda_exec=0.3)
        result = group_advantages(group, rewards, config)
        assert len(set(result.returns)) == 1 and not result.kept
    assert not keep_spread([1.1, 1.1 + 1e-13], 1.0, AdvantageConfig())  # within HybridCUA's 1e-12
    with pytest.raises(ConfigError, match="variant must be one of"):
        hybridcua_config("preprint")


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

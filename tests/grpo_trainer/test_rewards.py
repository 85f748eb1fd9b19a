import pytest
from grpo_helpers import episode, gui, sample, tool
from grpo_trainer.errors import RegistryError
from grpo_trainer.rewards import (
    RewardConfig,
    episode_return,
    hybridcua_config,
    step_bonuses,
)


def test_return_success_pays_one_minus_length_share():
    # T=4, T_max=50: 1 - 0.05 * 4/50 = 0.996
    ep = episode(1.0, [sample(gui())] * 4)
    assert episode_return(ep, RewardConfig()) == pytest.approx(0.996)


def test_return_failure_at_the_step_cap_pays_both_penalties():
    # T=T_max=5: -1 - 0.05 * 5/5 - 0.2 = -1.25
    ep = episode(0.0, [sample(gui())] * 5)
    assert episode_return(ep, RewardConfig(max_steps=5)) == pytest.approx(-1.25)


def test_partial_score_below_threshold_is_a_failure():
    ep = episode(0.5, [sample(gui())])
    assert episode_return(ep, RewardConfig(max_steps=10)) == pytest.approx(-1.0 - 0.005)
    assert episode_return(ep, RewardConfig(max_steps=10, success_threshold=0.5)) == pytest.approx(0.995)


def test_tool_bonus_once_per_new_key_only_for_executed_state_changing_calls():
    samples = [
        sample(tool(cell="A1", value="5"), index=0),  # new, ok, writes: bonus
        sample(tool(cell="A1", value="5"), index=1),  # same key again: none
        sample(tool(cell="A1", value="6"), index=2),  # new arguments: bonus
        sample(tool("calc.get_cell", cell="A1"), read_only=True, index=3),  # read-only: none
        sample(tool("calc.sort", col="B"), exec_ok=False, index=4),  # failed: none
        sample(gui(), index=5),  # GUI: none
        sample(None, exec_ok=False, index=6),  # parse error: none
        sample(tool("calc.clear", cell="B1"), read_only=None, index=7),  # hint unknown: bonus
    ]
    # The bonus is not gated on outcome: a failed episode gets it too.
    bonuses = step_bonuses(episode(0.0, samples), RewardConfig())
    assert bonuses == [0.1, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 0.1]


def test_a_failed_call_uses_up_its_key():
    samples = [sample(tool(cell="A1"), exec_ok=False), sample(tool(cell="A1"), index=1)]
    assert step_bonuses(episode(1.0, samples), RewardConfig()) == [0.0, 0.0]


def test_hybridcua_interface_preference_is_success_gated():
    config = hybridcua_config()
    used_mcp = [sample(tool(cell="A1")), sample(gui("terminate"), index=1)]
    label = {"preferred_interface": "mcp"}
    assert episode_return(episode(1.0, used_mcp, label), config) == pytest.approx(1.1)
    assert episode_return(episode(0.0, used_mcp, label), config) == pytest.approx(-1.0)
    gui_only = [sample(gui()), sample(gui("terminate"), index=1)]
    assert episode_return(episode(1.0, gui_only, label), config) == pytest.approx(1.0)
    assert episode_return(episode(1.0, gui_only, {"preferred_interface": "gui"}), config) == pytest.approx(
        1.1
    )
    assert episode_return(episode(1.0, used_mcp), config) == pytest.approx(1.0)  # unlabelled


def test_hybridcua_execution_penalty_lands_on_the_failing_actions():
    samples = [sample(tool(cell="A1"), exec_ok=False), sample(gui(), index=1), sample(None, exec_ok=False)]
    assert step_bonuses(episode(1.0, samples), hybridcua_config()) == [-0.3, 0.0, -0.3]


def test_unknown_term_names_fail_at_config_time_with_a_suggestion():
    with pytest.raises(RegistryError, match="Did you mean 'tool_bonus'"):
        RewardConfig(step_terms=("tool_bonu",))

import pytest
from grpo_helpers import episode, gui, sample, tool
from grpo_trainer.advantage import hybridcua_config
from grpo_trainer.errors import ConfigError, RegistryError
from grpo_trainer.rewards import (
    RewardConfig,
    episode_return,
    interface_unlabelled,
    step_bonuses,
    used_cli,
)
from osworld_mcp_env.tasks.templates import task_labels


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


def test_used_cli_counts_executed_bash_and_os_tool_calls_only():
    config = RewardConfig()
    assert used_cli(episode(1.0, [sample(tool("bash", command="ls"))]), config)
    assert used_cli(
        episode(1.0, [sample(gui()), sample(tool("os.search_files", keyword="x"), index=1)]), config
    )
    assert not used_cli(episode(1.0, [sample(tool("bash", command="false"), exec_ok=False)]), config)
    assert not used_cli(episode(1.0, [sample(tool("libreoffice_calc.set_cell_value", cell="A1"))]), config)
    assert not used_cli(episode(1.0, [sample(gui()), sample(None, exec_ok=False, index=1)]), config)


def test_hybridcua_interface_preference_pays_a_success_whose_cli_use_matches_the_label():
    rewards, _ = hybridcua_config()
    cli = {"preferred_interface": "cli"}
    gui_label = {"preferred_interface": "gui"}
    shell_then_gui = [sample(tool("bash", command="ls")), sample(gui("terminate"), index=1)]
    app_tool_only = [
        sample(tool("libreoffice_calc.set_cell_value", cell="A1")),
        sample(gui("terminate"), index=1),
    ]
    # R = outcome + 0.1 * 1[used_cli == (label == "cli")], paid on success only.
    assert episode_return(episode(1.0, shell_then_gui, cli), rewards) == pytest.approx(1.1)
    assert episode_return(episode(0.0, shell_then_gui, cli), rewards) == pytest.approx(-1.0)
    assert episode_return(episode(1.0, app_tool_only, cli), rewards) == pytest.approx(1.0)
    assert episode_return(episode(1.0, app_tool_only, gui_label), rewards) == pytest.approx(1.1)
    # The paper's rule: a GUI-labelled task whose trajectory contains a CLI command is not paid,
    # even though it also acted through the GUI.
    assert episode_return(episode(1.0, shell_then_gui, gui_label), rewards) == pytest.approx(1.0)


def test_an_unlabelled_task_turns_the_interface_term_off_and_is_counted():
    rewards, _ = hybridcua_config()
    used = [sample(tool("bash", command="ls"))]
    assert episode_return(episode(1.0, used), rewards) == pytest.approx(1.0)
    assert interface_unlabelled(episode(1.0, used), rewards)
    assert not interface_unlabelled(episode(1.0, used, {"preferred_interface": "cli"}), rewards)
    assert not interface_unlabelled(episode(1.0, used), RewardConfig())  # term not configured
    with pytest.raises(ConfigError, match="preferred_interface must be one of"):
        episode_return(episode(1.0, used, {"preferred_interface": "mcp"}), rewards)


def test_hybridcua_execution_penalty_lands_on_failed_shell_commands_only():
    samples = [
        sample(tool("bash", command="false"), exec_ok=False, index=0),  # failed shell command
        sample(tool("os.rename_directory", old="a"), exec_ok=False, index=1),  # failed CLI-routed tool
        sample(tool("libreoffice_calc.set_cell_value"), exec_ok=False, index=2),  # app tool: not a shell
        sample(gui(), exec_ok=False, index=3),  # refused GUI action
        sample(None, exec_ok=False, index=4),  # parse error
        sample(tool("bash", command="ls"), index=5),  # executed
    ]
    rewards, _ = hybridcua_config()
    assert step_bonuses(episode(1.0, samples), rewards) == [-0.3, -0.3, 0.0, 0.0, 0.0, 0.0]


def test_templates_label_their_tasks_from_the_tool_oracle():
    assert task_labels("calc-count-above@1003") == {"preferred_interface": "cli"}  # has a tool oracle
    assert task_labels("os-write-file") == {"preferred_interface": "gui"}  # GUI oracle only
    assert task_labels("toy") == {} and task_labels({"id": "x"}) == {}  # no template: unlabelled


def test_unknown_term_names_fail_at_config_time_with_a_suggestion():
    with pytest.raises(RegistryError, match="Did you mean 'tool_bonus'"):
        RewardConfig(step_terms=("tool_bonu",))

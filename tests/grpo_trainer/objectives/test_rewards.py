import dataclasses

import pytest
from grpo_helpers import episode, gui, sample, shell, tool
from grpo_trainer.errors import ConfigError, RegistryError
from grpo_trainer.objectives.advantage import hybridcua_config
from grpo_trainer.objectives.rewards import (
    RewardConfig,
    episode_return,
    interface_unlabelled,
    step_bonuses,
    used_cli,
)
from hybrid_agent.step_kind import StepKind
from hybrid_agent.trajectory import Call, Evidence, Executed
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


HEREDOC_CLICK = "python3 <<'PY'\nimport pyautogui\npyautogui.click(500, 300)\nPY"


def test_used_cli_counts_any_cli_step_failed_or_not_and_nothing_else():
    # HybridCUA sets used_cli on any cli-kind step, whether it failed or not.
    assert used_cli(episode(1.0, [shell("ls")]))
    assert used_cli(episode(1.0, [shell("ls /nonexistent", 2, "ls: cannot access ...")]))
    assert used_cli(episode(1.0, [shell("sleep 5", -1, timed_out=True)]))
    # A heredoc that drives the screen is a GUI step; an os.* MCP tool is a tool call.
    assert not used_cli(episode(1.0, [shell(HEREDOC_CLICK)]))
    assert not used_cli(episode(1.0, [sample(gui()), sample(tool("os.search_files", keyword="x"), index=1)]))
    assert not used_cli(episode(1.0, [sample(tool("libreoffice_calc.set_cell_value", cell="A1"))]))
    assert not used_cli(episode(1.0, [sample(gui()), sample(None, exec_ok=False, index=1)]))


def test_tool_bonus_never_goes_to_a_shell_command():
    # A bash call is no MCP tool: an executed, "not read-only" command earns no lambda_mcp.
    assert step_bonuses(episode(1.0, [shell("ls"), shell(HEREDOC_CLICK, index=1)]), RewardConfig()) == [0, 0]


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


def test_hybridcua_execution_term_lands_on_failed_cli_steps_only():
    # Exit codes and stderr as the real desktop reports them (test_rewards_desktop.py checks
    # these five against the desktop itself).
    samples = [
        shell("ls ~ | head -3", 0, index=0),  # succeeded
        shell("ls /nonexistent", 2, "ls: cannot access '/nonexistent': No such file or directory\n", index=1),
        shell("grep zzz /etc/hostname", 1, "", index=2),  # no match: exit 1, empty stderr
        shell("foobarbaz", 127, "bash: line 1: foobarbaz: command not found\n", index=3),
        shell("sleep 5", -1, timed_out=True, index=4),
        shell("false", 1, "", index=5),  # exit 1, empty stderr: not a failure by HybridCUA's rule
        shell(HEREDOC_CLICK, 1, "Traceback ...", index=6),  # a failing GUI heredoc: not checked
        sample(tool("os.rename_directory", old="a"), exec_ok=False, index=7),  # MCP tool: not checked
        sample(tool("libreoffice_calc.set_cell_value"), exec_ok=False, index=8),
        sample(gui(), exec_ok=False, index=9),  # refused GUI action
        sample(None, exec_ok=False, index=10),  # parse error
    ]
    paper, _ = hybridcua_config()
    assert step_bonuses(episode(1.0, samples), paper) == [0, -0.3, 0, -0.3, -0.3, 0, 0, 0, 0, 0, 0]
    released, _ = hybridcua_config("released")
    assert step_bonuses(episode(1.0, samples), released) == [0.0] * 11


def test_a_command_that_never_reached_the_desktop_or_could_not_start_is_exempt():
    never_sent = sample(
        tool("bash", command="ls"), exec_ok=False, evidence=Evidence(False, error_code="timeout")
    )
    could_not_start = sample(
        tool("bash", command="ls"), exec_ok=False, evidence=Evidence(False, returncode=-1, stderr="ENOMEM")
    )
    rewards, _ = hybridcua_config()
    assert step_bonuses(episode(0.0, [never_sent, could_not_start]), rewards) == [0.0, 0.0]


def test_outcome_scales():
    # binary: +1 at the threshold, -1 below (a 0.5 is a failure); raw_score: the score itself.
    partial, full, none = (episode(s, [sample(gui())]) for s in (0.5, 1.0, 0.0))
    binary = RewardConfig(return_terms=("outcome",))
    raw = RewardConfig(return_terms=("outcome",), outcome="raw_score")
    assert [episode_return(e, binary) for e in (partial, full, none)] == [-1.0, 1.0, -1.0]
    assert [episode_return(e, raw) for e in (partial, full, none)] == [0.5, 1.0, 0.0]
    with pytest.raises(ConfigError, match="outcome must be one of"):
        RewardConfig(outcome="score")
    with pytest.raises(ConfigError, match="lambda_exec is a weight"):
        RewardConfig(lambda_exec=-0.3)


def test_templates_label_their_tasks_from_the_tool_oracle():
    assert task_labels("calc-count-above@1003") == {"preferred_interface": "cli"}  # has a tool oracle
    assert task_labels("os-write-file") == {"preferred_interface": "gui"}  # GUI oracle only
    assert task_labels("toy") == {} and task_labels({"id": "x"}) == {}  # no template: unlabelled


def test_unknown_term_names_fail_at_config_time_with_a_suggestion():
    with pytest.raises(RegistryError, match="Did you mean 'tool_bonus'"):
        RewardConfig(step_terms=("tool_bonu",))


def test_a_reply_of_several_calls_is_one_sample_judged_on_all_of_its_calls():
    # HybridCUA's turn: a heredoc click first, then a command that failed; one sample, one term.
    first = shell(HEREDOC_CLICK)
    failed = Executed(Call("bash", {"command": "ls /x"}), Evidence(True, returncode=2, stderr="ls: no"))
    turn = dataclasses.replace(first, more=(failed,))
    assert turn.kind is StepKind.GUI and turn.cli_failed
    assert used_cli(episode(1.0, [turn]))  # the CLI call comes second in the reply
    rewards, _ = hybridcua_config()
    assert step_bonuses(episode(1.0, [turn, shell("ls", index=1)]), rewards) == [-0.3, 0.0]

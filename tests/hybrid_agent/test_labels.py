"""HybridCUA's interface label: ranking of GUI-only, CLI-only and hybrid rollouts, every tie rule by hand."""

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from hybrid_agent.cli import main
from hybrid_agent.errors import ConfigError
from hybrid_agent.labels import (
    Mode,
    ModeRollouts,
    TaskLabel,
    interface_label,
    rank_modes,
    read_labels,
    write_labels,
)
from hybrid_agent.recorder import EpisodeWriter


def rollouts(mode, n, lengths=(), cli=0):
    return ModeRollouts(Mode(mode), n, tuple(lengths), cli)


def test_success_rate_ranks_when_rates_differ_by_more_than_5_points():
    # 16 each: CLI 12/16 = 75 %, hybrid 10/16 = 62.5 %, GUI 4/16 = 25 %; lengths do not matter.
    results = [
        rollouts("gui", 16, [3] * 4),
        rollouts("cli", 16, [20] * 12),
        rollouts("hybrid", 16, [5] * 10, cli=10),
    ]
    assert rank_modes(results) == [Mode.CLI, Mode.HYBRID, Mode.GUI]
    assert interface_label(results) == 1


def test_within_5_points_the_shorter_median_length_of_successes_wins():
    # GUI 15/20 = 75 %, CLI 16/20 = 80 %: 5 points apart, a tie; GUI's median 4 beats CLI's 9.
    results = [
        rollouts("gui", 20, [3, 4, 5] * 5),
        rollouts("cli", 20, [9] * 16),
        rollouts("hybrid", 20, [2] * 5),
    ]
    assert rank_modes(results) == [Mode.GUI, Mode.CLI, Mode.HYBRID]
    assert interface_label(results) == 0
    # 6.25 points apart (one rollout of 16) is no tie: the higher rate wins despite the longer median.
    apart = [rollouts("gui", 16, [3] * 10), rollouts("cli", 16, [9] * 11), rollouts("hybrid", 16)]
    assert rank_modes(apart)[0] == Mode.CLI


def test_the_median_is_of_the_successful_rollouts_only():
    # Even count: median of (4, 10) is 7, below hybrid's 8 (same 50 % rate).
    results = [rollouts("gui", 4), rollouts("cli", 4, [4, 10]), rollouts("hybrid", 4, [8, 8], cli=2)]
    assert rank_modes(results) == [Mode.CLI, Mode.HYBRID, Mode.GUI]


def test_equal_rate_and_median_prefer_a_single_interface_then_gui():
    same = [3, 5, 7]
    results = [rollouts("hybrid", 8, same, cli=3), rollouts("cli", 8, same), rollouts("gui", 8, same)]
    assert rank_modes(results) == [Mode.GUI, Mode.CLI, Mode.HYBRID]
    assert interface_label(results) == 0
    # Hybrid tied with CLI alone: CLI, a single interface, ranks first (label 1).
    two = [rollouts("gui", 8, [3]), rollouts("cli", 8, same), rollouts("hybrid", 8, same, cli=0)]
    assert rank_modes(two) == [Mode.CLI, Mode.HYBRID, Mode.GUI]
    assert interface_label(two) == 1


def test_no_successes_anywhere_is_a_tie_that_gui_only_wins():
    results = [rollouts("hybrid", 16), rollouts("cli", 16), rollouts("gui", 16)]
    assert rank_modes(results) == [Mode.GUI, Mode.CLI, Mode.HYBRID]
    assert interface_label(results) == 0


@pytest.mark.parametrize(("cli_successes", "label"), [(6, 1), (5, 0), (0, 0)])
def test_hybrid_first_is_label_1_only_when_more_than_half_its_successes_used_the_cli(cli_successes, label):
    # Hybrid 10/16 beats GUI 4/16 and CLI 2/16; 6 of 10 successes with a CLI command is > half, 5 is not.
    results = [
        rollouts("gui", 16, [3] * 4),
        rollouts("cli", 16, [3] * 2),
        rollouts("hybrid", 16, [6] * 10, cli=cli_successes),
    ]
    assert rank_modes(results)[0] == Mode.HYBRID
    assert interface_label(results) == label


def test_a_mode_given_twice_is_refused():
    with pytest.raises(ConfigError, match="Each mode ranks once"):
        rank_modes([rollouts("gui", 2), rollouts("gui", 2), rollouts("cli", 2)])


def test_the_labels_file_round_trips_to_preferred_interfaces(tmp_path):
    modes = (rollouts("gui", 2, [3]), rollouts("cli", 2, [2, 2]), rollouts("hybrid", 2))
    labels = [
        TaskLabel("calc-sum-column", 1, (Mode.CLI, Mode.GUI, Mode.HYBRID), modes),
        TaskLabel("os-create-file", 0, (Mode.GUI, Mode.CLI, Mode.HYBRID), modes),
    ]
    path = write_labels(tmp_path / "labels.json", labels)
    assert read_labels(path) == {"calc-sum-column": "cli", "os-create-file": "gui"}
    entry = json.loads(path.read_text())["tasks"]["calc-sum-column"]
    cli = {"rollouts": 2, "successes": 2, "success_rate": 1.0, "median_length": 2.0, "cli_successes": 0}
    assert entry["modes"]["cli"] == cli
    assert entry["modes"]["hybrid"]["median_length"] is None
    (tmp_path / "bad.json").write_text('{"tasks": {}}')
    with pytest.raises(ConfigError, match="not a labels file"):
        read_labels(tmp_path / "bad.json")


CLICK = {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [5, 5]}}
BASH = {"name": "bash", "arguments": {"command": "ls ~"}}
HEREDOC = {"name": "bash", "arguments": {"command": "python3 <<'PY'\nimport pyautogui\nPY"}}
DONE = {"name": "computer_use", "arguments": {"action": "terminate", "status": "success"}}


def record_run(run_dir, episodes):
    """Episode records as the runner writes them: ``{(task, run): (calls, score)}``."""
    with ThreadPoolExecutor(1) as pool:
        for (task, run), (calls, score) in episodes.items():
            writer = EpisodeWriter(run_dir, task, run, {"task_id": task, "run": run, "domain": "os"}, pool)
            for i, call in enumerate(calls):
                writer.step({"step": i, "parse": {"ok": True, "call": call}, "action": call}, None)
            writer.finish({"score": score, "error": None, "steps": len(calls)})
    return run_dir


def test_hybrid_agent_label_ranks_three_recorded_runs_and_writes_the_file(tmp_path, capsys):
    # task "a": GUI 2/2 in 3 steps, CLI 2/2 in 2, hybrid 2/2 in 2 -> tie on rate, CLI and hybrid on
    # median 2; CLI (single interface) first: label 1. Task "b": GUI 2/2 in 2, CLI 0/2, hybrid 2/2 in 2
    # with a pyautogui heredoc only (a GUI step) -> GUI first on the preference: label 0.
    gui = record_run(tmp_path / "runs" / "gui", {
        ("a", 0): ([CLICK, CLICK, DONE], 1.0), ("a", 1): ([CLICK, CLICK, DONE], 1.0),
        ("b", 0): ([CLICK, DONE], 1.0), ("b", 1): ([CLICK, DONE], 1.0)})  # fmt: skip
    cli = record_run(tmp_path / "runs" / "cli", {
        ("a", 0): ([BASH, DONE], 1.0), ("a", 1): ([BASH, DONE], 1.0),
        ("b", 0): ([BASH, DONE], 0.0), ("b", 1): ([BASH, DONE], 0.0)})  # fmt: skip
    hybrid = record_run(tmp_path / "runs" / "hybrid", {
        ("a", 0): ([BASH, DONE], 1.0), ("a", 1): ([CLICK, DONE], 1.0),
        ("b", 0): ([HEREDOC, DONE], 1.0), ("b", 1): ([HEREDOC, DONE], 1.0)})  # fmt: skip
    out = tmp_path / "labels.json"
    assert gui.parent == cli.parent == hybrid.parent
    args = ["label", "--out", str(gui.parent), "--labels", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "a: label 1 (cli > hybrid > gui; gui 2/2, cli 2/2, hybrid 2/2)" in printed
    assert "b: label 0 (gui > hybrid > cli; gui 2/2, cli 0/2, hybrid 2/2)" in printed
    assert read_labels(out) == {"a": "cli", "b": "gui"}
    assert json.loads(out.read_text())["tasks"]["a"]["modes"]["hybrid"]["cli_successes"] == 1

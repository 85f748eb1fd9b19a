"""OSWorld's results layout from recorded runs: files, traj.jsonl keys, and the same accuracy as Table 2."""

import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from statistics import mean

import numpy as np
import pytest
from hybrid_agent.cli import main
from hybrid_agent.policies.scripted import ScriptedPolicy
from hybrid_agent.recorder import EPISODES, EpisodeWriter, check_run_config, iter_episodes, write_suite
from hybrid_agent.report import write_report
from hybrid_agent.report.osworld import (
    export_osworld,
    find_trees,
    format_summary,
    read_exported,
    trees_from_run,
)
from hybrid_agent.report.summary import summarize_run
from hybrid_agent.runner import RunConfig, Runner
from hybrid_agent.suite import load_suite
from osworld_mcp_env.tasks.bundled import bundled_solution

sys.path.insert(0, str(Path(__file__).parents[2] / "osworld_mcp_env"))
from desktop_support import desktop_missing

TRAJ_KEYS = {
    "step_num",
    "action_timestamp",
    "action",
    "response",
    "reward",
    "done",
    "info",
    "screenshot_file",
}


def frame(value):
    return np.full((12, 16, 3), value, np.uint8)


def record(run_dir, pool, task, domain, run, score, steps=2, error=None):
    writer = EpisodeWriter(run_dir, task, run, {"task_id": task, "domain": domain, "run": run}, pool)
    for i in range(steps):
        action = {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [3 + i, 4]}}
        writer.step(
            {
                "step": i,
                "model_output": f"Action: click {i}",
                "parse": {"ok": True, "call": action, "repairs": []},
                "action": action,
                "tokens": {"input": 100, "output": 10},
            },
            frame(10 * run + i),
        )
    writer.finish({"score": score, "error": error, "wall_s": 1.0})


def recorded_run(tmp_path):
    """Two runs of three tasks in two domains; run 1 of calc-b errored (no score)."""
    run_dir = tmp_path / "run"
    check_run_config(run_dir, {"policy": "openai:http://h/v1#org/model-x", "agent": {"context": "win4"}})
    write_suite(run_dir, [("calc-a", "libreoffice_calc"), ("calc-b", "libreoffice_calc"), ("os-c", "os")], 2)
    with ThreadPoolExecutor(1) as pool:
        record(run_dir, pool, "calc-a", "libreoffice_calc", 0, 1.0, steps=3)
        record(run_dir, pool, "calc-b", "libreoffice_calc", 0, 0.0)
        record(run_dir, pool, "os-c", "os", 0, 1.0)
        record(run_dir, pool, "calc-a", "libreoffice_calc", 1, 1.0)
        record(
            run_dir, pool, "calc-b", "libreoffice_calc", 1, None, error={"type": "env_error", "message": "x"}
        )
        record(run_dir, pool, "os-c", "os", 1, 0.5)
    return run_dir


def show_result_rate(result_dir):
    """OSWorld show_result.py's overall rate, computed independently: the mean of every result.txt found."""
    scores = [
        float(Path(root, "result.txt").read_text())
        for root, _, files in os.walk(result_dir)
        if "result.txt" in files
    ]
    return sum(scores) / len(scores)


def test_the_export_has_osworlds_layout_and_trajectory_lines(tmp_path):
    run_dir = recorded_run(tmp_path)
    export = export_osworld(run_dir, tmp_path / "results")
    assert export.target == "computer_use_mcp/screenshot/org_model-x" and (export.tasks, export.scored) == (
        6,
        5,
    )
    task = tmp_path / "results" / "run0" / export.target / "libreoffice_calc" / "calc-a"
    assert (task / "result.txt").read_text() == "1.0\n"
    lines = [json.loads(line) for line in (task / "traj.jsonl").read_text().splitlines()]
    assert [line["step_num"] for line in lines] == [1, 2, 3] and all(set(line) == TRAJ_KEYS for line in lines)
    assert [line["done"] for line in lines] == [False, False, True]
    assert [line["reward"] for line in lines] == [0.0, 0.0, 1.0]
    assert (
        lines[0]["action"]["arguments"]["coordinate"] == [3, 4] and lines[0]["response"] == "Action: click 0"
    )
    # The screen after step n is the frame recorded with step n + 1; the last step has none.
    assert lines[0]["screenshot_file"] == f"step_1_{lines[0]['action_timestamp']}.png"
    after = run_dir / EPISODES / "calc-a__run0" / "step_001.png"
    assert (task / lines[0]["screenshot_file"]).read_bytes() == after.read_bytes()
    assert lines[2]["screenshot_file"] is None
    # Besides OSWorld's after-frames: step_0, the frame the model saw first (read back for training).
    initial = f"step_0_{lines[0]['action_timestamp']}.png"
    pngs = sorted(line["screenshot_file"] for line in lines[:2])
    assert sorted(p.name for p in task.glob("*.png")) == sorted([initial, *pngs])
    episode = json.loads((task / "episode.json").read_text())
    assert episode["initial_screenshot"] == initial and episode["end"]["score"] == 1.0
    errored = tmp_path / "results" / "run1" / export.target / "libreoffice_calc" / "calc-b"
    assert not (errored / "result.txt").exists() and json.loads((errored / "error.json").read_text())["type"]


def test_the_export_reads_back_as_the_records_it_was_written_from(tmp_path):
    run_dir = recorded_run(tmp_path)
    export_osworld(run_dir, tmp_path / "results")
    read = {(e.record.task_id, e.record.run): e for e in read_exported(tmp_path / "results")}
    records = list(iter_episodes(run_dir))
    assert sorted(read) == sorted((r.task_id, r.run) for r in records)
    for original in records:
        back = read[(original.task_id, original.run)]
        assert (back.record.header, back.record.end) == (original.header, original.end)
        assert len(back.record.steps) == len(original.steps)
        for step, again in zip(original.steps, back.record.steps, strict=True):
            assert (again["step"], again["action"], again["parse"]["call"]) == (
                step["step"],
                step["action"],
                step["parse"]["call"],
            )
            # The frame the model saw at each step, first one included, is the recorded one.
            seen = (back.frames / again["screenshot"]).read_bytes()
            assert seen == (run_dir / EPISODES / step["screenshot"]).read_bytes()


def test_show_result_over_the_export_gives_table2s_accuracy(tmp_path, capsys):
    run_dir = recorded_run(tmp_path)
    export_osworld(run_dir, tmp_path / "results")
    # Hand-computed: run 0 = (1 + 0 + 1) / 3, run 1 = (1 + 0.5) / 2 (the errored episode has no score).
    run0, run1 = 2 / 3, 0.75
    assert show_result_rate(tmp_path / "results" / "run0") == pytest.approx(run0)
    assert show_result_rate(tmp_path / "results" / "run1") == pytest.approx(run1)
    accuracy = summarize_run(run_dir).accuracy
    assert accuracy is not None and accuracy.mean == pytest.approx(mean([run0, run1]))
    report = write_report([run_dir], tmp_path / "out")
    assert f"{100 * mean([run0, run1]):.1f} ± " in report.table2

    assert main(["summary", str(tmp_path / "results"), "--osworld"]) == 0
    text = capsys.readouterr().out
    assert "== run0/computer_use_mcp/screenshot/org_model-x" in text
    assert "Domain: libreoffice_calc  Runned: 2  Success Rate: 50.00 %" in text
    assert "Domain: os  Runned: 1  Success Rate: 50.00 %" in text  # run 1: os-c scored 0.5
    assert "Runned: 3  Current Success Rate: 66.67 %  2.00 / 3" in text
    assert "Runned: 2  Current Success Rate: 75.00 %  1.50 / 2" in text
    assert "mean over 2 runs 70.83 ± 4.17 % (SE)" in text
    # The records read directly give the same lines as the exported tree.
    direct = format_summary(trees_from_run(run_dir)).replace(
        "records", "computer_use_mcp/screenshot/org_model-x"
    )
    assert direct == format_summary(find_trees(tmp_path / "results"))


def test_summary_of_a_path_without_results_says_so(tmp_path, capsys):
    assert main(["summary", str(tmp_path), "--osworld"]) == 2
    assert "No OSWorld result tree" in capsys.readouterr().err


def test_the_cli_exports_with_the_names_given(tmp_path, capsys):
    run_dir = recorded_run(tmp_path)
    argv = ["export-osworld", str(run_dir), "--out", str(tmp_path / "r"), "--action-space", "pyautogui"]
    assert main([*argv, "--model", "my-model"]) == 0
    assert (
        tmp_path / "r" / "run1" / "pyautogui" / "screenshot" / "my-model" / "os" / "os-c" / "result.txt"
    ).exists()
    assert "6 task folders, 5 with result.txt" in capsys.readouterr().err


class OracleButWriter(ScriptedPolicy):
    """The bundled oracles, except the writer task's near miss: a run with scores 1 and 0 to export."""

    def script(self, task_id):
        return bundled_solution(task_id, "wrong" if task_id.startswith("writer") else "oracle")


@pytest.mark.desktop
@pytest.mark.slow
@pytest.mark.skipif(
    desktop_missing() is not None, reason=f"embedded desktop unavailable: {desktop_missing()}"
)
def test_a_real_run_on_the_bundled_tasks_exports_to_the_same_numbers(tmp_path, capsys):
    tasks = load_suite("bundled")
    config = RunConfig(policy="scripted", envs=2, runs=2)
    result = Runner(config, OracleButWriter(), tmp_path / "run", progress=False).evaluate(tasks)
    assert (result.finished, result.errors) == (6, 0)
    scores = {(r.task_id, r.run): r.end["score"] for r in iter_episodes(tmp_path / "run")}
    assert scores[("writer-replace-word", 0)] == scores[("writer-replace-word", 1)] == 0.0
    export = export_osworld(tmp_path / "run", tmp_path / "results")
    assert export.target == "computer_use_mcp/screenshot/scripted" and export.scored == 6
    for tree in find_trees(tmp_path / "results"):  # hand-computed: calc 1, os 1, writer 0 in each run
        assert tree.scores == {
            "libreoffice_calc": {"calc-sum-column": 1.0},
            "libreoffice_writer": {"writer-replace-word": 0.0},
            "os": {"os-create-file": 1.0},
        }
        assert show_result_rate(tmp_path / "results" / f"run{tree.run}") == pytest.approx(2 / 3)
    # Every step has its traj.jsonl line, and every screen after a step its PNG.
    for (task_id, run), _ in scores.items():
        record = next(r for r in iter_episodes(tmp_path / "run") if (r.task_id, r.run) == (task_id, run))
        domain = record.header["domain"]
        folder = tmp_path / "results" / f"run{run}" / export.target / domain / task_id
        lines = [json.loads(line) for line in (folder / "traj.jsonl").read_text().splitlines()]
        assert len(lines) == len(record.steps) and lines[-1]["done"]
        assert all((folder / line["screenshot_file"]).read_bytes()[:4] == b"\x89PNG" for line in lines[:-1])
    accuracy = summarize_run(tmp_path / "run").accuracy
    assert accuracy is not None and accuracy.mean == pytest.approx(2 / 3)
    assert main(["summary", str(tmp_path / "results"), "--osworld"]) == 0
    assert "Domain: libreoffice_writer  Runned: 1  Success Rate: 0.00 %" in capsys.readouterr().out

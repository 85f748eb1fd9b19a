"""Reports from a run directory written by the recorder: tables, plot, and the viewer in headless Chromium."""

import json
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hybrid_agent.recorder import EpisodeWriter, check_run_config, iter_episodes, plan_resume, write_suite
from hybrid_agent.report import write_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def write_run(run_dir, policy="scripted:tools", context="win4", **annotation):
    agent = {"context": context, "keep_think": False}  # the shape the runner writes
    check_run_config(run_dir, {"policy": policy, "agent": agent, "runs": 1})
    frame = np.zeros((60, 80, 3), np.uint8)
    frame[:, :40] = (200, 30, 30)
    with ThreadPoolExecutor(1) as pool:
        writer = EpisodeWriter(
            run_dir, "calc-sum", 0, {"task_id": "calc-sum", "domain": "calc", "run": 0, **annotation}, pool
        )
        writer.step(
            {
                "step": 0,
                "app": "libreoffice_calc",
                "shown_tools": ["libreoffice_calc.save", "libreoffice_calc.set_cell_value"],
                "retention": [
                    {"step": 0, "frame": 0, "rule": "window", "kept": True, "form": "image", "text": ""}
                ],
                "model_output": "Action: write B1\n<tool_call>{...}</tool_call>",
                "tokens": {"input": 1200, "output": 30, "estimated": False},
                "parse": {
                    "ok": True,
                    "call": {"name": "libreoffice_calc.set_cell_value", "arguments": {}},
                    "repairs": ["flat_shape"],
                },
                "evidence": {"exec_ok": True, "effect": 1, "effect_kind": "changed"},
            },
            frame,
        )
        writer.step(
            {
                "step": 1,
                "shown_tools": [],
                "model_output": "I am done",
                "tokens": {"input": 1500, "output": 5},
                "parse": {"ok": False, "code": "no_tool_call", "message": "Emit one <tool_call>."},
            },
            frame,
        )
        writer.finish({"score": 1.0, "error": None, "claimed_success": True, "steps": 2, "wall_s": 3.0})
        failed = EpisodeWriter(
            run_dir, "writer-x", 0, {"task_id": "writer-x", "domain": "writer", "run": 0}, pool
        )
        failed.finish(
            {"score": None, "error": {"type": "policy_error", "message": "HTTP 503"}, "wall_s": 1.0}
        )


def test_tables_count_errors_apart_and_read_the_recorded_steps(tmp_path):
    write_run(tmp_path / "a")
    report = write_report([tmp_path / "a"], tmp_path / "out")
    # tokens over both episodes (an error costs too): (2700 + 0) / 2 = 1350; p95 of peaks [1500, 0] = 1425
    # writer: its only task errored, so the cell says 0 of 1 tasks scored; 1 of 2 tasks and episodes overall
    row2 = (
        "| scripted:tools win4 think=off | 100.0 ± 0.0 | - (0/1) | 100.0 ± 0.0 | 1 | 1/2 | 1/2 | 1.4 | 1.4 |"
    )
    assert row2 in report.table2
    assert report.table2.rstrip().endswith("| 1 |")  # one error episode, not a 0 score
    row = report.table3.splitlines()[2].split(" | ")
    # 2 episodes; adoption 1/1 scored; reachable by shown tools; TIR_real 1/2 steps; malformed 1/2 steps
    assert row[1:7] == ["2", "100.0", "100.0", "shown", "50.0", "50.0"]
    assert "adoption (tools shown) %" not in report.table3  # no annotation to disagree with
    assert "policy_error: 1" in row[-1]
    assert (tmp_path / "out" / "table2.csv").read_text().startswith("config,calc acc %,writer acc %")


def test_every_task_of_the_suite_is_counted_and_errored_ones_are_named(tmp_path):
    run_dir = tmp_path / "a"
    write_suite(run_dir, [("calc-sum", "calc"), ("writer-x", "writer"), ("impress-y", "impress")], runs=1)
    write_run(run_dir)
    # writer-x's policy error is set aside and rerun; the rerun fails on a bad key
    assert plan_resume(run_dir, [("writer-x", 0)], max_tries=2).retrying == (("writer-x", 0),)
    with ThreadPoolExecutor(1) as pool:
        header = {"task_id": "writer-x", "domain": "writer", "run": 0}
        error = {"type": "policy_error", "code": "auth", "message": "401"}
        EpisodeWriter(run_dir, "writer-x", 0, header, pool).finish({"score": None, "error": error})
    report = write_report([run_dir], tmp_path / "out")
    assert report.headlines == (
        "scripted:tools win4 think=off: accuracy 100.0 ± 0.0 % over 1 of 3 tasks (1 of 3 episodes); "
        "2 not scored: writer-x (policy_error:auth), impress-y (no record); tries rerun after an error: 1",
    )
    header = report.table2.splitlines()[0]
    assert header.startswith("| config | calc acc % | impress acc % | writer acc % | overall acc % |")
    assert "| 100.0 ± 0.0 | - (0/1) | - (0/1) | 100.0 ± 0.0 | 1 | 1/3 | 1/3 |" in report.table2
    (summary,) = json.loads((tmp_path / "out" / "summary.json").read_text())["runs"]
    assert summary["headline"] == report.headlines[0]
    assert summary["coverage_from"] == "suite.json"
    assert {k: summary["coverage"][k] for k in ("tasks", "scored_tasks", "episodes", "scored_episodes")} == {
        "tasks": 3,
        "scored_tasks": 1,
        "episodes": 3,
        "scored_episodes": 1,
    }
    assert summary["coverage"]["unscored"][1] == {"task_id": "impress-y", "errors": [], "missing": 1}
    assert summary["errors"] == {"policy_error:auth": 1}
    assert summary["rerun_errors"] == {"policy_error": 1}
    assert summary["behaviour"]["false_success_all"] == 0.0  # calc-sum claimed success and scored 1


def test_a_run_without_suite_json_says_unrun_tasks_are_not_counted(tmp_path):
    write_run(tmp_path / "a")
    report = write_report([tmp_path / "a"], tmp_path / "out")
    assert report.headlines[0].endswith(
        "; 1 not scored: writer-x (policy_error); no suite.json, tasks never run are not counted"
    )


def test_the_headline_names_the_first_ten_tasks_without_a_score(tmp_path):
    write_suite(tmp_path / "a", [(f"t{i:02d}", "os") for i in range(12)], runs=1)
    write_run(tmp_path / "a")
    line = write_report([tmp_path / "a"], tmp_path / "out").headlines[0]
    # 12 suite tasks never run + writer-x errored: 13 of 14 not scored; t00..t09 named; t10, t11, writer-x not
    assert "over 1 of 14 tasks (1 of 14 episodes); 13 not scored: t00 (no record), t01 (no record)" in line
    assert line.endswith("t09 (no record) and 3 more")


def test_a_task_annotation_that_disagrees_with_the_shown_tools_is_reported_beside_them(tmp_path):
    write_run(tmp_path / "a", tool_reachable=False)  # calc-sum showed tools, yet is annotated unreachable
    table3 = write_report([tmp_path / "a"], tmp_path / "out").table3
    header, _, row = table3.splitlines()
    cells = dict(zip(header.strip("| ").split(" | "), row.strip("| ").split(" | "), strict=True))
    assert cells["reachable by"] == "annotation"
    assert cells["adoption (reachable) %"] == "-"  # no scored episode is reachable by its annotation
    assert cells["adoption (tools shown) %"] == "100.0"
    assert cells["false success (all) %"] == "0.0" and cells["hallucinated names"] == "0"


def test_plot_is_written_when_matplotlib_is_installed(tmp_path):
    pytest.importorskip("matplotlib")
    write_run(tmp_path / "a")
    report = write_report([tmp_path / "a"], tmp_path / "out")
    png = tmp_path / "out" / "accuracy_vs_tokens.png"
    assert png in report.files and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_records_are_complete_and_partial_ones_are_not_listed(tmp_path):
    write_run(tmp_path / "a")
    records = list(iter_episodes(tmp_path / "a"))
    assert [(r.task_id, len(r.steps), r.end["score"]) for r in records] == [
        ("calc-sum", 2, 1.0),
        ("writer-x", 0, None),
    ]
    assert records[0].steps[0]["screenshot"] == "calc-sum__run0/step_000.png"
    with pytest.raises(Exception, match="other settings"):
        check_run_config(
            tmp_path / "a", {"policy": "scripted", "context": "win4", "keep_think": False, "runs": 1}
        )


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_viewer_shows_each_step_in_headless_chromium(tmp_path):
    write_run(tmp_path / "a")
    write_report([tmp_path / "a"], tmp_path / "out")
    page = tmp_path / "a" / "viewer.html"
    html = page.read_text()
    assert "data:image" not in html and "file://" not in html  # linked, relative to the page
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
    ]
    flags += ["--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}"]
    command = [CHROMIUM, *flags, "--dump-dom", page.as_uri()]
    dom = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout
    assert dom.count('<img alt="step screenshot"') == 2
    assert "libreoffice_calc.set_cell_value" in dom and "flat_shape" in dom
    assert "parse error [no_tool_call]" in dom
    assert "frame 0: image (window)" in dom
    assert "error: policy_error" in dom and "HTTP 503" in dom
    assert "tokens in 1200 / out 30" in dom


def test_the_run_label_reads_the_agent_section_and_older_flat_configs():
    from hybrid_agent.report.summary import run_label

    nested = {"policy": "openai:m", "agent": {"context": "win2+drop", "keep_think": True, "thinking": True}}
    assert run_label(nested) == "openai:m win2+drop think=on thinking"
    flat = {"policy": "scripted", "context": "win4", "keep_think": False, "retrieval": False}
    assert run_label(flat) == "scripted win4 think=off no-retrieval"

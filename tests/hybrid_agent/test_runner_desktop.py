"""The runner end to end on the real embedded desktop with the scripted policy, and kill-and-resume."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hybrid_agent.agent_loop import AgentConfig
from hybrid_agent.policies import make_policy
from hybrid_agent.recorder import iter_episodes
from hybrid_agent.runner import RunConfig, Runner
from hybrid_agent.suite import load_suite
from osworld_mcp_env.tasks import BUNDLED_DIR

sys.path.insert(0, str(Path(__file__).parents[1] / "osworld_mcp_env"))
from desktop_support import desktop_missing

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.slow,
    pytest.mark.skipif(
        desktop_missing() is not None, reason=f"embedded desktop unavailable: {desktop_missing()}"
    ),
]


def test_tool_route_and_gui_route_on_two_desktops_in_parallel(tmp_path):
    tasks = [t for t in load_suite("bundled") if t.task_id in ("calc-sum-column", "os-create-file")]
    config = RunConfig(policy="scripted:tools", envs=2, runs=1, agent=AgentConfig(context="win2+drop"))
    result = Runner(config, make_policy("scripted:tools"), tmp_path, progress=False).evaluate(tasks)
    assert (result.finished, result.errors) == (2, 0)
    records = {r.task_id: r for r in iter_episodes(tmp_path)}
    calc, os_task = records["calc-sum-column"], records["os-create-file"]
    assert calc.end["score"] == 1.0 and os_task.end["score"] == 1.0
    # Tool route: two executed MCP calls with their evidence, then terminate.
    assert [s["parse"]["call"]["name"] for s in calc.steps] == [
        "libreoffice_calc.set_cell_value", "libreoffice_calc.save", "computer_use"]  # fmt: skip
    assert calc.steps[0]["evidence"]["exec_ok"] and calc.steps[0]["evidence"]["effect"] == 1
    assert "libreoffice_calc.save" in calc.steps[0]["shown_tools"]
    # The drop rule replaced the frame after the successful MCP call (win2+drop).
    assert any(r["rule"] == "drop_on_success" for r in calc.steps[1]["retention"])
    # GUI route: only computer_use, in screen pixels; every step has its PNG.
    assert all(s["parse"]["call"]["name"] == "computer_use" for s in os_task.steps)
    for record in (calc, os_task):
        for s in record.steps:
            assert (tmp_path / "episodes" / s["screenshot"]).read_bytes()[:4] == b"\x89PNG"
            assert s["timings"]["runner_s"] < s["timings"]["env_s"] + 1.0


def test_a_killed_run_resumes_without_redoing_finished_episodes(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(BUNDLED_DIR / "os-create-file.json", suite)
    out = tmp_path / "out"
    command = [
        sys.executable,
        "-m",
        "hybrid_agent.cli",
        "eval",
        "--suite",
        str(suite),
        "--policy",
        "scripted",
    ]
    command += ["--runs", "3", "--out", str(out)]
    proc = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    episodes = out / "episodes"
    deadline = time.monotonic() + 300
    # Kill once one episode is finished and the next one has written steps.
    while not (
        list(episodes.glob("*.jsonl")) and any(p.stat().st_size > 0 for p in episodes.glob("*.partial"))
    ):
        assert proc.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline, "no finished episode in time"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = {p.name: p.stat().st_mtime_ns for p in episodes.glob("*.jsonl")}
    assert finished and list(episodes.glob("*.partial"))
    subprocess.run(command, check=True, capture_output=True, timeout=600)
    assert not list(episodes.glob("*.partial"))
    records = list(iter_episodes(out))
    assert sorted(r.run for r in records) == [0, 1, 2]
    assert all(r.end["score"] == 1.0 for r in records)
    for name, mtime in finished.items():  # finished episodes were not redone
        assert (episodes / name).stat().st_mtime_ns == mtime
    for path in episodes.glob("*.jsonl"):  # every line of every record is whole JSON
        assert all(json.loads(line) for line in path.read_text().splitlines())


def test_the_hcu_setting_solves_calc_and_writer_through_ax_act_alone(tmp_path):
    # The named setting as a user runs it: ax tools on, the guard with cited frames, the
    # skill text; the scripted ax oracle reaches the channel through the agent's shown tools.
    suite = tmp_path / "suite"
    suite.mkdir()
    for task in ("calc-sum-column", "writer-replace-word"):
        shutil.copy(BUNDLED_DIR / f"{task}.json", suite)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "hybrid_agent.cli", "eval", "--suite", str(suite)]
    command += ["--policy", "scripted:ax", "--setting", "hcu", "--out", str(out)]
    subprocess.run(command, check=True, capture_output=True, timeout=600)
    records = {r.task_id: r for r in iter_episodes(out)}
    assert {task: r.end["score"] for task, r in records.items()} == {
        "calc-sum-column": 1.0, "writer-replace-word": 1.0}  # fmt: skip
    for record in records.values():
        names = [s["parse"]["call"]["name"] for s in record.steps]
        assert names == ["ax.act", "computer_use"], names
        assert "ax.act" in record.steps[0]["shown_tools"]
    channels = json.loads((out / "summary.json").read_text())["runs"][0]["channels"]
    assert channels["calls_per_channel"]["ax"] == 1.0 and channels["mean_batch_length"] > 1


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("domain", ["calc", "writer"])
def test_the_scripted_ax_oracle_solves_every_calc_and_writer_template_through_the_channel(tmp_path, domain):
    # Every template of the domain, seeds 1 and 2 in turn (one each, to keep CI's slow tier
    # short; the unit tests parse every template's script at seeds 0-3), as a user runs them:
    # refs bound by ax.find at run time, one ax.act citing them; only the ax tools and terminate.
    from osworld_mcp_env.tasks.bundled import bundled_solution
    from osworld_mcp_env.tasks.templates import TEMPLATES

    templates = [t for t in TEMPLATES.names() if TEMPLATES.get(t).domain == domain]
    ids = [f"{t}@{1 + i % 2}" for i, t in enumerate(templates)]
    split = tmp_path / "split.json"
    split.write_text(json.dumps({f"libreoffice_{domain}": ids}))
    out = tmp_path / "out"
    command = [sys.executable, "-m", "hybrid_agent.cli", "eval", "--suite", str(split)]
    command += ["--policy", "scripted:ax", "--setting", "hcu", "--out", str(out)]
    subprocess.run(command, check=True, capture_output=True, timeout=1100)
    records = {r.task_id: r for r in iter_episodes(out)}
    assert {task: r.end["score"] for task, r in records.items()} == dict.fromkeys(ids, 1.0)
    scripts = {task: bundled_solution(task, "ax") for task in ids}
    for task, record in records.items():
        names = [s["parse"]["call"]["name"] for s in record.steps]
        assert names == [c["name"] for c in scripts[task]] and names.count("ax.act") == 1, (task, names)
        ax_steps = [s for s in record.steps if s["parse"]["call"]["name"].startswith("ax.")]
        assert all(s["evidence"]["exec_ok"] and s["evidence"]["error_code"] is None for s in ax_steps), task
    channels = json.loads((out / "summary.json").read_text())["runs"][0]["channels"]
    ax_calls = [sum(c["name"].startswith("ax.") for c in s) for s in scripts.values()]
    batches = [len(c["arguments"]["steps"]) for s in scripts.values() for c in s if c["name"] == "ax.act"]
    assert channels["calls_per_channel"]["ax"] == pytest.approx(sum(ax_calls) / len(ids))
    assert channels["mean_batch_length"] == pytest.approx(sum(batches) / len(batches))

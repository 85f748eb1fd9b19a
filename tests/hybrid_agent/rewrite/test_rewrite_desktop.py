"""hybrid-agent rewrite on the real desktop: recorded GUI episodes rewritten, replayed, kept only at score 1.

The recording (one run directory, through the runner, the agent loop and the env as ``eval`` records):

* os-create-file run 0: a scripted GUI episode that opens a second terminal with Ctrl+Alt+T, waits
  for it, types the command in two fragments and presses Enter;
* os-create-file run 1: the task's GUI oracle (click into the setup's terminal, type, Enter);
* calc-sum-column run 0: its GUI oracle (click, keys, formula, save), no terminal at all.

Rewritten in ``auto`` mode, both os episodes become one direct command (the opening, the wait for the
terminal, the fragments and the Enter gone) and calc-sum-column becomes pyautogui heredocs on the 0-999
grid; run 1's command is then corrupted on purpose. Replayed on fresh desktops (same task, same seed),
the intact rewrites score 1 and are kept as a run directory the SFT builder reads; the corrupted one
scores 0 and the report says so.
"""

import dataclasses
import json
import shutil
import sys
from pathlib import Path

import pytest
from hybrid_agent.agent_loop import AgentConfig
from hybrid_agent.cli import main
from hybrid_agent.coords import CoordinatePolicy
from hybrid_agent.policies.base import Generation
from hybrid_agent.policies.replay import ReplayPolicy
from hybrid_agent.policies.scripted import render_call
from hybrid_agent.recorder import iter_episodes
from hybrid_agent.rewrite import RewriteConfig, RewriteMode, RewriteReason, plan_rewrites, replay_rewrites
from hybrid_agent.rewrite.replay import KEPT, REPORT_FILE, RewriteReport, publish_kept
from hybrid_agent.runner import RunConfig, Runner
from hybrid_agent.step_kind import StepKind
from hybrid_agent.suite import load_suite
from osworld_mcp_env.tasks import BUNDLED_DIR
from osworld_mcp_env.tasks.bundled import bundled_solution

sys.path.insert(0, str(Path(__file__).parents[2]))
from desktop_support import desktop_missing

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.slow,
    pytest.mark.skipif(
        desktop_missing() is not None, reason=f"embedded desktop unavailable: {desktop_missing()}"
    ),
]

CREATE = "mkdir -p /home/user/projects && printf 'Hello OSWorld\\n' > /home/user/projects/hello.txt"
BROKEN = CREATE.replace("Hello OSWorld", "Hello World")


def gui(action, **arguments):
    return {"name": "computer_use", "arguments": {"action": action, **arguments}}


SHORTCUT = [
    gui("key", keys=["ctrl", "alt", "t"]),
    gui("wait", time=2),
    gui("type", text="mkdir -p /home/user/projects && "),
    gui("type", text="printf 'Hello OSWorld\\n' > /home/user/projects/hello.txt"),
    gui("key", keys=["Return"]),
    gui("wait", time=1),
    gui("terminate", status="success"),
]
SCRIPTS = {
    ("os-create-file", 0): SHORTCUT,
    ("os-create-file", 1): bundled_solution("os-create-file"),
    ("calc-sum-column", 0): bundled_solution("calc-sum-column"),
}


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """The source run directory and its suite folder, recorded once for the module."""
    root = tmp_path_factory.mktemp("rewrite")
    suite = root / "suite"
    suite.mkdir()
    for task in ("os-create-file", "calc-sum-column"):
        shutil.copy(BUNDLED_DIR / f"{task}.json", suite)
    outputs = {key: [Generation(text=render_call(call)) for call in calls] for key, calls in SCRIPTS.items()}
    policy = ReplayPolicy(outputs, "scripted:rewrite-source")
    policy.coordinates = CoordinatePolicy.ABSOLUTE_SCREEN  # the scripts are in screen pixels
    config = RunConfig(policy=policy.name, suite=str(suite), agent=AgentConfig(), runs=2, max_steps=10)
    source = root / "source"
    Runner(config, policy, source, progress=False).evaluate(load_suite(str(suite)), list(SCRIPTS))
    scores = {(r.task_id, r.run): r.end["score"] for r in iter_episodes(source)}
    assert scores == dict.fromkeys(SCRIPTS, 1.0)
    return source, suite


def test_rewrites_replay_to_score_1_and_a_broken_one_is_rejected_with_its_reason(recording, tmp_path):
    source, suite = recording
    rewrites, early = plan_rewrites(list(iter_episodes(source)), RewriteMode.AUTO)
    assert early == []
    made = {(r.task_id, r.run): r for r in rewrites}
    shortcut, oracle, calc = made["os-create-file", 0], made["os-create-file", 1], made["calc-sum-column", 0]
    # The opening shortcut, its wait, both fragments and the Enter became one command; the later wait stays.
    assert [s.parameters for s in shortcut.steps] == [
        {"action": "bash", "command": CREATE},
        {"action": "wait", "time": "1"},
        {"action": "terminate", "status": "success"},
    ]
    assert [s.sources for s in shortcut.steps] == [(0, 1, 2, 3, 4), (5,), (6,)]
    assert [s.kind for s in oracle.steps] == [StepKind.CLI, StepKind.CONTROL, StepKind.CONTROL]
    assert calc.mode is RewriteMode.GUI
    assert [s.kind for s in calc.steps] == [StepKind.GUI] * 6 + [StepKind.CONTROL]
    assert "pyautogui.click(x=81, y=214," in calc.steps[0].parameters["command"]  # (156, 231) on the grid
    command = dataclasses.replace(oracle.steps[0], parameters={"action": "bash", "command": BROKEN})
    broken = dataclasses.replace(oracle, steps=(command, *oracle.steps[1:]))

    out = tmp_path / "out"
    tasks = load_suite(str(suite))
    outcomes = replay_rewrites([shortcut, broken, calc], tasks, out, RewriteConfig(), {}, progress=False)
    publish_kept(out, outcomes, tasks)
    report = RewriteReport(str(source), str(out), "auto", outcomes)
    print(report.table())
    by_key = {(o.task_id, o.run): o for o in outcomes}
    assert (by_key["os-create-file", 0].status, by_key["os-create-file", 0].score) == (KEPT, 1.0)
    assert (by_key["calc-sum-column", 0].status, by_key["calc-sum-column", 0].score) == (KEPT, 1.0)
    rejected = by_key["os-create-file", 1]
    assert (rejected.status, rejected.score) == (RewriteReason.SCORE, 0.0)
    assert "scored the replay 0" in rejected.message
    assert report.counts() == {
        "episodes": 3,
        "converted": 3,
        "replayed": 3,
        "kept": 2,
        "failed": {"score": 1},
    }

    kept = {(r.task_id, r.run): r for r in iter_episodes(out)}
    assert set(kept) == {("os-create-file", 0), ("calc-sum-column", 0)}
    for record in kept.values():
        assert record.header["config"]["agent"]["adapter"] == "hybridcua"
        bash = [s["action"] for s in record.steps if s["action"]["name"] == "bash"]
        assert bash and all(a["arguments"]["pyautogui_grid"] == 999 for a in bash)
    assert kept["os-create-file", 0].steps[0]["evidence"]["returncode"] == 0
    dataset = pytest.importorskip("grpo_trainer.sft.dataset")
    from hybrid_agent.adapters import get_adapter

    for (task_id, run), steps in {("os-create-file", 0): 3, ("calc-sum-column", 0): 7}.items():
        episode, unexecuted = dataset.rebuild_episode(
            kept[task_id, run], out, get_adapter("hybridcua"), dataset.served_catalog()
        )
        assert (len(episode.steps), unexecuted) == (steps, 0)


def test_the_rewrite_command_keeps_interleaved_replays_and_reports_the_rest(recording, tmp_path, capsys):
    source, suite = recording
    out = tmp_path / "cli"
    assert (
        main(["rewrite", str(source), "--out", str(out), "--mode", "interleaved", "--suite", str(suite)]) == 0
    )
    printed = capsys.readouterr().out
    print(printed)
    assert "| os-create-file run 0 | interleaved | 7 -> 3 | 1 | kept (score 1) |" in printed
    assert "| os-create-file run 1 | interleaved | 5 -> 3 | 1 | kept (score 1) |" in printed
    assert "| calc-sum-column run 0 | - | - | - | no_terminal_typing: " in printed
    assert "3 episodes: 2 converted, 2 replayed, 2 kept; not kept: no_terminal_typing 1" in printed
    report = json.loads((out / REPORT_FILE).read_text())
    assert report["counts"]["kept"] == 2
    assert sorted(p.name for p in (out / "episodes").glob("*.jsonl")) == [
        "os-create-file__run0.jsonl",
        "os-create-file__run1.jsonl",
    ]
    kept_suite = json.loads((out / "suite.json").read_text())
    assert kept_suite["runs"] == 2 and [t["task_id"] for t in kept_suite["tasks"]] == ["os-create-file"]

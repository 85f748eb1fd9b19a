"""Whole recorded episodes rewritten in each mode, and the report's counts, on recorded-shaped records."""

import json

import pytest
from hybrid_agent.errors import ConfigError
from hybrid_agent.rewrite import (
    RewriteConfig,
    RewriteError,
    RewriteMode,
    RewriteReason,
    plan_rewrites,
    rewrite_episode,
    rewrite_run,
)
from hybrid_agent.rewrite.episode import source_steps
from hybrid_agent.rewrite.replay import KEPT, EpisodeOutcome, RewriteReport
from hybrid_agent.step_kind import StepKind
from rewrite_records import CALC, WRITER, gui, line, record

CREATE = "mkdir -p /home/user/projects && printf 'Hello OSWorld\\n' > /home/user/projects/hello.txt"
ORACLE = [
    line(gui("left_click", coordinate=[960, 540], frame_id=1)),
    line(gui("type", text=CREATE)),
    line(gui("key", keys=["Return"])),
    line(gui("wait", time=0.5)),
    line(gui("terminate", status="success")),
]


def test_interleaved_turns_the_terminal_run_into_one_direct_command(tmp_path):
    rewrite = rewrite_episode(record(tmp_path / "e.jsonl", ORACLE), RewriteMode.INTERLEAVED)
    assert rewrite.mode is RewriteMode.INTERLEAVED
    assert [s.parameters for s in rewrite.steps] == [
        {"action": "bash", "command": CREATE},
        {"action": "wait", "time": "0.5"},
        {"action": "terminate", "status": "success"},
    ]
    assert [s.sources for s in rewrite.steps] == [(0, 1, 2), (3,), (4,)]
    assert [s.kind for s in rewrite.steps] == [StepKind.CLI, StepKind.CONTROL, StepKind.CONTROL]
    assert rewrite.commands == 1 and rewrite.source_steps == 5
    assert rewrite.steps[0].action_line.startswith("Run `mkdir -p /home/user/projects && printf")


def test_gui_mode_converts_every_step_and_writes_synthesised_action_lines_on_the_grid(tmp_path):
    """The scripted policy's Action line is a summary of the pixel call: it is written again on the grid."""
    rewrite = rewrite_episode(record(tmp_path / "e.jsonl", ORACLE), RewriteMode.GUI)
    assert [s.kind for s in rewrite.steps] == [StepKind.GUI] * 3 + [StepKind.CONTROL] * 2
    assert rewrite.steps[0].action_line == "left_click(coordinate=[500, 500])"
    assert "pyautogui.click(x=500, y=500," in rewrite.steps[0].parameters["command"]
    assert "frame_id" not in rewrite.steps[0].parameters["command"]


def test_a_model_written_action_line_is_kept(tmp_path):
    written = line(gui("left_click", coordinate=[156, 231]), CALC)
    written["parse"]["action_line"] = "Click cell B1."
    rewrite = rewrite_episode(record(tmp_path / "e.jsonl", [written]), RewriteMode.GUI)
    assert rewrite.steps[0].action_line == "Click cell B1."


def test_auto_is_interleaved_where_it_applies_else_gui_and_says_why(tmp_path):
    assert (
        rewrite_episode(record(tmp_path / "a.jsonl", ORACLE), RewriteMode.AUTO).mode
        is RewriteMode.INTERLEAVED
    )
    document = [line(gui("type", text="Hello\n"), WRITER), line(gui("terminate", status="success"), WRITER)]
    plain = rewrite_episode(record(tmp_path / "b.jsonl", document), RewriteMode.AUTO)
    assert (plain.mode, plain.note, plain.commands) == (RewriteMode.GUI, "", 0)
    tab = [line(gui("type", text="cat RE\t\n")), line(gui("terminate", status="success"))]
    fallback = rewrite_episode(record(tmp_path / "c.jsonl", tab), RewriteMode.AUTO)
    assert fallback.mode is RewriteMode.GUI and fallback.note.startswith("unreconstructable: Tab")
    with pytest.raises(RewriteError) as raised:
        rewrite_episode(record(tmp_path / "d.jsonl", document), RewriteMode.INTERLEAVED)
    assert raised.value.reason is RewriteReason.NO_TERMINAL_TYPING
    with pytest.raises(RewriteError) as raised:
        rewrite_episode(record(tmp_path / "e.jsonl", tab), RewriteMode.INTERLEAVED)
    assert raised.value.reason is RewriteReason.UNRECONSTRUCTABLE


def test_steps_that_executed_nothing_are_left_out_and_further_calls_are_steps(tmp_path):
    malformed = {"type": "step", "model_output": "hm", "parse": {"ok": False, "code": "no_tool_call"}}
    refused = line(gui("left_click", coordinate=[1, 1]), CALC, env_error={"code": "stale_gui_frame"})
    several = line(
        {"name": "bash", "arguments": {"command": "ls", "pyautogui_grid": 999, "timeout": 5}},
        then=[
            {"action": gui("wait", time=1), "executed": True},
            {"action": gui("terminate", status="success"), "executed": False},
        ],
    )
    episode = record(tmp_path / "e.jsonl", [malformed, refused, several])
    assert [s.call.name for s in source_steps(episode)] == ["bash", "computer_use"]
    rewrite = rewrite_episode(episode, RewriteMode.GUI)
    assert [s.parameters for s in rewrite.steps] == [
        {"action": "bash", "command": "ls", "timeout": "5"},
        {"action": "wait", "time": "1"},
    ]


def test_an_mcp_tool_call_is_unconvertible(tmp_path):
    tool = line({"name": "libreoffice_calc.set_cell_value", "arguments": {"cell": "B1", "value": "1"}}, CALC)
    with pytest.raises(RewriteError, match=r"libreoffice_calc\.set_cell_value") as raised:
        rewrite_episode(record(tmp_path / "e.jsonl", [tool]), RewriteMode.AUTO)
    assert raised.value.reason is RewriteReason.UNCONVERTIBLE


def test_plan_rewrites_only_successful_recordings_and_the_report_counts_every_outcome(tmp_path):
    records = [
        record(tmp_path / "a.jsonl", ORACLE, run=0),
        record(tmp_path / "b.jsonl", ORACLE, score=0.0, run=1),
        record(tmp_path / "c.jsonl", [line(gui("type", text="ls"))], run=2),
    ]
    rewrites, outcomes = plan_rewrites(records, RewriteMode.INTERLEAVED)
    assert [(r.task_id, r.run) for r in rewrites] == [("os-create-file", 0)]
    assert [(o.run, o.status) for o in outcomes] == [
        (1, RewriteReason.SOURCE_FAILED),
        (2, RewriteReason.UNRECONSTRUCTABLE),
    ]
    made = {"mode": "interleaved", "source_steps": 5, "steps": 3, "gui_steps": 0, "cli_steps": 1, "note": ""}
    report = RewriteReport("src", "out", "interleaved", [
        EpisodeOutcome("os-create-file", 0, KEPT, "", made, 1.0),
        *outcomes,
        EpisodeOutcome("os-create-file", 3, RewriteReason.SCORE, "scored 0", made, 0.0),
    ])  # fmt: skip
    assert report.counts() == {
        "episodes": 4,
        "converted": 2,
        "replayed": 2,
        "kept": 1,
        "failed": {"source_failed": 1, "unreconstructable": 1, "score": 1},
    }
    table = report.table()
    assert "| os-create-file run 0 | interleaved | 5 -> 3 | 1 | kept (score 1) |" in table
    assert "| os-create-file run 3 | interleaved | 5 -> 3 | 1 | score (score 0): scored 0 |" in table
    assert table.endswith("4 episodes: 2 converted, 2 replayed, 1 kept; not kept: source_failed 1, "
                          "unreconstructable 1, score 1")  # fmt: skip
    assert json.loads(json.dumps(report.to_dict()))["counts"]["kept"] == 1


def test_the_command_refuses_an_out_that_would_replace_a_recording(tmp_path):
    source = tmp_path / "run"
    (source / "episodes").mkdir(parents=True)
    record(source / "episodes" / "os-create-file__run0.jsonl", ORACLE)
    other = tmp_path / "other"
    (other / "episodes").mkdir(parents=True)
    for out in (source, source / "rewritten", other):
        with pytest.raises(ConfigError):
            rewrite_run(source, out, RewriteConfig(), progress=False)
    assert (source / "episodes" / "os-create-file__run0.jsonl").exists() and (other / "episodes").is_dir()

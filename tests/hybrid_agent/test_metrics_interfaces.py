"""The GUI+CLI study's metrics (HybridCUA) from step records, against hand-counted numbers."""

from pathlib import Path

import pytest
from hybrid_agent import metrics
from hybrid_agent.metrics import CallKind, CallStats
from hybrid_agent.recorder import EpisodeRecord

HEREDOC = "python3 <<'PY'\nimport pyautogui\npyautogui.click(1, 2)\nPY"


def bash(command, returncode=0, stderr="", timed_out=False):
    """A HybridCUA call as written and the env's evidence for it."""
    call = {"name": "computer_use", "arguments": {"action": "bash", "command": command}}
    evidence = {"exec_ok": not timed_out, "returncode": returncode, "stderr": stderr, "timed_out": timed_out}
    return call, evidence, {"code": "timeout"} if timed_out else None


def control(action="terminate"):
    return {"name": "computer_use", "arguments": {"action": action}}, None, None


def turn(*calls):
    """One reply: its first call in the step line, the rest in ``then`` (all executed)."""
    (call, evidence, error), *rest = calls
    return {
        "parse": {"ok": True, "call": call},
        "evidence": evidence,
        "env_error": error,
        "then": [{"call": c, "evidence": e, "env_error": r, "executed": True} for c, e, r in rest],
    }


def record(domain, score, steps, truncated=False, run=0, error=None):
    end = {"score": score, "truncated": truncated, "error": {"type": error} if error else None}
    header = {"task_id": f"{domain}-task", "run": run, "domain": domain}
    return EpisodeRecord(header, steps, end, Path("x"))


RECORDS = [
    # os, solved in 4 env steps over 2 replies: a listing, then grep's silent exit 1 + a click + terminate
    record("os", 1.0, [turn(bash("ls")), turn(bash("grep zzz f", 1), bash(HEREDOC), control())]),
    # os, failed: two failing commands, a timeout, a parse error (an env step too); budget of 5 ran out
    record(
        "os",
        0.0,
        [
            turn(bash("ls /nonexistent", 2, "ls: cannot access")),
            turn(bash("foobarbaz", 127, "command not found"), bash("sleep 5", -1, timed_out=True)),
            {"parse": {"ok": False, "code": "no_tool_call"}},
        ],
        truncated=True,
    ),
    # calc, solved through the GUI alone in 2 env steps
    record("calc", 1.0, [turn(bash(HEREDOC)), turn(control())]),
    # errored: left out of every number
    record("calc", None, [turn(bash("ls"))], error="env_error"),
]


def test_calls_are_classified_and_failed_by_the_one_rule():
    stats = metrics.episode_stats(RECORDS[1], max_steps=5)
    assert stats.calls == (
        CallStats(CallKind.CLI, True),
        CallStats(CallKind.CLI, True),
        CallStats(CallKind.CLI, True),  # the timeout ran: an executed, failed CLI step
    )
    assert stats.env_steps == 4  # 1 + 2 + the malformed reply's no-op step
    assert metrics.steps_counted(stats) == 5  # the budget ran out: counted at the cap
    first = metrics.episode_stats(RECORDS[0], max_steps=5)
    assert [c.kind for c in first.calls] == [CallKind.CLI, CallKind.CLI, CallKind.GUI, CallKind.CONTROL]
    assert [c.failed for c in first.calls] == [False] * 4  # grep's exit 1 with empty stderr is no failure


def test_hybridcua_metrics_over_all_tasks_and_per_domain():
    episodes = [metrics.episode_stats(r, max_steps=5) for r in RECORDS]
    # steps: os-solved 4, os-failed 5 (cap), calc 2 -> (4 + 5 + 2) / 3 = 3.667; ACS (solved only) stays apart
    assert metrics.average_steps_all(episodes) == pytest.approx(11 / 3)
    assert metrics.acs(episodes) == pytest.approx((2 + 2) / 2)  # model calls of the two successes
    # GUI+CLI steps: os-solved CLI 2 + GUI 1, os-failed CLI 3, calc GUI 1 -> CLI 5 of 7
    assert metrics.cli_step_share(episodes) == pytest.approx(5 / 7)
    # failed CLI: 3 (ls /nonexistent, foobarbaz, the timeout) of 5
    assert metrics.cli_error_rate(episodes) == pytest.approx(3 / 5)
    assert metrics.per_domain(metrics.cli_step_share, episodes) == {"calc": 0.0, "os": pytest.approx(5 / 6)}
    assert metrics.per_domain(metrics.cli_error_rate, episodes) == {"calc": None, "os": pytest.approx(3 / 5)}
    assert metrics.per_domain(metrics.average_steps_all, episodes) == {"calc": 2, "os": 4.5}


def test_a_refused_call_is_no_step_of_either_interface():
    refused = turn(({"name": "computer_use", "arguments": {"action": "bash", "command": ""}}, None,
                    {"code": "invalid_arguments"}))  # fmt: skip
    stats = metrics.episode_stats(record("os", 0.0, [refused]))
    assert stats.calls == () and stats.env_steps == 1
    assert metrics.cli_step_share([stats]) is None and metrics.cli_error_rate([stats]) is None

"""Hybrid Computer Use's Table 3 rows from step records: per-channel malformed rates, repeats, batches.

Every number below is counted by hand from the records written here.
"""

from __future__ import annotations

import pytest
from hybrid_agent import metrics
from hybrid_agent.metrics import Channel, EpisodeStats, channel_steps
from hybrid_agent.report.summary import channel_behaviour


def ok(name: str, env_error: str | None = None, **arguments) -> dict:
    step = {"parse": {"ok": True, "call": {"name": name, "arguments": arguments}}}
    step["env_error"] = {"code": env_error, "message": "x"} if env_error else None
    return step


def bad(code: str, output: str = "") -> dict:
    return {"parse": {"ok": False, "code": code, "message": "x"}, "model_output": output}


def episode(*steps: dict) -> EpisodeStats:
    return EpisodeStats(
        "t", "calc", 0, 1.0, channel_steps=channel_steps([*steps, {"note": "no parse: no call"}])
    )


# Episode A: 6 calls. GUI 2 (1 schema rejection), AX 3 (1 parse failure), MCP 1.
A = episode(
    {**ok("computer_use", action="left_click", coordinate=[1, 2]), "window_changes": ["opened: popup"]},
    ok("computer_use", "out_of_screen", action="left_click", coordinate=[9999, 2]),
    ok("ax.observe"),
    bad("invalid_json", '<tool_call>{"name": "ax.act", "arguments": {steps: [}</tool_call>'),
    ok("ax.act", steps=[{"op": "press", "ref": "e1"}, {"wait": "window"}, {"op": "type", "ref": "e2"}]),
    ok("libreoffice_calc.get_cell_value", cell="A1"),
)
# Episode B: 4 calls. Two malformed in a row (bash schema, then an unattributed reply), ax.act of 1.
B = episode(
    ok("bash", "invalid_arguments", command=""),
    bad("no_tool_call", "I will now think."),
    ok("ax.act", steps=[{"op": "click", "ref": "e3"}]),
    bad("out_of_space", '{"name": "computer_use"}'),
)


def test_each_call_is_attributed_to_its_channel_and_kind_of_failure():
    kinds = [(s.channel, s.parse_failure, s.schema_failure) for s in A.channel_steps]
    assert kinds == [
        (Channel.GUI, False, False),
        (Channel.GUI, False, True),
        (Channel.AX, False, False),
        (Channel.AX, True, False),  # the name the broken reply wrote
        (Channel.AX, False, False),
        (Channel.MCP, False, False),
    ]
    assert [s.channel for s in B.channel_steps] == [
        Channel.BASH,
        Channel.UNATTRIBUTED,
        Channel.AX,
        Channel.GUI,
    ]
    assert [s.batch_length for s in A.channel_steps][4] == 3


def test_rates_repeats_calls_batches_and_observations():
    eps = [A, B]
    assert metrics.malformed_rate_by_channel(eps) == {
        Channel.GUI: 2 / 3,  # A's rejection + B's out_of_space, of 3 GUI calls
        Channel.AX: 1 / 4,
        Channel.MCP: 0.0,
        Channel.BASH: 1.0,
        Channel.UNATTRIBUTED: 1.0,
    }
    # A's malformed calls are apart (steps 2 and 4); B's first two are in a row.
    assert metrics.consecutive_schema_failure_rate(eps) == 0.5
    assert metrics.consecutive_schema_failure_rate([A]) == 0.0
    assert metrics.calls_per_channel(eps) == {
        Channel.GUI: 1.5,
        Channel.AX: 2.0,
        Channel.MCP: 0.5,
        Channel.BASH: 0.5,
        Channel.UNATTRIBUTED: 0.5,
    }
    assert metrics.mean_batch_length(eps) == 2.0  # (3 + 1) / 2
    assert metrics.observations_per_step(eps) == pytest.approx((1 / 6 + 0 / 4) / 2)
    assert metrics.mean_batch_length([]) is None and metrics.consecutive_schema_failure_rate([]) is None


def test_the_report_keeps_the_channels_apart_by_name():
    c = channel_behaviour((A, B))
    assert c.malformed_by_channel["gui"] == pytest.approx(2 / 3) and c.calls_per_channel["ax"] == 2.0
    assert c.consecutive_schema_failures == 0.5 and c.mean_batch_length == 2.0


def test_gui_calls_that_changed_windows_come_from_the_records_window_changes():
    # Accepted GUI calls: only A's first (it opened a popup); A's second and B's last were malformed.
    assert metrics.gui_window_change_rate([A, B]) == 1.0
    assert metrics.gui_window_change_rate([B]) is None

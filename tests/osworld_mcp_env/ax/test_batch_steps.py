"""ax.act's steps are checked before any runs; each mistake names the step and what it needs."""

import pytest
from osworld_mcp_env.ax.batch import MAX_STEPS, StepError, parse_steps, window_changes
from osworld_mcp_env.ax.records import Op, Record, WaitKind, column_name, parse_cell
from osworld_mcp_env.env.config import EnvConfig


def test_operations_and_waits_parse_with_their_arguments():
    steps = parse_steps(
        [
            {"op": "set_text", "ref": "[e12]", "text": "hi"},
            {"op": "key", "keys": "ctrl+s"},
            {"wait": "window", "name": "Save As", "timeout_s": 30, "optional": True},
            {"wait": "query", "role": "push button", "name": "OK", "scope": "e3"},
            {"wait": "stable"},
        ]
    )
    assert steps[0].op is Op.SET_TEXT and steps[0].ref == "e12" and steps[0].args == {"text": "hi"}
    assert steps[1].ref is None and steps[1].args == {"keys": "ctrl+s"}
    assert steps[2].wait is WaitKind.WINDOW and steps[2].timeout_s == 30 and steps[2].optional
    assert steps[3].args == {"role": "push button", "name": "OK", "scope": "e3"}
    assert steps[4].args == {"ms": 300.0}


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([], "non-empty list"),
        ([{"op": "press", "ref": "e1"}] * (MAX_STEPS + 1), "at most 64 steps"),
        ([{"op": "press"}], "step 0: press needs a 'ref'"),
        ([{"op": "press", "ref": "e1"}, {"op": "zoom", "ref": "e1"}], "step 1: unknown op 'zoom'"),
        ([{"op": "press", "ref": "button"}], "is not a ref like 'e17'"),
        ([{"op": "set_value", "ref": "e1", "value": "3"}], "needs a number 'value'"),
        ([{"op": "set_text", "ref": "e1"}], "step 0: set_text needs text"),
        ([{"op": "press", "ref": "e1", "wait": "stable"}], "exactly one of 'op'"),
        ([{"wait": "window", "name": "x", "timeout_s": 61}], "timeout_s must be a number in (0, 60]"),
        ([{"wait": "query"}], "wait query needs one of role, name, text, state"),
        ([{"wait": "ref"}], "wait ref needs a 'ref'"),
    ],
)
def test_a_bad_step_is_refused_before_any_runs(steps, message):
    with pytest.raises(StepError, match=__import__("re").escape(message)):
        parse_steps(steps)


def test_window_changes_name_opened_closed_activated_and_moved_windows():
    def win(ref, name, states=("showing",), bounds=(0, 0, 100, 100)):
        return Record(ref, 7, 1, ref, [], "frame", name, list(states), list(bounds))

    before = {"e1": win("e1", "Doc", ("active",)), "e2": win("e2", "Old")}
    after = {"e1": win("e1", "Doc", bounds=(5, 0, 100, 100)), "e3": win("e3", "Save As", ("active",))}
    assert window_changes(before, after) == {
        "opened": ["frame 'Save As' [e3]"],
        "closed": ["frame 'Old' [e2]"],
        "activated": ["frame 'Save As' [e3]"],
        "moved": ["frame 'Doc' [e1]"],
    }


@pytest.mark.parametrize(
    ("address", "where"), [("A1", (0, 0)), ("Z10", (9, 25)), ("AA3", (2, 26)), ("b2", (1, 1))]
)
def test_cell_addresses_round_trip(address, where):
    assert parse_cell(address) == where
    assert column_name(where[1]) + str(where[0] + 1) == address.upper()
    assert parse_cell("A0") is None and parse_cell("1A") is None


def test_ax_tools_need_the_tool_host():
    with pytest.raises(ValueError, match="ax_tools=True needs enable_mcp=True"):
        EnvConfig(ax_tools=True, enable_mcp=False)

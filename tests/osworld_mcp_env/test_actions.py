"""parse_action: every malformed call becomes a structured error, never an exception."""

from __future__ import annotations

import json

import pytest
from osworld_mcp_env.actions import COMPUTER_USE_ACTIONS, ActionLimits, GuiAction, ToolCall, parse_action
from osworld_mcp_env.errors import ActionError

SCREEN = (1920, 1080)


def gui(**arguments) -> dict:
    return {"name": "computer_use", "arguments": arguments}


def test_vocabulary_is_qwen3_vl_set():
    assert set(COMPUTER_USE_ACTIONS) == {
        "key", "type", "mouse_move", "left_click", "right_click", "middle_click", "double_click",
        "triple_click", "left_click_drag", "scroll", "hscroll", "wait", "terminate", "answer",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (gui(action="left_click", coordinate=[10, 20]), ("left_click", {"coordinate": (10, 20)})),
        (gui(action="left_click", coordinate=[10.4, 19.6]), ("left_click", {"coordinate": (10, 20)})),
        (gui(action="key", keys=["ctrl", "s"]), ("key", {"keys": ("ctrl", "s")})),
        (gui(action="key", keys="Return"), ("key", {"keys": ("Return",)})),
        (gui(action="type", text="héllo ✓"), ("type", {"text": "héllo ✓"})),
        (gui(action="scroll", pixels=-300), ("scroll", {"pixels": -300})),
        (gui(action="wait", time=1), ("wait", {"time": 1.0})),
        (gui(action="terminate", status="failure"), ("terminate", {"status": "failure"})),
        (
            gui(action="left_click_drag", start_coordinate=[1, 2], coordinate=[3, 4]),
            ("left_click_drag", {"coordinate": (3, 4), "start_coordinate": (1, 2)}),
        ),
    ],
)
def test_valid_gui_calls(call, expected):
    for raw in (call, json.dumps(call)):
        action = parse_action(raw, SCREEN)
        assert isinstance(action, GuiAction)
        assert (action.action, dict(action.arguments)) == expected


def test_ends_episode_and_frame_id():
    action = parse_action(gui(action="answer", text="42", frame_id=7), SCREEN)
    assert isinstance(action, GuiAction) and action.ends_episode and action.frame_id == 7
    assert not parse_action(gui(action="left_click", coordinate=[0, 0]), SCREEN).ends_episode


def test_tool_call_keeps_namespace():
    action = parse_action({"name": "libreoffice_calc.set_cell_value", "arguments": {"cell": "A1"}}, SCREEN)
    assert isinstance(action, ToolCall)
    assert (action.namespace, action.tool, dict(action.arguments)) == (
        "libreoffice_calc",
        "set_cell_value",
        {"cell": "A1"},
    )


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("{not json", "invalid_json"),
        ("[1, 2]", "invalid_json"),
        (42, "invalid_json"),
        ({"arguments": {}}, "invalid_action"),
        ({"name": "computer_use", "arguments": []}, "invalid_arguments"),
        (gui(action="fly"), "unknown_action"),
        (gui(), "unknown_action"),
        (gui(action="left_click"), "invalid_arguments"),
        (gui(action="left_click", coordinate=[1]), "invalid_arguments"),
        (gui(action="left_click", coordinate=["a", "b"]), "invalid_arguments"),
        (gui(action="left_click", coordinate=[True, 5]), "invalid_arguments"),
        (gui(action="left_click", coordinate=[1920, 5]), "out_of_screen"),
        (gui(action="left_click", coordinate=[-1, 5]), "out_of_screen"),
        (gui(action="left_click", coordinate=[5, 5], bogus=1), "invalid_arguments"),
        (gui(action="key", keys=[]), "invalid_arguments"),
        (gui(action="key", keys=[1]), "invalid_arguments"),
        (gui(action="type", text=5), "invalid_arguments"),
        (gui(action="type", text="x" * 5000), "payload_too_large"),
        (gui(action="scroll", pixels=1.5), "invalid_arguments"),
        (gui(action="wait", time=-1), "invalid_arguments"),
        (gui(action="wait", time=3600), "invalid_arguments"),
        (gui(action="terminate", status="done"), "invalid_arguments"),
        (gui(action="left_click", coordinate=[5, 5], frame_id="x"), "invalid_arguments"),
        ("x" * 10_000_000, "payload_too_large"),
        ({"name": "t", "arguments": {"blob": "x" * 100_000}}, "payload_too_large"),
    ],
)
def test_malformed_calls_are_values(raw, code):
    result = parse_action(raw, SCREEN)
    assert isinstance(result, ActionError), result
    assert result.code == code
    assert result.render().startswith(f"Error [{code}]")
    assert result.to_dict()["code"] == code


def test_limits_are_configurable():
    limits = ActionLimits(max_type_chars=3)
    assert isinstance(parse_action(gui(action="type", text="abcd"), SCREEN, limits), ActionError)
    assert isinstance(parse_action(gui(action="type", text="abc"), SCREEN, limits), GuiAction)

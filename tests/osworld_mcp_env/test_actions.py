"""parse_action: every malformed call becomes a structured error, never an exception."""

from __future__ import annotations

import json

import pytest
from osworld_mcp_env.actions import (
    COMPUTER_USE_ACTIONS,
    ActionLimits,
    BashCommand,
    GuiAction,
    ToolCall,
    parse_action,
    parse_bash,
)
from osworld_mcp_env.devkit.fuzz import HostileActions
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


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        # non-finite numbers: not JSON (NaN, Infinity) or past a double's range (1e400)
        ('{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [NaN, 5]}}',
         "invalid_json"),
        ('{"name": "computer_use", "arguments": {"action": "scroll", "pixels": Infinity}}', "invalid_json"),
        ('{"name": "computer_use", "arguments": {"action": "scroll", "pixels": -1e400}}', "invalid_json"),
        ('{"name": "computer_use", "arguments": {"action": "wait", "time": 1e400}}', "invalid_json"),
        (gui(action="left_click", coordinate=[float("nan"), 5]), "invalid_json"),
        (gui(action="scroll", pixels=float("inf")), "invalid_json"),
        ({"name": "os.calculator", "arguments": {"x": float("nan")}}, "invalid_json"),
        # `action` of the wrong type: unhashable values must not reach a dict lookup
        (gui(action=["left_click"]), "unknown_action"),
        (gui(action={"a": 1}), "unknown_action"),
        (gui(action=None), "unknown_action"),
        ({"name": ["computer_use"], "arguments": {}}, "invalid_action"),
        # mixed key types: JSON turns the int key into "7", an argument left_click does not take
        ({"name": "computer_use", "arguments": {"action": "mouse_move", "coordinate": [1, 1], 7: "x"}},
         "invalid_arguments"),
        ({"name": "computer_use", "arguments": {"action": "wait", "time": 0, ("a", 1): 2}}, "invalid_json"),
        # nesting
        ('{"name": "t", "arguments": {"a": ' + "[" * 1000 + "]" * 1000 + "}}", "invalid_json"),
        ('{"name": "t", "arguments": {"a": ' + "[" * 40 + "]" * 40 + "}}", "invalid_json"),
        ("[" * 100_000, "payload_too_large"),
        # huge numbers
        (gui(action="left_click", coordinate=[10**300, 5]), "out_of_screen"),
        (gui(action="scroll", pixels=10**300), "invalid_arguments"),
        (gui(action="scroll", pixels=1e300), "invalid_arguments"),
        (gui(action="wait", time=10**300), "invalid_arguments"),
        ('{"name": "computer_use", "arguments": {"action": "scroll", "pixels": 1' + "0" * 5000 + "}}",
         "invalid_json"),
        # lone surrogates are not Unicode: they broke the tool session's encoder
        (gui(action="type", text="\ud800"), "invalid_json"),
        ('{"name": "computer_use", "arguments": {"action": "type", "text": "\\udfff"}}', "invalid_json"),
        ({"name": "os.calculator", "arguments": {"\ud83d": "1"}}, "invalid_json"),
        # objects JSON cannot carry
        (gui(action="type", text=b"bytes"), "invalid_json"),
        (gui(action="left_click", coordinate={1, 2}), "invalid_json"),
        (b'{"name": "computer_use"}', "invalid_json"),
    ],
)  # fmt: skip
def test_hostile_payloads_are_values(raw, code):
    result = parse_action(raw, SCREEN)
    assert isinstance(result, ActionError), result
    assert result.code == code, result.message


def test_a_cyclic_mapping_is_invalid_json():
    call = gui(action="wait", time=0)
    call["arguments"]["self"] = call
    assert parse_action(call, SCREEN).code == "invalid_json"


def test_nesting_within_the_limit_reaches_the_tool():
    nested = '{"name": "t", "arguments": {"a": ' + "[" * 29 + "]" * 29 + "}}"  # 31 levels in all
    assert isinstance(parse_action(nested, SCREEN), ToolCall)
    assert isinstance(parse_action(nested, SCREEN, ActionLimits(max_depth=30)), ActionError)


FUZZ_TOOLS = [
    {"name": "os.calculator", "parameters": {"properties": {"expression": {"type": "string"}}}},
    {
        "name": "libreoffice_calc.set_cell_value",
        "parameters": {"properties": {"cell": {"type": "string"}, "value": {}, "row": {"type": "integer"}}},
    },
]


@pytest.mark.parametrize(
    "kind", list(HostileActions(0, screen_size=SCREEN, tools=FUZZ_TOOLS, enable_bash=True).classes)
)
def test_every_fuzz_class_gets_its_expected_code_from_validation(kind):
    """Each drawn action says what validation must return; 300 draws per class hold to it."""
    stream = HostileActions(7, screen_size=SCREEN, tools=FUZZ_TOOLS, enable_bash=True)
    for _ in range(300):
        fuzz = stream.draw(kind)
        result = parse_action(fuzz.action, SCREEN)
        if fuzz.expected is None:
            assert isinstance(result, GuiAction | ToolCall), (fuzz, result)
        else:
            assert isinstance(result, ActionError) and result.code == fuzz.expected, (fuzz, result)


def test_fuzz_stream_is_seeded():
    def draws(seed):
        stream = HostileActions(seed, screen_size=SCREEN, tools=FUZZ_TOOLS)
        return [stream.draw().summary() for _ in range(200)]

    assert draws(3) == draws(3)
    assert draws(3) != draws(4)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"command": "ls"}, BashCommand("ls", 30)),
        ({"command": "ls", "timeout": 0.5}, BashCommand("ls", 0.5)),
        ({"command": "ls", "timeout": 300}, BashCommand("ls", 300)),
        ({"command": "ls", "pyautogui_grid": 999}, BashCommand("ls", 30, pyautogui_grid=999)),
    ],
)
def test_a_bash_call_gets_its_command_and_a_30_s_default_timeout(arguments, expected):
    assert parse_bash(ToolCall("bash", arguments)) == expected


GRID_MESSAGE = "bash 'pyautogui_grid' must be an integer in [1, 100000] (HybridCUA: 999)."


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "bash needs a non-empty string 'command'."),
        ({"command": "  "}, "bash needs a non-empty string 'command'."),
        ({"command": ["ls"]}, "bash needs a non-empty string 'command'."),
        ({"command": "ls", "timeout": 0}, "bash 'timeout' must be a number of seconds in (0, 300]."),
        ({"command": "ls", "timeout": 300.5}, "bash 'timeout' must be a number of seconds in (0, 300]."),
        ({"command": "ls", "timeout": True}, "bash 'timeout' must be a number of seconds in (0, 300]."),
        ({"command": "ls", "timeout": "1"}, "bash 'timeout' must be a number of seconds in (0, 300]."),
        *(
            ({"command": "ls", "pyautogui_grid": grid}, GRID_MESSAGE)
            for grid in (0, "999", 999.0, True, 100_001)
        ),
    ],
)
def test_a_bad_bash_call_is_invalid_arguments_with_what_it_needs(arguments, message):
    refused = parse_bash(ToolCall("bash", arguments))
    assert isinstance(refused, ActionError)
    assert (refused.code, refused.message) == ("invalid_arguments", message)


def test_the_rendered_error_says_whether_input_was_sent():
    refused = ActionError("stale_gui_frame", "Look again.", {"input_events_emitted": False})
    assert refused.render() == "Error [stale_gui_frame] (no input was sent): Look again."
    partly = ActionError("timeout", "Typing stopped after 3 of 9 characters.", {"input_events_emitted": True})
    assert partly.render() == "Error [timeout] (input was sent): Typing stopped after 3 of 9 characters."
    # Unknown to the error (a tool's failure, a validation error before dispatch): nothing claimed.
    assert ActionError("tool_error", "boom").render() == "Error [tool_error]: boom"

"""Parser cases from the known failure modes (notes: hybrid-agents.md §1.2, §1.6, §6)."""

import json

import pytest
from hybrid_agent.parse import ParsedAction, ParseError, ParseErrorCode, parse_response
from hybrid_agent.toolset import ToolSpec
from hybrid_agent.trajectory import Call

TOOLS = [
    ToolSpec(
        "libreoffice_calc",
        "sort_column",
        "Sort a column.",
        {"type": "object", "properties": {"column": {"type": "string"}}, "required": ["column"]},
    ),
    ToolSpec("libreoffice_calc", "save", "Save."),
    ToolSpec("libreoffice_writer", "save", "Save."),
]


def call(tool_name, **arguments):
    return "<tool_call>\n" + json.dumps({"name": tool_name, "arguments": arguments}) + "\n</tool_call>"


def raw(obj) -> str:
    return "<tool_call>\n" + json.dumps(obj) + "\n</tool_call>"


def ok(text, tools=None) -> ParsedAction:
    result = parse_response(text, tools)
    assert isinstance(result, ParsedAction), result
    return result


def error(text, tools=None) -> ParseErrorCode:
    result = parse_response(text, tools)
    assert isinstance(result, ParseError), result
    return result.code


def test_clean_gui_output_with_think_and_action_line():
    result = ok(
        "<think>\nA1 is at the top.\n</think>\nAction: Click A1.\n"
        + call("computer_use", action="left_click", coordinate=[120, 80])
    )
    assert result.call.name == "computer_use"
    assert result.call.arguments == {"action": "left_click", "coordinate": [120, 80]}
    assert (result.think, result.action_line, result.repairs, result.is_gui) == (
        "A1 is at the top.",
        "Click A1.",
        (),
        True,
    )


def test_clean_mcp_output_is_an_mcp_call():
    result = ok("Action: Sort B.\n" + call("libreoffice_calc.sort_column", column="B"), TOOLS)
    assert (result.call.name, result.is_gui, result.repairs) == ("libreoffice_calc.sort_column", False, ())


def test_a_tool_call_inside_think_is_ignored():
    text = (
        "<think>maybe "
        + call("computer_use", action="wait", time=1)
        + "</think>\nAction: Save.\n"
        + call("computer_use", action="key", keys=["ctrl", "s"])
    )
    assert ok(text).call.arguments["action"] == "key"


@pytest.mark.parametrize("action", ["terminate", "answer"])
def test_terminal_actions(action):
    args = {"status": "success"} if action == "terminate" else {"text": "42"}
    assert ok(call("computer_use", action=action, **args)).is_terminal


@pytest.mark.parametrize(
    ("text", "repairs"),
    [
        (call("computer_use", action="wait", time=2) + "\nDone, I waited.", ("trailing_text",)),
        (
            '<tool_call>{"name": "computer_use", "arguments": {"action": "wait", "time": 2}} then stop'
            "</tool_call>",
            ("trailing_text",),
        ),
        (
            '<tool_call>{"name": "computer_use", "arguments": {"action": "wait", "time": 2}}',
            ("missing_close_tag",),
        ),
        (
            '<tool_call>{"name": "computer_use", "arguments": {"action": "wait", "time": 2}</tool_call>',
            ("missing_brace",),
        ),
    ],
)
def test_unambiguous_repairs_are_made_and_reported(text, repairs):
    result = ok(text)
    assert result.call.arguments == {"action": "wait", "time": 2}
    assert result.repairs == repairs


def test_bare_mcp_name_is_qualified_only_when_exactly_one_shown_tool_has_it():
    assert ok(call("sort_column", column="B"), TOOLS).call.name == "libreoffice_calc.sort_column"
    assert ok(call("sort_column", column="B"), TOOLS).repairs == ("qualified_name",)
    assert error(call("save"), TOOLS) == ParseErrorCode.UNKNOWN_TOOL  # two namespaces have 'save'


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("Action: I think the task is done.", ParseErrorCode.NO_TOOL_CALL),
        (
            call("computer_use", action="wait", time=1) + call("computer_use", action="wait", time=1),
            ParseErrorCode.MULTIPLE_TOOL_CALLS,
        ),
        (
            '<tool_call>{"name": "computer_use", "arguments": {"action": "wait"}} '
            '{"name": "x", "arguments": {}}</tool_call>',
            ParseErrorCode.MULTIPLE_TOOL_CALLS,
        ),
        (
            '<tool_call>{"name": "computer_use", "arguments": {"action": "key", "keys": [0xFF]}}</tool_call>',
            ParseErrorCode.INVALID_JSON,
        ),
        (
            '<tool_call>{"name": "computer_use", "arguments": {"action": "wait", "time": 2</tool_call>',
            ParseErrorCode.INVALID_JSON,
        ),
        ("<tool_call>[1, 2]</tool_call>", ParseErrorCode.INVALID_JSON),
        ('<tool_call>{"arguments": {}}</tool_call>', ParseErrorCode.MISSING_NAME),
        (
            call("computer_use", action="function_call", name="libreoffice_calc.save"),
            ParseErrorCode.UNKNOWN_GUI_ACTION,
        ),
        (call("computer_use", action="screenshot"), ParseErrorCode.UNKNOWN_GUI_ACTION),
        (call("computer_use", action="left_click"), ParseErrorCode.MISSING_ARGUMENTS),
        (call("computer_use", action="terminate"), ParseErrorCode.MISSING_ARGUMENTS),
        (call("computer_use"), ParseErrorCode.MISSING_ARGUMENTS),
        (
            '<tool_call>{"name": "computer_use", "arguments": {"action": "left_click"}, '
            '"coordinate": [1, 2]}</tool_call>',
            ParseErrorCode.AMBIGUOUS_SHAPE,
        ),
        (raw({"name": "computer_use", "arguments": [1]}), ParseErrorCode.MISSING_ARGUMENTS),
        (raw({"name": "computer_use", "arguments": "{oops"}), ParseErrorCode.INVALID_JSON),
        (call("computer_use", action="left_click", coordinate=[5]), ParseErrorCode.INVALID_ARGUMENTS),
        (call("computer_use", action="left_click", coordinate=[-5, 3]), ParseErrorCode.INVALID_ARGUMENTS),
        (call("computer_use", action="terminate", status="done"), ParseErrorCode.INVALID_ARGUMENTS),
        (call("triple_click", coordinate=[5, 5]), ParseErrorCode.GUI_ACTION_AS_TOOL),
    ],
)
def test_each_failure_mode_has_its_own_code(text, code):
    assert error(text) == code


def test_mcp_names_and_arguments_are_checked_against_the_shown_tools():
    assert error(call("libreoffice_impress.save"), TOOLS) == ParseErrorCode.UNKNOWN_TOOL
    assert error(call("libreoffice_calc.sort_column"), TOOLS) == ParseErrorCode.MISSING_ARGUMENTS
    # Without a tool list an MCP call is only checked for shape.
    assert ok(call("libreoffice_impress.save")).call.name == "libreoffice_impress.save"


@pytest.mark.parametrize("action", ["triple_click", "hscroll", "middle_click", "answer"])
def test_gui_actions_the_seed_mis_routed_stay_gui(action):
    args = {"coordinate": [1, 1]} if action != "hscroll" else {"pixels": 5}
    if action == "answer":
        args = {"text": "x"}
    result = ok(call("computer_use", action=action, **args))
    assert result.is_gui and result.call.name == "computer_use"


def test_parse_error_renders_feedback_and_converts_to_the_env_error_shape():
    result = parse_response(call("computer_use", action="screenshot"))
    assert isinstance(result, ParseError)
    assert result.render().startswith("Error [unknown_gui_action]: computer_use has no action 'screenshot'.")
    assert result.to_action_error().code == "unknown_gui_action"


@pytest.mark.parametrize(
    ("obj", "expected", "repairs"),
    [
        # Qwen3-VL Instruct's flat shape: the arguments beside the name.
        (
            {"name": "computer_use", "action": "left_click", "coordinate": [1, 2]},
            Call("computer_use", {"action": "left_click", "coordinate": [1, 2]}),
            ("flat_shape",),
        ),
        (
            {"name": "libreoffice_calc.sort_column", "column": "B"},
            Call("libreoffice_calc.sort_column", {"column": "B"}),
            ("flat_shape",),
        ),
        ({"name": "libreoffice_calc.save"}, Call("libreoffice_calc.save", {}), ("flat_shape",)),
        # OpenAI function-calling wire form: a prefix and arguments as a JSON string.
        (
            {"name": "functions.computer_use", "arguments": '{"action": "key", "keys": ["ctrl", "s"]}'},
            Call("computer_use", {"action": "key", "keys": ["ctrl", "s"]}),
            ("functions_prefix", "arguments_string"),
        ),
        (
            {"name": "functions.libreoffice_calc.save", "arguments": {}},
            Call("libreoffice_calc.save", {}),
            ("functions_prefix",),
        ),
        (
            {"name": "computer_use", "arguments": {"action": "wait"}},
            Call("computer_use", {"action": "wait", "time": 1.0}),
            ("default_wait_time",),
        ),
        (
            {"name": "functions.computer_use", "action": "wait"},
            Call("computer_use", {"action": "wait", "time": 1.0}),
            ("functions_prefix", "flat_shape", "default_wait_time"),
        ),
        (
            {"name": "computer_use", "arguments": {"action": "wait", "time": 3}, "type": "function"},
            Call("computer_use", {"action": "wait", "time": 3}),
            (),
        ),
    ],
)
def test_real_checkpoint_shapes_are_accepted_with_each_repair_recorded(obj, expected, repairs):
    result = ok(raw(obj), TOOLS)
    assert result.call == expected
    assert result.repairs == repairs


def test_flat_shape_still_rejects_what_is_ambiguous_or_wrong():
    # A bare name two shown tools share stays ambiguous in the flat shape too.
    assert error(raw({"name": "save"}), TOOLS) == ParseErrorCode.UNKNOWN_TOOL
    assert error(raw({"name": "computer_use", "action": "left_click"})) == ParseErrorCode.MISSING_ARGUMENTS
    assert error(raw({"name": "sort_column"}), TOOLS) == ParseErrorCode.MISSING_ARGUMENTS

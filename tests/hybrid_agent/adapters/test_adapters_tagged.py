"""GLM-4.5V and Qwen3-Coder tagged calls (written from their chat templates' formats) -> exact env calls."""

import pytest
from hybrid_agent.adapters import get_adapter
from hybrid_agent.parse import ParsedAction, ParseError, ParseErrorCode
from hybrid_agent.prompt import PromptConfig
from hybrid_agent.toolset import ToolSpec

SCREEN = (1920, 1080)
SET_CELL = ToolSpec(
    "libreoffice_calc",
    "set_cell_value",
    "Write one cell.",
    {
        "type": "object",
        "properties": {"cell": {"type": "string"}, "value": {"type": "string"}},
        "required": ["cell", "value"],
    },
)


def _glm(*pairs: tuple[str, str], name: str = "computer_use", close: str = "</tool_call>") -> str:
    inner = "".join(f"\n<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>" for k, v in pairs)
    return f"<think>I click Save.</think>\n<tool_call>{name}{inner}\n{close}"


def _coder(*pairs: tuple[str, str], name: str = "computer_use") -> str:
    inner = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in pairs)
    return f"Action: click Save\n<tool_call>\n<function={name}>\n{inner}</function>\n</tool_call>"


def _parse(adapter: str, text: str):
    return get_adapter(adapter).parse(text, [SET_CELL], SCREEN)


def test_glm_click_on_the_grid_becomes_screen_pixels():
    parsed = _parse("glm-4.5v", _glm(("action", "left_click"), ("coordinate", "[500, 500]")))
    assert isinstance(parsed, ParsedAction)
    assert parsed.call.arguments == {"action": "left_click", "coordinate": [960, 540]}
    assert parsed.think == "I click Save." and parsed.repairs == ()


def test_glm_box_is_read_as_its_centre():
    box = "<|begin_of_box|>[480,480,520,520]<|end_of_box|>"
    parsed = _parse("glm-4.5v", _glm(("action", "double_click"), ("coordinate", box)))
    assert isinstance(parsed, ParsedAction)
    assert parsed.call.arguments == {"action": "double_click", "coordinate": [960, 540]}
    assert parsed.repairs == ("box_tokens", "box_centre")


def test_glm_mcp_call_keeps_string_values_as_text():
    parsed = _parse("glm-4.5v", _glm(("cell", "A1"), ("value", "5"), name="libreoffice_calc.set_cell_value"))
    assert isinstance(parsed, ParsedAction)
    assert (parsed.call.name, parsed.call.arguments) == (
        "libreoffice_calc.set_cell_value",
        {"cell": "A1", "value": "5"},  # "5" stays a string: the schema says so
    )


def test_glm_typed_text_and_keys():
    typed = _parse("glm-4.5v", _glm(("action", "type"), ("text", "42")))
    assert isinstance(typed, ParsedAction) and typed.call.arguments == {"action": "type", "text": "42"}
    keys = _parse("glm-4.5v", _glm(("action", "key"), ("keys", '["ctrl", "s"]')))
    assert isinstance(keys, ParsedAction) and keys.call.arguments == {"action": "key", "keys": ["ctrl", "s"]}


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("I think the task is done.", ParseErrorCode.NO_TOOL_CALL),
        (
            _glm(("action", "wait")) + "<tool_call>computer_use<arg_key>action</arg_key></tool_call>",
            ParseErrorCode.MULTIPLE_TOOL_CALLS,
        ),
        (_glm(("action", "left_click"), ("coordinate", "[500, 500]"), name=""), ParseErrorCode.MISSING_NAME),
        (
            "<tool_call>computer_use\n<arg_key>action</arg_key>left_click\n</tool_call>",
            ParseErrorCode.INVALID_SYNTAX,
        ),
        (_glm(("action", "left_click")), ParseErrorCode.MISSING_ARGUMENTS),
        (_glm(("action", "fly"), ("coordinate", "[1, 1]")), ParseErrorCode.UNKNOWN_GUI_ACTION),
        (_glm(("action", "left_click"), ("coordinate", "[500, 1200]")), ParseErrorCode.OUT_OF_SPACE),
        (_glm(("action", "left_click"), ("action", "right_click")), ParseErrorCode.INVALID_ARGUMENTS),
        (_glm(("cell", "A1"), name="libreoffice_calc.set_cell_value"), ParseErrorCode.MISSING_ARGUMENTS),
        (_glm(("x", "1"), name="calc.nope"), ParseErrorCode.UNKNOWN_TOOL),
    ],
)
def test_malformed_glm_calls_are_typed_errors(text, code):
    parsed = _parse("glm-4.5v", text)
    assert isinstance(parsed, ParseError) and parsed.code == code, parsed


def test_glm_unclosed_last_block_is_repaired():
    parsed = _parse("glm-4.5v", _glm(("action", "wait"), ("time", "2"), close=""))
    assert isinstance(parsed, ParsedAction) and parsed.call.arguments == {"action": "wait", "time": 2}
    assert parsed.repairs == ("missing_close_tag",)


def test_qwen3_coder_click_and_mcp_call():
    click = _parse("qwen3-coder", _coder(("action", "left_click"), ("coordinate", "[250, 750]")))
    assert isinstance(click, ParsedAction)
    assert click.call.arguments == {"action": "left_click", "coordinate": [480, 810]}
    assert click.action_line == "click Save"
    write = _parse("qwen3-coder", _coder(("cell", "B2"), ("value", "3"), name="set_cell_value"))
    assert isinstance(write, ParsedAction)
    assert write.call.name == "libreoffice_calc.set_cell_value"  # a bare name shown once is qualified
    assert write.call.arguments == {"cell": "B2", "value": "3"} and write.repairs == ("qualified_name",)


def test_qwen3_coder_multiline_text_is_kept():
    parsed = _parse("qwen3-coder", _coder(("action", "type"), ("text", "line 1\nline 2")))
    assert isinstance(parsed, ParsedAction) and parsed.call.arguments["text"] == "line 1\nline 2"


@pytest.mark.parametrize(
    ("text", "code"),
    [
        (
            "<tool_call>\n<function=computer_use>\n<parameter=action>\nwait\n</function>\n</tool_call>",
            ParseErrorCode.INVALID_SYNTAX,
        ),
        ("<tool_call>\n<parameter=action>\nwait\n</parameter>\n</tool_call>", ParseErrorCode.INVALID_SYNTAX),
        (
            "<tool_call>\n<function=computer_use>\nleft_click\n</function>\n</tool_call>",
            ParseErrorCode.INVALID_SYNTAX,
        ),
        (_coder(("action", "left_click"), ("coordinate", "[5000, 5]")), ParseErrorCode.OUT_OF_SPACE),
        (_coder(("action", "left_click"), ("coordinate", "here")), ParseErrorCode.INVALID_ARGUMENTS),
        (_coder(("action", "terminate"), ("status", "maybe")), ParseErrorCode.INVALID_ARGUMENTS),
    ],
)
def test_malformed_qwen3_coder_calls_are_typed_errors(text, code):
    parsed = _parse("qwen3-coder", text)
    assert isinstance(parsed, ParseError) and parsed.code == code, parsed


def test_tagged_prompts_state_their_call_spelling_and_the_grid():
    glm = get_adapter("glm-4.5v").system_prompt([SET_CELL], SCREEN, PromptConfig())
    assert "<arg_key>" in glm and "resolution is 1000x1000" in glm and '"name": <function-name>' not in glm
    coder = get_adapter("qwen3-coder").system_prompt([SET_CELL], SCREEN, PromptConfig())
    assert "<function=<function-name>>" in coder and "libreoffice_calc.set_cell_value" in coder

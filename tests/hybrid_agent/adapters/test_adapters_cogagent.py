"""CogAgent grounded operations (written from its documented answer format) -> exact env calls."""

import pytest
from hybrid_agent.adapters import get_adapter
from hybrid_agent.parse import ParsedAction, ParseError, ParseErrorCode

SCREEN = (1920, 1080)


def _reply(operation: str) -> str:
    return f"Action: Click the Save button.\nGrounded Operation: {operation}\n<<General operation>>"


@pytest.mark.parametrize(
    ("operation", "expected"),
    [
        (
            "CLICK(box=[[480,480,520,520]], element_type='Button', element_info='Save')",
            {"action": "left_click", "coordinate": [960, 540]},
        ),
        ("DOUBLE_CLICK(box=[[0,0,0,0]])", {"action": "double_click", "coordinate": [0, 0]}),
        ("RIGHT_CLICK(box=[[240,240,260,260]])", {"action": "right_click", "coordinate": [480, 270]}),
        ("HOVER(box=[[990,990,1000,1000]])", {"action": "mouse_move", "coordinate": [1910, 1075]}),
        ("TYPE(text='42\\n')", {"action": "type", "text": "42\n"}),
        (
            "SCROLL_DOWN(box=[[480,480,520,520]], step_count=3)",
            {"action": "scroll", "pixels": -150, "coordinate": [960, 540]},
        ),
        ("SCROLL_UP()", {"action": "scroll", "pixels": 250}),
        ("SCROLL_LEFT(step_count=1)", {"action": "hscroll", "pixels": -50}),
        ("KEY_PRESS(key='Ctrl+S')", {"action": "key", "keys": ["ctrl", "s"]}),
        ("KEY_PRESS(key='Return')", {"action": "key", "keys": ["return"]}),
        ("WAIT()", {"action": "wait", "time": 5.0}),
        ("END()", {"action": "terminate", "status": "success"}),
    ],
)
def test_cogagent_operations_become_env_calls_in_screen_pixels(operation, expected):
    parsed = get_adapter("cogagent").parse(_reply(operation), [], SCREEN)
    assert isinstance(parsed, ParsedAction), parsed
    assert parsed.call.arguments == expected
    assert parsed.action_line == "Click the Save button."


def test_type_into_a_box_types_at_the_focus_and_says_so():
    parsed = get_adapter("cogagent").parse(
        _reply("TYPE(box=[[1,1,2,2]], text='a', element_type='Input')"), [], SCREEN
    )
    assert isinstance(parsed, ParsedAction)
    assert parsed.call.arguments == {"action": "type", "text": "a"} and parsed.repairs == ("type_box_unused",)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("Action: Click Save.", ParseErrorCode.NO_TOOL_CALL),
        (_reply("CLICK(box=[[480,480,520,520]]"), ParseErrorCode.INVALID_SYNTAX),
        (_reply("CLICK(box=box)"), ParseErrorCode.INVALID_SYNTAX),  # a name, never looked up
        (_reply("CLICK(element_info='Save')"), ParseErrorCode.MISSING_ARGUMENTS),
        (_reply("CLICK(box=[[1,2,3]])"), ParseErrorCode.INVALID_ARGUMENTS),
        (_reply("CLICK(box=[[1480,480,1520,520]])"), ParseErrorCode.OUT_OF_SPACE),
        (_reply("TYPE(box=[[1,1,2,2]])"), ParseErrorCode.MISSING_ARGUMENTS),
        (_reply("SCROLL_DOWN(step_count=0)"), ParseErrorCode.INVALID_ARGUMENTS),
        (_reply("LAUNCH(app='Calc')"), ParseErrorCode.UNKNOWN_GUI_ACTION),
        (_reply("CLICK(box=[[1,1,2,2]]); END()"), ParseErrorCode.MULTIPLE_TOOL_CALLS),
    ],
)
def test_malformed_cogagent_replies_are_typed_errors(text, code):
    parsed = get_adapter("cogagent").parse(text, [], SCREEN)
    assert isinstance(parsed, ParseError) and parsed.code == code, parsed

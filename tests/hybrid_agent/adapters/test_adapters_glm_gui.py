"""GLM-4.5V GUI-agent replies (written from its GUI-agent guide's PC action space) -> exact env calls.

The guide asks for a plain-text explanation, the action call and a ``Memory:`` list; the
model marks the call with its box tokens. Coordinates are thousandths of the screenshot,
so on 1920x1080 a point (x, y) lands at (x * 1.92, y * 1.08), rounded half up.
"""

import pytest
from hybrid_agent.adapters import get_adapter
from hybrid_agent.parse import ParsedAction, ParseError, ParseErrorCode

SCREEN = (1920, 1080)


def _reply(action: str, explanation: str = "I can see the dialog; I act on it.") -> str:
    return f"{explanation}\n<|begin_of_box|>{action}<|end_of_box|>\nMemory:\n[]"


def _parse(text: str):
    return get_adapter("glm-4.5v").parse(text, [], SCREEN)


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        # the guide's own history steps (GIMP): 586 * 1.92 = 1125.12, 446 * 1.08 = 481.68
        (
            "left_click(start_box='[586, 446]', element_info='OK button')",
            {"action": "left_click", "coordinate": [1125, 482]},
        ),
        (
            "left_click(start_box='[149, 70]', element_info='Image menu')",  # 286.08, 75.6
            {"action": "left_click", "coordinate": [286, 76]},
        ),
        (
            "left_click(start_box='[503,271]')",
            {"action": "left_click", "coordinate": [966, 293]},
        ),  # 965.76, 292.68
        ("right_click(start_box='[500,500]')", {"action": "right_click", "coordinate": [960, 540]}),
        ("middle_click(start_box='[250,500]')", {"action": "middle_click", "coordinate": [480, 540]}),
        ("hover(start_box='[999,0]')", {"action": "mouse_move", "coordinate": [1918, 0]}),  # 1918.08
        (
            "left_double_click(start_box='[320, 211]', element_info='Flip Horizontally')",  # 614.4, 227.88
            {"action": "double_click", "coordinate": [614, 228]},
        ),
        (
            "left_drag(start_box='[100,100]', end_box='[900,800]', element_info='slider')",
            {"action": "left_click_drag", "start_coordinate": [192, 108], "coordinate": [1728, 864]},
        ),
        ("key(keys='ctrl+c')", {"action": "key", "keys": ["ctrl", "c"]}),
        ("key(keys='alt+tab')", {"action": "key", "keys": ["alt", "tab"]}),
        ("key(keys='Return')", {"action": "key", "keys": ["return"]}),
        ("type(content='Quarterly report')", {"action": "type", "text": "Quarterly report"}),
        (
            "scroll(start_box='[500,500]', direction='down', step=3, element_info='list')",
            {"action": "scroll", "pixels": -150, "coordinate": [960, 540]},  # 3 notches of 50 px
        ),
        (
            "scroll(start_box='[500,250]', direction='up')",  # the default 5 steps
            {"action": "scroll", "pixels": 250, "coordinate": [960, 270]},
        ),
        ("WAIT()", {"action": "wait", "time": 5.0}),
        ("DONE()", {"action": "terminate", "status": "success"}),
        ("FAIL()", {"action": "terminate", "status": "failure"}),
        # a box where a point goes: its centre
        ("left_click(start_box='[480,480,520,520]')", {"action": "left_click", "coordinate": [960, 540]}),
    ],
)
def test_glm_gui_actions_become_env_calls_in_screen_pixels(action, expected):
    parsed = _parse(_reply(action))
    assert isinstance(parsed, ParsedAction), parsed
    assert parsed.call.arguments == expected
    assert parsed.think == "I can see the dialog; I act on it." and parsed.action_line == action
    assert parsed.repairs == ()


def test_the_call_is_kept_as_written_in_thousandths():
    parsed = _parse(_reply("left_click(start_box='[503,271]')"))
    assert isinstance(parsed, ParsedAction)
    assert parsed.as_written.arguments == {"action": "left_click", "coordinate": [503, 271]}


@pytest.mark.parametrize(
    "text",
    [
        # reasoning first (thinking mode), "Action:" before the boxed call, a memory list after
        "<think>The OK button closes it.</think>I close the dialog.\nAction: <|begin_of_box|>"
        "left_click(start_box='[503,271]', element_info='OK')<|end_of_box|>\nMemory:\n[{\"key\": \"value\"}]",
        # a server that drops special tokens: the one line that is a call
        "I close the dialog.\nleft_click(start_box='[503,271]', element_info='OK')\nMemory:\n[]",
        # the box tokens around the point only
        "I close the dialog.\nleft_click(start_box='<|begin_of_box|>[503,271]<|end_of_box|>')\nMemory:\n[]",
    ],
)
def test_glm_gui_reply_variants_are_read(text):
    parsed = _parse(text)
    assert isinstance(parsed, ParsedAction), parsed
    assert parsed.call.arguments == {"action": "left_click", "coordinate": [966, 293]}


def test_glm_type_text_with_its_own_quotes_is_typed_as_written():
    parsed = _parse(_reply("type(content='It's done')"))
    assert isinstance(parsed, ParsedAction), parsed
    assert parsed.call.arguments == {"action": "type", "text": "It's done"}
    assert parsed.repairs == ("unescaped_quotes",)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("I think the task is done.\nMemory:\n[]", ParseErrorCode.NO_TOOL_CALL),
        (_reply("WAIT()") + _reply("DONE()"), ParseErrorCode.MULTIPLE_TOOL_CALLS),
        (
            "Click it.\nhover(start_box='[1,1]')\nleft_click(start_box='[1,1]')",
            ParseErrorCode.MULTIPLE_TOOL_CALLS,
        ),
        (_reply("screenshot()"), ParseErrorCode.UNKNOWN_GUI_ACTION),  # not in GLM-4.5V's PC space
        (_reply("click(start_box='[1,1]')"), ParseErrorCode.UNKNOWN_GUI_ACTION),
        (_reply("left_click(element_info='OK')"), ParseErrorCode.MISSING_ARGUMENTS),
        (_reply("left_drag(start_box='[1,1]')"), ParseErrorCode.MISSING_ARGUMENTS),
        (_reply("type()"), ParseErrorCode.MISSING_ARGUMENTS),
        (_reply("key(keys='')"), ParseErrorCode.INVALID_ARGUMENTS),
        (_reply("left_click(start_box='[1,2,3]')"), ParseErrorCode.INVALID_ARGUMENTS),
        (_reply("scroll(start_box='[5,5]', direction='left')"), ParseErrorCode.INVALID_ARGUMENTS),  # up/down
        (_reply("scroll(start_box='[5,5]', direction='down', step=0)"), ParseErrorCode.INVALID_ARGUMENTS),
        (_reply("left_click(start_box='[1200, 50]')"), ParseErrorCode.OUT_OF_SPACE),
        (_reply("left_click(start_box='[503,271]'"), ParseErrorCode.INVALID_SYNTAX),
        (_reply("left_click(start_box=__import__('os'))"), ParseErrorCode.INVALID_SYNTAX),  # never run
    ],
)
def test_malformed_glm_gui_replies_are_typed_errors(text, code):
    parsed = _parse(text)
    assert isinstance(parsed, ParseError) and parsed.code == code, parsed


def test_a_tool_call_still_takes_the_tagged_reader():
    text = (
        "<tool_call>computer_use\n<arg_key>action</arg_key>\n<arg_value>left_click</arg_value>\n</tool_call>"
    )
    parsed = _parse(text)  # the tagged form's own error, not the GUI reader's
    assert isinstance(parsed, ParseError) and parsed.code == ParseErrorCode.MISSING_ARGUMENTS

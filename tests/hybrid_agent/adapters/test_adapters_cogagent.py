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


# Key combinations as CogAgent's action-space document writes them: a GESTURE of
# KEY_DOWN / KEY_PRESS / KEY_UP with its Windows (Lcontrol, Lmenu, Lshift) or macOS
# (Control, Command, Shift) key names; one chord is one env `key` action.
@pytest.mark.parametrize(
    ("operation", "keys"),
    [
        (  # the document's own example (its Ctrl+F search, written with key 'A')
            "GESTURE(actions=[KEY_DOWN(key='Lcontrol'), KEY_PRESS(key='A'), KEY_UP(key='Lcontrol')])",
            ["ctrl", "a"],
        ),
        (  # Ctrl+C with the macOS column's name
            "GESTURE(actions=[KEY_DOWN(key='Control'), KEY_PRESS(key='c'), KEY_UP(key='Control')])",
            ["ctrl", "c"],
        ),
        (  # two held keys, released in reverse order
            "GESTURE(actions=[KEY_DOWN(key='Lcontrol'), KEY_DOWN(key='Lshift'), KEY_PRESS(key='T'), "
            "KEY_UP(key='Lshift'), KEY_UP(key='Lcontrol')])",
            ["ctrl", "shift", "t"],
        ),
        (
            "GESTURE(actions=[KEY_DOWN(key='Lmenu'), KEY_PRESS(key='F4'), KEY_UP(key='Lmenu')])",
            ["alt", "f4"],
        ),
        (
            "GESTURE(actions=[KEY_DOWN(key='Command'), KEY_PRESS(key='Space'), KEY_UP(key='Command')])",
            ["cmd", "space"],
        ),
        ("GESTURE(actions=[KEY_PRESS(key='Return')])", ["return"]),
        ("KEY_PRESS(key='Right Control')", ["rctrl"]),
        ("KEY_PRESS(key='Up Arrow')", ["up"]),
        ("KEY_PRESS(key='Lcontrol+S')", ["ctrl", "s"]),
    ],
)
def test_cogagent_key_combinations_become_one_key_action(operation, keys):
    parsed = get_adapter("cogagent").parse(_reply(operation), [], SCREEN)
    assert isinstance(parsed, ParsedAction), parsed
    assert parsed.call.arguments == {"action": "key", "keys": keys}


@pytest.mark.parametrize(
    ("operation", "code"),
    [
        ("GESTURE()", ParseErrorCode.MISSING_ARGUMENTS),
        ("GESTURE(actions=[])", ParseErrorCode.MISSING_ARGUMENTS),
        # a held key never released, two presses, a release of a key never held: not one chord
        ("GESTURE(actions=[KEY_DOWN(key='Lcontrol'), KEY_PRESS(key='C')])", ParseErrorCode.INVALID_ARGUMENTS),
        (
            "GESTURE(actions=[KEY_DOWN(key='Lcontrol'), KEY_PRESS(key='C'), KEY_PRESS(key='V'), "
            "KEY_UP(key='Lcontrol')])",
            ParseErrorCode.INVALID_ARGUMENTS,
        ),
        (
            "GESTURE(actions=[KEY_DOWN(key='Lcontrol'), KEY_PRESS(key='C'), KEY_UP(key='Lshift')])",
            ParseErrorCode.INVALID_ARGUMENTS,
        ),
        (
            "GESTURE(actions=[KEY_DOWN(key='Lcontrol'), KEY_UP(key='Lcontrol')])",
            ParseErrorCode.INVALID_ARGUMENTS,
        ),
        ("GESTURE(actions=[CLICK(box=[[1,1,2,2]])])", ParseErrorCode.INVALID_ARGUMENTS),
        ("GESTURE(actions=[KEY_PRESS()])", ParseErrorCode.INVALID_ARGUMENTS),
        ("GESTURE(actions=['ctrl', 'c'])", ParseErrorCode.INVALID_ARGUMENTS),
        ("GESTURE(actions=[KEY_PRESS(key=k)])", ParseErrorCode.INVALID_SYNTAX),  # a name, never looked up
        ("GESTURE(actions=[KEY_PRESS(key=__import__('os'))])", ParseErrorCode.INVALID_SYNTAX),
    ],
)
def test_malformed_gestures_are_typed_errors(operation, code):
    parsed = get_adapter("cogagent").parse(_reply(operation), [], SCREEN)
    assert isinstance(parsed, ParseError) and parsed.code == code, parsed

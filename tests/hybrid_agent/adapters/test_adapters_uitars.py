"""UI-TARS replies (written from its documented action space) -> exact env calls in screen pixels."""

import pytest
from hybrid_agent.adapters import get_adapter
from hybrid_agent.parse import ParsedAction, ParseError, ParseErrorCode

SCREEN = (1920, 1080)  # UI-TARS-1.5 sees it smart-resized to 1932x1092; UI-TARS-2 on a 1000 grid


def _call(adapter: str, text: str):
    parsed = get_adapter(adapter).parse(text, [], SCREEN)
    assert isinstance(parsed, ParsedAction), parsed
    return parsed.call.arguments


def _error(adapter: str, text: str) -> ParseError:
    parsed = get_adapter(adapter).parse(text, [], SCREEN)
    assert isinstance(parsed, ParseError), parsed
    return parsed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Thought: The Save button is at the centre.\nAction: click(start_box='(966,546)')",
            {"action": "left_click", "coordinate": [960, 540]},
        ),
        (
            "Thought: open it\nAction: left_double(start_box='<|box_start|>(0,0)<|box_end|>')",
            {"action": "double_click", "coordinate": [0, 0]},
        ),
        (
            "Action: right_single(start_box='[956,536,976,556]')",  # a box: its centre
            {"action": "right_click", "coordinate": [960, 540]},
        ),
        (
            "Action: drag(start_box='(28,28)', end_box='(1931,1091)')",
            {"action": "left_click_drag", "start_coordinate": [28, 28], "coordinate": [1919, 1079]},
        ),
        ("Action: hotkey(key='ctrl s')", {"action": "key", "keys": ["ctrl", "s"]}),
        ("Action: hotkey(key='Ctrl Shift T')", {"action": "key", "keys": ["ctrl", "shift", "t"]}),
        ("Action: type(content='total\\n')", {"action": "type", "text": "total\n"}),
        (
            "Action: scroll(start_box='(966,546)', direction='down')",
            {"action": "scroll", "pixels": -250, "coordinate": [960, 540]},
        ),
        ("Action: scroll(direction='left')", {"action": "hscroll", "pixels": -250}),
        ("Action: wait()", {"action": "wait", "time": 5.0}),
        ("Action: finished()", {"action": "terminate", "status": "success"}),
        ("Action: finished(content='42')", {"action": "answer", "text": "42"}),
        ("Action: call_user()", {"action": "terminate", "status": "failure"}),
    ],
)
def test_ui_tars_15_actions_become_env_calls_in_screen_pixels(text, expected):
    assert _call("ui-tars-1.5", text) == expected


def test_ui_tars_15_keeps_the_thought_and_the_action_line():
    parsed = get_adapter("ui-tars-1.5").parse(
        "Thought: Click Save.\nAction: click(start_box='(966,546)')", [], SCREEN
    )
    assert isinstance(parsed, ParsedAction)
    assert parsed.think == "Click Save." and parsed.action_line == "click(start_box='(966,546)')"
    assert parsed.as_written.arguments["coordinate"] == [966, 546]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Thought: x\nAction: click(point='<point>500 500</point>')",
            {"action": "left_click", "coordinate": [960, 540]},
        ),
        (
            "Action: drag(start_point='<point>0 0</point>', end_point='<point>1000 1000</point>')",
            {"action": "left_click_drag", "start_coordinate": [0, 0], "coordinate": [1919, 1079]},
        ),
        (
            "Action: left_triple(point='<point>250 250</point>')",
            {"action": "triple_click", "coordinate": [480, 270]},
        ),
    ],
)
def test_ui_tars_2_points_are_on_the_relative_grid(text, expected):
    assert _call("ui-tars-2", text) == expected


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("Thought: I am not sure what to do.", ParseErrorCode.NO_TOOL_CALL),
        ("Action: click(start_box='(966,546)'", ParseErrorCode.INVALID_SYNTAX),  # unclosed
        ("Action: click(start_box='(1,2)')\n\nAction: type(content='a')", ParseErrorCode.INVALID_SYNTAX),
        ("Action: click(start_box='(1,2)')\ntype(content='a')", ParseErrorCode.MULTIPLE_TOOL_CALLS),
        ("Action: click(start_box=__import__('os'))", ParseErrorCode.INVALID_SYNTAX),  # never evaluated
        ("Action: click()", ParseErrorCode.MISSING_ARGUMENTS),
        ("Action: click(start_box='(1,2,3)')", ParseErrorCode.INVALID_ARGUMENTS),
        ("Action: scroll(direction='sideways')", ParseErrorCode.INVALID_ARGUMENTS),
        ("Action: press_home()", ParseErrorCode.UNKNOWN_GUI_ACTION),  # a mobile action
        ("Action: click(start_box='(2000,100)')", ParseErrorCode.OUT_OF_SPACE),  # past 1931
        ("Action: hotkey(key='')", ParseErrorCode.INVALID_ARGUMENTS),
    ],
)
def test_malformed_ui_tars_replies_are_typed_errors(text, code):
    assert _error("ui-tars-1.5", text).code == code


def test_ui_tars_prompts_state_their_spaces_and_point_spelling():
    from hybrid_agent.prompt import PromptConfig

    v15 = get_adapter("ui-tars-1.5").system_prompt([], SCREEN, PromptConfig())
    assert "1932x1092" in v15 and "<|box_start|>(x1,y1)<|box_end|>" in v15
    v2 = get_adapter("ui-tars-2").system_prompt([], SCREEN, PromptConfig())
    assert "1000x1000" in v2 and "point='<point>x1 y1</point>'" not in v2 and "<point>x1 y1</point>" in v2


# Text as UI-TARS writes it in type()/finished(): its own parser escapes the quotes the
# model left unescaped and types the text between content=' and the final ').
@pytest.mark.parametrize("adapter", ["ui-tars-1.5", "ui-tars-2"])
@pytest.mark.parametrize(
    ("action", "expected", "repairs"),
    [
        ("type(content='It's done')", {"action": "type", "text": "It's done"}, ("unescaped_quotes",)),
        (
            "type(content='He said \"it's ok\"')",
            {"action": "type", "text": 'He said "it\'s ok"'},
            ("unescaped_quotes",),
        ),
        (  # an escape the model did write keeps its meaning: \n is a newline, typed as Enter
            "type(content='Don't stop\\n')",
            {"action": "type", "text": "Don't stop\n"},
            ("unescaped_quotes",),
        ),
        (  # the two characters \n at the end: UI-TARS's executor presses Enter after the text
            "type(content='Bob\\'s total\\\\n')",
            {"action": "type", "text": "Bob's total\n"},
            ("literal_newline",),
        ),
        (  # a line break inside the quotes: UI-TARS's parser escapes it before reading
            "type(content='line 1\nline 2')",
            {"action": "type", "text": "line 1\nline 2"},
            ("unescaped_quotes",),
        ),
        ("finished(content='It's 42')", {"action": "answer", "text": "It's 42"}, ("unescaped_quotes",)),
        ("type(content='plain')", {"action": "type", "text": "plain"}, ()),
    ],
)
def test_ui_tars_text_with_its_own_quotes_is_typed_as_written(adapter, action, expected, repairs):
    parsed = get_adapter(adapter).parse(f"Thought: Type the note.\nAction: {action}", [], SCREEN)
    assert isinstance(parsed, ParsedAction), parsed
    assert parsed.call.arguments == expected
    assert parsed.repairs == repairs and parsed.think == "Type the note."


@pytest.mark.parametrize(
    ("action", "code"),
    [
        # two actions after the first text's quote: never merged into one text
        ("type(content='It's')\nclick(start_box='(1,2)')", ParseErrorCode.INVALID_SYNTAX),
        ("type(content='It's done'", ParseErrorCode.INVALID_SYNTAX),  # unclosed call
        ("type(content='It's', extra='x')", ParseErrorCode.INVALID_SYNTAX),  # not the one-argument form
    ],
)
def test_ui_tars_quote_repair_stays_inside_one_text(action, code):
    assert _error("ui-tars-1.5", f"Action: {action}").code == code

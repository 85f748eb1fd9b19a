"""Provider computer-use vocabularies become env actions the stack's one validator accepts or names."""

import pytest
from hybrid_agent.parse import ParsedAction, ParseError, ParseErrorCode, validate_gui
from hybrid_agent.provider_actions import (
    WHEEL_NOTCH_PIXELS,
    anthropic_refusal,
    display_to_screen,
    from_anthropic,
    from_openai,
    scaled_display,
)


@pytest.mark.parametrize(
    "screen, display",
    [
        ((1920, 1080), (1366, 768)),  # 16:9 -> FWXGA
        ((2560, 1600), (1280, 800)),  # 16:10 -> WXGA
        ((1600, 1200), (1024, 768)),  # 4:3 -> XGA
        ((1280, 800), (1280, 800)),  # already at the target: sent as it is
        ((1000, 1000), (1000, 1000)),  # no target of that aspect ratio
    ],
)
def test_the_display_is_the_recommended_size_for_the_aspect_ratio(screen, display):
    assert scaled_display(screen) == display


def test_display_points_map_onto_the_screen_both_axes_apart():
    args = {"action": "left_click_drag", "start_coordinate": [0, 0], "coordinate": [1365, 767]}
    assert display_to_screen(args, (1366, 768), (1920, 1080)) == {
        "action": "left_click_drag",
        "start_coordinate": [0, 0],
        "coordinate": [1919, 1079],
    }
    bad = {"action": "left_click", "coordinate": "centre"}
    assert display_to_screen(bad, (1366, 768), (1920, 1080)) == bad  # left for the parser


@pytest.mark.parametrize(
    "tool_input, expected",
    [
        ({"action": "key", "text": "ctrl+s"}, {"action": "key", "keys": ["ctrl", "s"]}),
        ({"action": "key", "text": "ctrl++"}, {"action": "key", "keys": ["ctrl", "plus"]}),
        ({"action": "type", "text": "hi"}, {"action": "type", "text": "hi"}),
        ({"action": "left_click", "coordinate": [3, 4], "text": "shift"},
         {"action": "left_click", "coordinate": [3, 4], "keys": ["shift"]}),
        ({"action": "triple_click", "coordinate": [3, 4]}, {"action": "triple_click", "coordinate": [3, 4]}),
        ({"action": "scroll", "coordinate": [1, 2], "scroll_direction": "down", "scroll_amount": 3},
         {"action": "scroll", "coordinate": [1, 2], "pixels": -3 * WHEEL_NOTCH_PIXELS}),
        ({"action": "scroll", "scroll_direction": "right", "scroll_amount": 2},
         {"action": "hscroll", "pixels": 2 * WHEEL_NOTCH_PIXELS}),
        ({"action": "wait", "duration": 2}, {"action": "wait", "time": 2}),
        ({"action": "screenshot"}, {"action": "wait", "time": 0}),
    ],
)  # fmt: skip
def test_anthropic_actions_become_valid_env_actions(tool_input, expected):
    arguments = from_anthropic(tool_input)
    assert arguments == expected and validate_gui(arguments) is None


@pytest.mark.parametrize(
    "tool_input, code",
    [
        ({"action": "cursor_position"}, ParseErrorCode.UNKNOWN_GUI_ACTION),
        ({"action": "left_mouse_down"}, ParseErrorCode.UNKNOWN_GUI_ACTION),
        ({"action": "right_click", "coordinate": [1, 1], "text": "ctrl"}, ParseErrorCode.INVALID_ARGUMENTS),
        ({"action": "key", "text": "a", "repeat": 3}, ParseErrorCode.INVALID_ARGUMENTS),
        (
            {"action": "scroll", "scroll_direction": "sideways", "scroll_amount": 1},
            ParseErrorCode.MISSING_ARGUMENTS,
        ),
        # a negative amount is not rewritten into the opposite direction: the parser refuses it
        (
            {"action": "scroll", "scroll_direction": "down", "scroll_amount": -3},
            ParseErrorCode.MISSING_ARGUMENTS,
        ),
    ],
)
def test_what_the_env_cannot_do_is_named_by_the_validator(tool_input, code):
    error = validate_gui(from_anthropic(tool_input))
    assert isinstance(error, ParseError) and error.code == code


def test_the_anthropic_refusal_names_the_schema_rule_only_where_it_is_broken():
    negative = {"action": "scroll", "scroll_direction": "down", "scroll_amount": -3}
    assert from_anthropic(negative) == negative  # the provider's arguments, left for the parser
    assert anthropic_refusal(negative) == (
        "scroll_amount is a number of wheel notches >= 0, got -3; "
        "give the direction with scroll_direction (up, down, left, right)."
    )
    assert anthropic_refusal({"action": "scroll", "scroll_direction": "down", "scroll_amount": 0}) is None
    assert anthropic_refusal({"action": "key", "scroll_amount": -3}) is None  # only scroll reads it


@pytest.mark.parametrize(
    "action, code",
    [
        ({"type": "click", "button": "back", "x": 1, "y": 1}, ParseErrorCode.UNKNOWN_GUI_ACTION),
        (
            {"type": "scroll", "x": 1, "y": 1, "scroll_x": 10, "scroll_y": 10},
            ParseErrorCode.INVALID_ARGUMENTS,
        ),
        ({"type": "drag", "path": [{"x": 1, "y": 1}]}, ParseErrorCode.MISSING_ARGUMENTS),
    ],
)
def test_openai_actions_without_an_env_counterpart_are_named(action, code):
    error = validate_gui(from_openai(action))
    assert isinstance(error, ParseError) and error.code == code


def test_openai_arrow_keys_and_click_modifiers_use_the_env_names():
    assert from_openai({"type": "keypress", "keys": ["ARROWUP", "Enter"]}) == {
        "action": "key",
        "keys": ["up", "enter"],
    }
    click = from_openai({"type": "click", "button": "left", "x": 2, "y": 3, "keys": ["SHIFT"]})
    assert click == {"action": "left_click", "coordinate": [2, 3], "keys": ["shift"]}
    assert (
        from_openai({"type": "scroll", "x": 0, "y": 0, "scroll_x": -40, "scroll_y": 0})["action"] == "hscroll"
    )


def test_a_wheel_notch_is_the_guests():
    xinput = pytest.importorskip("osworld_mcp_env.guest.xinput")  # needs python-xlib
    assert xinput.SCROLL_PIXELS_PER_NOTCH == WHEEL_NOTCH_PIXELS


def test_a_translated_action_parses_as_a_call():
    from hybrid_agent.parse import parse_response
    from hybrid_agent.policies.calls import call_block

    parsed = parse_response(call_block("computer_use", from_anthropic({"action": "key", "text": "Return"})))
    assert isinstance(parsed, ParsedAction) and parsed.call.arguments == {"action": "key", "keys": ["Return"]}


def test_issued_calls_replay_in_order_and_forget_the_oldest_episodes():
    from hybrid_agent.policies.base import PolicyRequest
    from hybrid_agent.policies.calls import IssuedCalls, call_block
    from hybrid_agent.trajectory import Call

    issued = IssuedCalls(max_episodes=2)
    wait = Call("computer_use", {"action": "wait", "time": 1})
    for step, items in enumerate(["first", "second"]):
        issued.add(PolicyRequest([], (), "a", 0, step), wait, items)
    turn = {"role": "assistant", "content": "Action: wait.\n" + call_block(wait.name, dict(wait.arguments))}
    later = PolicyRequest([], (), "a", 0, 2)
    assert issued.replay(later, [turn, {"role": "user", "content": []}, turn]) == ["first", None, "second"]
    assert issued.replay(PolicyRequest([], (), "a", 0, 0), [turn]) == [None]  # a new episode
    issued.add(PolicyRequest([], (), "b", 0, 0), wait, "b")
    issued.add(PolicyRequest([], (), "c", 0, 0), wait, "c")
    assert issued.replay(later, [turn]) == [None]  # "a" was the oldest of three

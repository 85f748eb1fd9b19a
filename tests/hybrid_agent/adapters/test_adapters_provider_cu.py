"""anthropic-cu and openai-cu: a provider's computer-tool vocabulary read into env calls in screen pixels."""

import json

import grpo_trainer  # noqa: F401  (registers the toy env)
import gymnasium as gym
import pytest
from hybrid_agent.adapters import AdapterOptions, get_adapter
from hybrid_agent.agent_loop import AgentConfig, AgentEpisode, AgentLoop
from hybrid_agent.coords import CoordinatePolicy
from hybrid_agent.messages import images_of
from hybrid_agent.parse import ParsedAction, ParseError, ParseErrorCode
from hybrid_agent.policies.base import Generation
from hybrid_agent.policies.calls import call_block
from hybrid_agent.toolset import ToolSpec
from hybrid_agent.trajectory import Call
from PIL import Image

SCREEN = (1920, 1080)
TOOLS = (ToolSpec("libreoffice_calc", "save", "Save the file."),)


def parse(adapter, name, arguments, tools=TOOLS):
    return get_adapter(adapter).parse(call_block(name, arguments), tools, SCREEN)


def test_anthropic_cu_maps_display_pixels_onto_the_screen():
    parsed = parse("anthropic-cu", "computer", {"action": "left_click", "coordinate": [683, 384]})
    assert isinstance(parsed, ParsedAction)
    assert parsed.call == Call("computer_use", {"action": "left_click", "coordinate": [960, 540]})
    assert parsed.as_written.arguments["coordinate"] == [683, 384]  # records keep the model's space


def test_anthropic_cu_shows_the_recommended_display():
    adapter = get_adapter("anthropic-cu")
    assert adapter.space(SCREEN) == (1366, 768)
    assert adapter.preprocess(Image.new("RGB", SCREEN)).size == (1366, 768)
    names = [f["function"]["name"] for f in adapter.functions(TOOLS, SCREEN)]
    assert names == ["computer", "terminate", "answer", "libreoffice_calc.save"]
    prompt = adapter.system_prompt(TOOLS, SCREEN, AgentConfig().context_config().prompt)
    assert "1366x768 screen" in prompt and "with computer;" in prompt and "call terminate" in prompt
    assert "computer_use" not in prompt


@pytest.mark.parametrize(
    "arguments, code",
    [
        ({"action": "left_click", "coordinate": [1366, 10]}, ParseErrorCode.OUT_OF_SPACE),
        ({"action": "cursor_position"}, ParseErrorCode.UNKNOWN_GUI_ACTION),
        ({"action": "mouse_move"}, ParseErrorCode.MISSING_ARGUMENTS),
    ],
)
def test_anthropic_cu_refuses_what_the_env_cannot_do_as_typed_errors(arguments, code):
    parsed = parse("anthropic-cu", "computer", arguments)
    assert isinstance(parsed, ParseError) and parsed.code == code


def test_anthropic_cu_scrolls_by_notches_in_the_named_direction():
    arguments = {"action": "scroll", "coordinate": [683, 384], "scroll_direction": "down", "scroll_amount": 3}
    parsed = parse("anthropic-cu", "computer", arguments)
    assert isinstance(parsed, ParsedAction)  # 3 notches of 50 px down, at the display's centre
    assert parsed.call == Call("computer_use", {"action": "scroll", "coordinate": [960, 540], "pixels": -150})
    zero = parse(
        "anthropic-cu", "computer", {"action": "scroll", "scroll_direction": "up", "scroll_amount": 0}
    )
    assert isinstance(zero, ParsedAction) and zero.call.arguments == {"action": "scroll", "pixels": 0}


@pytest.mark.parametrize("amount", [-3, -1, -0.5])
def test_anthropic_cu_refuses_a_negative_scroll_amount_instead_of_reversing_it(amount):
    """The schema counts notches from 0 and names the direction apart: -3 "down" is not 3 "up"."""
    arguments = {
        "action": "scroll",
        "coordinate": [683, 384],
        "scroll_direction": "down",
        "scroll_amount": amount,
    }
    reply = "<think>Scroll the list.</think>\n" + call_block("computer", arguments)
    parsed = get_adapter("anthropic-cu").parse(reply, TOOLS, SCREEN)
    assert isinstance(parsed, ParseError) and parsed.code == ParseErrorCode.INVALID_ARGUMENTS
    assert parsed.think == "Scroll the list."
    assert parsed.render() == (
        f"Error [invalid_arguments]: scroll_amount is a number of wheel notches >= 0, got {amount}; "
        "give the direction with scroll_direction (up, down, left, right)."
    )


def test_end_functions_and_mcp_calls_pass_through():
    end = parse("anthropic-cu", "terminate", {"status": "success"})
    assert end.call == Call("computer_use", {"action": "terminate", "status": "success"})
    assert parse("openai-cu", "libreoffice_calc.save", {}).call == Call("libreoffice_calc.save", {})


def test_openai_cu_reads_function_call_arguments_on_the_screen_as_it_is():
    arguments = json.dumps({"type": "click", "button": "right", "x": 1919, "y": 0})
    parsed = parse("openai-cu", "computer", arguments)
    assert parsed.call == Call("computer_use", {"action": "right_click", "coordinate": [1919, 0]})
    assert get_adapter("openai-cu").space(SCREEN) == SCREEN


def test_coordinates_set_by_the_run_turn_the_scaling_off():
    adapter = get_adapter("anthropic-cu", AdapterOptions(coordinates=CoordinatePolicy.ABSOLUTE_SCREEN))
    assert adapter.space(SCREEN) == SCREEN and adapter.preprocess(Image.new("RGB", SCREEN)).size == SCREEN


def test_in_the_agent_loop_the_env_gets_the_rewritten_call():
    env = gym.make("grpo_trainer:ToolOrGui-v0")
    try:
        obs, info = env.reset(seed=0)
        loop = AgentLoop(AgentConfig(adapter="anthropic-cu"))
        episode = AgentEpisode.start("toy", 0, obs, info)
        turn = loop.observe(episode)
        assert images_of(turn.request.messages)  # the 16x16 toy frame: no target, sent as it is
        reply = "I type it.\n" + call_block("computer", {"action": "type", "text": "5\n"})
        outcome = loop.step(env, episode, turn, Generation(text=reply))
        assert outcome.record["action"] == {
            "name": "computer_use",
            "arguments": {"action": "type", "text": "5\n"},
        }
        end = loop.step(
            env,
            episode,
            loop.observe(episode),
            Generation(text=call_block("terminate", {"status": "success"})),
        )
        assert end.ended and end.end["score"] == 1.0
    finally:
        env.close()

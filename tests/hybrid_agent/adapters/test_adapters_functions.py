"""Generic OpenAI function calling: relayed and wire-JSON tool calls; the schemas a real server gets."""

import json

import grpo_trainer  # noqa: F401  (registers the toy env)
import gymnasium as gym
import pytest
from hybrid_agent.adapters import get_adapter
from hybrid_agent.agent_loop import AgentConfig, AgentEpisode, AgentLoop
from hybrid_agent.parse import ParsedAction, ParseError, ParseErrorCode
from hybrid_agent.policies import PolicyOptions, make_policy
from hybrid_agent.toolset import ToolSpec
from script_server import ScriptServers

SCREEN = (1920, 1080)
SAVE = ToolSpec("libreoffice_calc", "save", "Save the file.")
CLICK_ARGS = json.dumps({"action": "left_click", "coordinate": [960, 540]})


def _parse(text: str):
    return get_adapter("openai-fc").parse(text, [SAVE], SCREEN)


def test_a_relayed_call_in_screen_pixels_goes_out_as_it_is():
    body = json.dumps({"name": "functions.computer_use", "arguments": CLICK_ARGS})
    parsed = _parse(f"Action: click.\n<tool_call>\n{body}\n</tool_call>")
    assert isinstance(parsed, ParsedAction)
    assert parsed.call.arguments == {"action": "left_click", "coordinate": [960, 540]}
    assert parsed.repairs == ("functions_prefix", "arguments_string")


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(
            {
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "computer_use", "arguments": CLICK_ARGS},
                    }
                ]
            }
        ),
        json.dumps([{"type": "function", "function": {"name": "computer_use", "arguments": CLICK_ARGS}}]),
        json.dumps([{"name": "computer_use", "arguments": json.loads(CLICK_ARGS)}]),
    ],
)
def test_wire_json_tool_calls_are_read(text):
    parsed = _parse(text)
    assert isinstance(parsed, ParsedAction)
    assert parsed.call.arguments == {"action": "left_click", "coordinate": [960, 540]}


def test_a_wire_mcp_call_is_qualified_and_checked():
    parsed = _parse(json.dumps([{"function": {"name": "save", "arguments": "{}"}}]))
    assert isinstance(parsed, ParsedAction) and parsed.call.name == "libreoffice_calc.save"


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("I would click Save.", ParseErrorCode.NO_TOOL_CALL),
        ("[]", ParseErrorCode.NO_TOOL_CALL),
        (
            json.dumps([{"name": "computer_use", "arguments": CLICK_ARGS}] * 2),
            ParseErrorCode.MULTIPLE_TOOL_CALLS,
        ),
        (
            json.dumps([{"function": {"name": "computer_use", "arguments": "{not json"}}]),
            ParseErrorCode.INVALID_JSON,
        ),
        (json.dumps(["computer_use"]), ParseErrorCode.INVALID_JSON),
        (json.dumps([{"function": {"arguments": "{}"}}]), ParseErrorCode.MISSING_NAME),
        (json.dumps([{"function": {"name": "calc.nope", "arguments": "{}"}}]), ParseErrorCode.UNKNOWN_TOOL),
        (
            json.dumps(
                [{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [1920, 5]}}]
            ),
            ParseErrorCode.OUT_OF_SPACE,  # screen pixels end at 1919
        ),
    ],
)
def test_malformed_function_calls_are_typed_errors(text, code):
    parsed = _parse(text)
    assert isinstance(parsed, ParseError) and parsed.code == code, parsed


def test_function_mode_sends_the_adapters_schema_at_the_screen_resolution(tmp_path):
    """A real HTTP server gets computer_use at the toy screen's 16x16, and its tool call executes."""
    pytest.importorskip("openai")
    arguments = json.dumps({"action": "left_click", "coordinate": [8, 8]})
    call = {"id": "c1", "type": "function", "function": {"name": "computer_use", "arguments": arguments}}
    message = {"role": "assistant", "content": "Action: click.", "tool_calls": [call]}
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
    body = {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]}
    env = gym.make("grpo_trainer:ToolOrGui-v0", max_steps=3)
    with ScriptServers(tmp_path) as servers:
        url, log = servers.start([{"json": body}])
        policy = make_policy(f"openai:{url}/v1#m", PolicyOptions(tool_format="functions", retries=0))
        try:
            loop = AgentLoop(AgentConfig(adapter="openai-fc"), policy)
            obs, info = env.reset(seed=0)
            episode = AgentEpisode.start("toy", 0, obs, info)
            turn = loop.observe(episode)
            [generation] = policy.generate([turn.request])
        finally:
            policy.close()
            env.close()
    [sent] = log.bodies
    gui = next(t for t in sent["tools"] if t["function"]["name"] == "computer_use")
    assert "resolution is 16x16" in gui["function"]["description"]
    decision = loop.decide(turn, generation)
    assert decision.action == {
        "name": "computer_use",
        "arguments": {"action": "left_click", "coordinate": [8, 8]},
    }

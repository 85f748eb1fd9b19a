"""HybridCUA's reply format: one function, raw-string parameters, several calls per turn."""

from __future__ import annotations

import grpo_trainer  # noqa: F401  (registers the toy env)
import gymnasium as gym
import pytest
from hybrid_agent.adapters import get_adapter
from hybrid_agent.agent_loop import AgentConfig, AgentEpisode, AgentLoop
from hybrid_agent.parse import ParsedAction, ParseError
from hybrid_agent.policies.base import Generation
from hybrid_agent.prompt import PromptConfig
from hybrid_agent.step_kind import StepKind
from hybrid_agent.toolset import ToolSpec
from hybrid_agent.trajectory import Call

SCREEN = (1920, 1080)
HEREDOC = "python3 <<'PY'\nimport pyautogui\npyautogui.click(500, 300)\nPY"


def call(action: str, name: str = "computer_use", **parameters: str) -> str:
    body = "".join(
        f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in {"action": action, **parameters}.items()
    )
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


def parse(text: str, adapter: str = "hybridcua"):
    return get_adapter(adapter).parse(text, (), SCREEN)


def test_a_bash_call_goes_to_the_bash_channel_on_the_999_grid_with_its_command_verbatim():
    parsed = parse(f"Action: Click the OK button.\n{call('bash', command=HEREDOC, timeout='20')}")
    assert isinstance(parsed, ParsedAction) and parsed.then == ()
    assert parsed.action_line == "Click the OK button."
    assert parsed.call == Call("bash", {"command": HEREDOC, "pyautogui_grid": 999, "timeout": 20.0})
    # As written: raw strings, the function's own name; a heredoc click is a GUI step.
    assert parsed.as_written == Call("computer_use", {"action": "bash", "command": HEREDOC, "timeout": "20"})
    shell = parse(call("bash", command="grep -c \"a<b\" f.txt && echo 'done' &"))
    assert shell.call.arguments["command"] == "grep -c \"a<b\" f.txt && echo 'done' &"  # nothing escaped


def test_control_actions_go_to_computer_use():
    assert parse(call("wait", time="2")).call == Call("computer_use", {"action": "wait", "time": 2.0})
    done = parse(call("terminate", status="success")).call
    assert done == Call("computer_use", {"action": "terminate", "status": "success"})
    assert parse(call("answer", text="42")).call == Call("computer_use", {"action": "answer", "text": "42"})


def test_every_tool_call_of_a_reply_is_kept_in_order():
    text = (
        "Action: Save, then finish.\n"
        + call("bash", command="ls ~")
        + "\n"
        + call("terminate", status="success")
    )
    parsed = parse(text)
    assert isinstance(parsed, ParsedAction)
    assert parsed.call.name == "bash" and [f.call.arguments["action"] for f in parsed.then] == ["terminate"]
    assert [f.as_written.arguments["action"] for f in parsed.then] == ["terminate"]


@pytest.mark.parametrize(
    ("text", "code", "message"),
    [
        ("Action: nothing.", "no_tool_call", "at least one <tool_call>"),
        (call("left_click"), "unknown_gui_action", "action must be one of bash, wait, terminate, answer"),
        (call("bash", name="cli", command="ls"), "unknown_tool", "The only function is 'computer_use'"),
        (call("bash"), "invalid_arguments", "missing ['command']"),
        (call("bash", command="ls", coordinate="[1, 2]"), "invalid_arguments", "unexpected ['coordinate']"),
        (call("bash", command="ls", timeout="soon"), "invalid_arguments", "timeout must be a number"),
        (call("terminate", status="done"), "invalid_arguments", "status must be success or failure"),
        (call("wait", time="-1"), "invalid_arguments", "time must be a number of seconds > 0"),
        ('<tool_call>{"name": "computer_use"}</tool_call>', "invalid_syntax", "<function=computer_use>"),
        (call("wait", time="1") + call("jump"), "unknown_gui_action", "Call 2 of 2: action must be"),
    ],
)
def test_a_bad_call_is_a_parse_error_that_says_what_is_expected(text, code, message):
    parsed = parse(text)
    assert isinstance(parsed, ParseError) and parsed.code == code and message in parsed.message


def test_the_cli_variant_names_its_function_cli():
    parsed = parse(call("bash", name="cli", command="ls"), "hybridcua-cli")
    assert isinstance(parsed, ParsedAction) and parsed.as_written.name == "cli"
    assert isinstance(parse(call("bash", command="ls"), "hybridcua-cli"), ParseError)


def test_the_prompt_states_the_function_the_grid_and_no_mcp_tool():
    tool = ToolSpec("libreoffice_calc.save", "Save.", {"type": "object", "properties": {}})
    adapter = get_adapter("hybridcua")
    prompt = adapter.system_prompt([tool], SCREEN, PromptConfig())
    assert '"name": "computer_use"' in prompt and "0-999 grid" in prompt and "python3 <<'PY'" in prompt
    assert (
        "libreoffice_calc" not in prompt
        and adapter.functions([tool], SCREEN)[0]["function"]["name"] == "computer_use"
    )
    assert adapter.stop == () and get_adapter("qwen3-vl").stop == ("</tool_call>",)


def test_a_turn_of_several_calls_is_one_record_and_one_step_with_each_call_an_env_step():
    env = gym.make("grpo_trainer:ToolOrGui-v0", max_steps=6)
    try:
        obs, info = env.reset(seed=0)
        episode = AgentEpisode.start("toy", 0, obs, info)
        loop = AgentLoop(AgentConfig(adapter="hybridcua"))
        reply = (
            "Action: Wait twice, then stop.\n"
            + call("wait", time="1")
            + call("wait", time="1")
            + call("terminate", status="failure")
        )
        turn = loop.observe(episode)
        assert turn.request.stop == ()
        outcome = loop.step(env, episode, turn, Generation(text=reply))
        assert outcome.ended and outcome.end["claimed_success"] is False
        assert env.unwrapped._t == 3  # three env steps, each counted against the budget
        assert episode.calls == 1 and len(episode.steps) == 1  # one model call, one history step
        assert [e.kind for e in episode.steps[0].executed] == [StepKind.CONTROL] * 3
        assert [t["action"]["arguments"]["action"] for t in outcome.record["then"]] == ["wait", "terminate"]
        assert all(t["executed"] for t in outcome.record["then"])
        # A call after the end is not executed.
        obs, info = env.reset(seed=0)
        episode = AgentEpisode.start("toy", 0, obs, info)
        stop_first = call("terminate", status="success") + call("wait", time="1")
        outcome = loop.step(env, episode, loop.observe(episode), Generation(text=stop_first))
        assert outcome.ended and env.unwrapped._t == 1 and "executed" not in outcome.record["then"][0]
    finally:
        env.close()

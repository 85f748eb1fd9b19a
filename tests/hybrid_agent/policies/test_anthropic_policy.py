"""The anthropic: policy against a real HTTP server process speaking the Messages API.

The server is ``openai_script_server.py`` serving ``/v1/messages`` (the Messages JSON is
scripted); the official ``anthropic`` client, its retries, headers and
``ANTHROPIC_BASE_URL`` handling run for real over loopback.
"""

import base64
import io
import re
import sys

import pytest
from hybrid_agent.errors import ConfigError
from hybrid_agent.messages import image_part, text_part
from hybrid_agent.parse import ParsedAction, ParseError, ParseErrorCode, parse_response
from hybrid_agent.policies import PolicyOptions, PolicyRequest, make_policy
from hybrid_agent.policies.base import GenerationErrorCode
from hybrid_agent.toolset import ToolSpec
from hybrid_agent.trajectory import Call
from PIL import Image
from script_server import ScriptServers

pytest.importorskip("anthropic")  # the hybrid-agent[anthropic] extra

PATH = "/v1/messages"
KEY = "sk-ant-right"
SCREEN = (1920, 1080)  # 16:9: shown to Claude at FWXGA 1366x768
TOOLS = (ToolSpec("libreoffice_calc", "save", "Save the file."),)
FAST_RETRY = {"retry-after-ms": "1"}


def frame():
    return Image.new("RGB", SCREEN, "white")


def messages(*history):
    return [
        {"role": "system", "content": "rules\n\n# Response format\n\nWrite <tool_call> JSON."},
        *history,
        {"role": "user", "content": [image_part(frame()), text_part("Instruction: save")]},
    ]


def reply(*blocks, stop="tool_use", usage=None):
    body = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
            "content": list(blocks), "stop_reason": stop, "stop_sequence": None,
            "usage": usage or {"input_tokens": 1200, "output_tokens": 30}}  # fmt: skip
    return {"json": body}


def tool_use(name, tool_input, use_id="toolu_1"):
    return {"type": "tool_use", "id": use_id, "name": name, "input": tool_input}


def text(value):
    return {"type": "text", "text": value}


def failure(status, message="scripted failure", headers=None):
    body = {"type": "error", "error": {"type": "api_error", "message": message}}
    return {"status": status, "json": body, "headers": headers or {}}


@pytest.fixture
def server(tmp_path, monkeypatch):
    """Starts a Messages API server and points the SDK at it through ANTHROPIC_BASE_URL."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with ScriptServers(tmp_path) as servers:

        def start(script, key=KEY):
            url, log = servers.start(script, PATH, key)
            monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
            return url, log

        yield start


def ask(options=None, request=None, policy=None):
    own = policy is None
    policy = policy or make_policy("anthropic:claude-test", options or PolicyOptions(retries=0))
    try:
        [gen] = policy.generate([request or PolicyRequest(messages(), TOOLS, "t", 0, 0)])
    finally:
        if own:
            policy.close()
    return gen


def sent_key(log, index=0):
    """The key as the SDK sent it (``x-api-key``, or ``Authorization: Bearer`` in recent clients)."""
    bearer = (log.header("authorization", index) or "").removeprefix("Bearer ")
    return log.header("x-api-key", index) or bearer


def decoded(block):
    return Image.open(io.BytesIO(base64.b64decode(block["source"]["data"])))


def test_a_click_on_the_scaled_display_becomes_a_left_click_in_screen_pixels(server):
    click = tool_use("computer", {"action": "left_click", "coordinate": [683, 384]})
    _, log = server([reply(text("I click Save."), click)])
    gen = ask()
    assert gen.error is None and gen.finish_reason == "tool_calls"
    parsed = parse_response(gen.text, TOOLS)
    assert isinstance(parsed, ParsedAction)
    assert parsed.call == Call("computer_use", {"action": "left_click", "coordinate": [960, 540]})
    assert (gen.input_tokens, gen.output_tokens, gen.tokens_estimated) == (1200, 30, False)
    [record] = log.records
    assert record["path"].split("?")[0] == PATH
    assert sent_key(log) == KEY and log.header("anthropic-version")
    assert "computer-use-2025-01-24" in log.header("anthropic-beta")
    body = record["body"]
    computer, *functions = body["tools"]
    assert computer == {"type": "computer_20250124", "name": "computer",
                        "display_width_px": 1366, "display_height_px": 768}  # fmt: skip
    assert [f["name"] for f in functions] == ["terminate", "answer", "libreoffice_calc__save"]
    assert functions[2]["input_schema"]["type"] == "object"
    assert "<tool_call>" not in body["system"] and body["system"].startswith("rules")
    image = next(b for b in body["messages"][0]["content"] if b["type"] == "image")
    assert decoded(image).size == (1366, 768)
    assert body["model"] == "claude-test" and body["max_tokens"] == 8192 and "temperature" not in body


def test_a_wrong_key_is_refused_as_an_auth_error_and_not_retried(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-wrong")
    _, log = server([reply(text("never sent"))])
    gen = ask(PolicyOptions(retries=3))
    assert gen.text == "" and gen.error_code == GenerationErrorCode.AUTH
    assert "ANTHROPIC_API_KEY is set" in gen.error and "HTTP 401" in gen.error
    assert len(log.records) == 1 and sent_key(log) == "sk-ant-wrong"


def test_the_key_comes_from_the_variable_named_by_api_key_env(server, monkeypatch):
    monkeypatch.setenv("MY_CLAUDE_KEY", "sk-ant-other")
    _, log = server([reply(text("ok"), stop="end_turn")], key="sk-ant-other")
    assert ask(PolicyOptions(retries=0, api_key_env="MY_CLAUDE_KEY")).error is None
    assert sent_key(log) == "sk-ant-other"


def test_a_429_with_retry_after_is_retried_then_succeeds(server):
    _, log = server(
        [failure(429, "rate limited", headers={"Retry-After": "1"}), reply(text("done"), stop="end_turn")]
    )
    gen = ask(PolicyOptions(retries=2))
    assert gen.error is None and gen.text == "done" and gen.finish_reason == "stop"
    assert len(log.records) == 2 and log.bodies[0] == log.bodies[1]


def test_overload_is_retried_then_returned_as_an_error_value(server):
    _, log = server([failure(529, "overloaded", headers=FAST_RETRY)] * 3)
    gen = ask(PolicyOptions(retries=2))
    assert gen.error_code == GenerationErrorCode.HTTP and "HTTP 529" in gen.error and len(log.records) == 3


def test_a_prompt_over_the_context_is_a_context_length_error(server):
    _, log = server([failure(400, "prompt is too long: 210000 tokens > 200000 maximum")])
    assert ask(PolicyOptions(retries=3)).error_code == GenerationErrorCode.CONTEXT_LENGTH
    assert len(log.records) == 1


def test_a_malformed_body_is_a_malformed_response(server):
    server([{"raw": '{"content": [ oops'}])
    assert ask().error_code == GenerationErrorCode.MALFORMED_RESPONSE
    server([{"json": {"type": "message", "note": "no content here"}}])
    gen = ask()
    assert gen.error_code == GenerationErrorCode.MALFORMED_RESPONSE and "no content here" in gen.error


def test_mcp_tools_and_the_end_actions_come_back_under_real_names(server):
    server(
        [reply(tool_use("libreoffice_calc__save", {})), reply(tool_use("terminate", {"status": "success"}))]
    )
    policy = make_policy("anthropic:claude-test", PolicyOptions(retries=0))
    try:
        save, end = (ask(policy=policy) for _ in range(2))
    finally:
        policy.close()
    assert parse_response(save.text, TOOLS).call == Call("libreoffice_calc.save", {})
    assert parse_response(end.text, TOOLS).call == Call(
        "computer_use", {"action": "terminate", "status": "success"}
    )


def test_an_action_the_env_lacks_is_a_typed_parse_error_not_a_call(server):
    server([reply(tool_use("computer", {"action": "cursor_position"}))])
    parsed = parse_response(ask().text, TOOLS)
    assert isinstance(parsed, ParseError) and parsed.code == ParseErrorCode.UNKNOWN_GUI_ACTION


def test_a_past_step_is_replayed_as_tool_use_and_its_tool_result(server):
    """The assistant turn goes back as Claude wrote it (id, display coordinates) and the
    next user turn opens with the matching tool_result holding the screenshot after it."""
    click = tool_use("computer", {"action": "left_click", "coordinate": [683, 384]}, "toolu_7")
    _, log = server([reply(text("Clicking."), click), reply(text("done"), stop="end_turn")])
    policy = make_policy("anthropic:claude-test", PolicyOptions(retries=0))
    try:
        first = ask(policy=policy)
        call = parse_response(first.text, TOOLS).call
        past = [
            {"role": "user", "content": [image_part(frame()), text_part("Instruction: save")]},
            {"role": "assistant", "content": f"Action: click.\n<tool_call>\n{call.to_json()}\n</tool_call>"},
        ]
        history = messages(*past)
        history[-1]["content"].insert(0, text_part("Tool result: clicked"))
        ask(policy=policy, request=PolicyRequest(history, TOOLS, "t", 0, 1))
    finally:
        policy.close()
    sent = log.bodies[1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[1]["content"] == [text("Clicking."), click]
    result, instruction = sent[2]["content"]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_7"
    assert result["content"][0] == text("Tool result: clicked")
    assert decoded(result["content"][1]).size == (1366, 768) and instruction == text("Instruction: save")


def test_a_step_of_another_episode_is_sent_as_text(server):
    _, log = server([reply(text("ok"), stop="end_turn")])
    call = Call("computer_use", {"action": "wait", "time": 1})
    turn = f"Action: wait.\n<tool_call>\n{call.to_json()}\n</tool_call>"
    past = [{"role": "user", "content": [image_part(frame())]}, {"role": "assistant", "content": turn}]
    assert ask(request=PolicyRequest(messages(*past), TOOLS, "t", 0, 1)).error is None
    sent = log.bodies[0]["messages"]
    assert sent[1]["content"][0]["type"] == "text" and all(
        b["type"] != "tool_result" for b in sent[2]["content"]
    )


def test_cache_reads_count_as_input_and_thinking_is_reasoning(server):
    usage = {"input_tokens": 100, "output_tokens": 5, "cache_read_input_tokens": 900,
             "cache_creation_input_tokens": 50}  # fmt: skip
    thinking = {"type": "thinking", "thinking": "Save is top left.", "signature": "sig"}
    server([reply(thinking, text("ok"), stop="max_tokens", usage=usage)])
    gen = ask()
    assert (gen.input_tokens, gen.cached_input_tokens) == (1050, 900)
    assert gen.reasoning == "Save is top left." and gen.cut_off


def test_the_tool_version_picks_its_beta_header(server):
    _, log = server([reply(text("ok"), stop="end_turn")])
    assert ask(PolicyOptions(retries=0, extra={"computer_tool": "computer_20251124"})).error is None
    assert log.bodies[0]["tools"][0]["type"] == "computer_20251124"
    assert "computer-use-2025-11-24" in log.header("anthropic-beta")
    with pytest.raises(ConfigError, match="computer_20250124"):
        make_policy("anthropic:m", PolicyOptions(extra={"computer_tool": "computer_2099"}))


def test_a_missing_anthropic_package_says_which_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "anthropic", None)  # makes `import anthropic` fail
    with pytest.raises(ConfigError, match=re.escape("pip install 'hybrid-agent[anthropic]'")):
        make_policy("anthropic:claude-test")
    with pytest.raises(ConfigError, match="anthropic:MODEL"):
        make_policy("anthropic:")


# --- the policy in the evaluation loop ----------------------------------------------------


def test_an_eval_runs_claude_tool_use_on_the_env_and_replays_it(server, tmp_path):
    """tool_use blocks drive the env through the agent loop: an MCP tool under its real name,
    then terminate; the second request carries the first tool_use and its tool_result."""
    import grpo_trainer  # noqa: F401  (registers the toy env: the desktop env's interface)
    import gymnasium as gym
    from hybrid_agent.recorder import iter_episodes
    from hybrid_agent.runner import RunConfig, Runner
    from hybrid_agent.suite import SuiteTask

    write = tool_use("libreoffice_calc__set_cell_value", {"cell": "A1", "value": "5"}, "toolu_w")
    end = tool_use("terminate", {"status": "success"}, "toolu_t")
    _, log = server([reply(text("I write 5 to A1."), write), reply(text("Done."), end)])
    policy = make_policy("anthropic:claude-test", PolicyOptions(retries=0))
    try:
        Runner(RunConfig(policy="anthropic:claude-test"), policy, tmp_path,
               lambda: gym.make("grpo_trainer:ToolOrGui-v0"),
               progress=False).evaluate([SuiteTask("toy", "toy", "toy")])  # fmt: skip
    finally:
        policy.close()
    (record,) = list(iter_episodes(tmp_path))
    assert [s["action"]["name"] for s in record.steps] == ["libreoffice_calc.set_cell_value", "computer_use"]
    assert record.end["score"] == 1.0 and record.end["claimed_success"] is True
    first, second = log.bodies
    assert "libreoffice_calc__set_cell_value" in [t["name"] for t in first["tools"]]
    replayed, result = second["messages"][1], second["messages"][2]["content"][0]
    assert replayed["content"] == [text("I write 5 to A1."), write]
    assert result["tool_use_id"] == "toolu_w" and "Wrote '5' to A1." in result["content"][0]["text"]

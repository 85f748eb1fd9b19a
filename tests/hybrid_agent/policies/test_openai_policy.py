"""The openai: policy against a real HTTP server process speaking the chat-completions protocol.

``transformers serve`` needs torch (not in the workspace), so the server is a small
stdlib process answering from a fixed script; the official ``openai`` client, its
retries and the name mapping run for real over loopback.
"""

import json
import re
import sys

import pytest
from hybrid_agent.errors import ConfigError
from hybrid_agent.messages import image_part, text_part
from hybrid_agent.parse import ParsedAction, parse_response
from hybrid_agent.policies import PolicyOptions, PolicyRequest, make_policy
from hybrid_agent.policies.base import GenerationErrorCode
from hybrid_agent.policies.openai import NO_RESULT, PLACEHOLDER_KEY, NameMap
from hybrid_agent.toolset import ToolSpec
from PIL import Image
from script_server import ScriptServers

pytest.importorskip("openai")  # the hybrid-agent[openai] extra

TOOLS = (ToolSpec("libreoffice_calc", "save", "Save the file."),)
MESSAGES = [
    {"role": "system", "content": "rules"},
    {"role": "user", "content": [image_part(Image.new("RGB", (8, 8))), text_part("Instruction: save")]},
]
PAST_CALL = '{"name": "libreoffice_calc.save", "arguments": {}}'
WAIT_CALL = '{"name": "computer_use", "arguments": {"action": "wait", "time": 1}}'
HISTORY = [
    {"role": "system", "content": "rules"},
    {"role": "user", "content": [image_part(Image.new("RGB", (8, 8)))]},
    {"role": "assistant", "content": f"Action: save.\n<tool_call>\n{PAST_CALL}\n</tool_call>"},
    {"role": "user", "content": [text_part("Tool result: saved"), image_part(Image.new("RGB", (8, 8)))]},
    {"role": "assistant", "content": f"Action: wait.\n<tool_call>\n{WAIT_CALL}\n</tool_call>"},
    {"role": "user", "content": [image_part(Image.new("RGB", (8, 8))), text_part("Instruction: save")]},
]
# Retries stay fast: the scripted failures say "retry after 1 ms" (the client honours it).
FAST_RETRY = {"retry-after-ms": "1"}


def completion(content=None, tool_calls=None, finish="stop", usage=True, **message_extra):
    message = {"role": "assistant", "content": content, **message_extra}
    if tool_calls:
        message["tool_calls"] = tool_calls
    body = {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}]}  # fmt: skip
    if usage:
        body["usage"] = {"prompt_tokens": 321, "completion_tokens": 12, "total_tokens": 333}
    return {"json": body}


def failure(status, message="scripted failure", code=None, headers=None):
    error = {"message": message, "type": "error", "code": code}
    return {"status": status, "json": {"error": error}, "headers": headers or {}}


@pytest.fixture
def server(tmp_path):
    with ScriptServers(tmp_path) as servers:
        yield servers.start


@pytest.fixture(autouse=True)
def no_api_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def ask(url, options=None, messages=MESSAGES, tools=TOOLS):
    policy = make_policy(f"openai:{url}#m", options or PolicyOptions(retries=0))
    try:
        [gen] = policy.generate([PolicyRequest(messages, tools)])
    finally:
        policy.close()
    return gen


def test_cached_prompt_tokens_the_server_reports_are_kept_apart(server):
    """usage.prompt_tokens_details.cached_tokens is priced lower; a server without it says nothing."""
    cached = completion("Action: wait.")
    cached["json"]["usage"]["prompt_tokens_details"] = {"cached_tokens": 256}
    url, _ = server([cached, completion("Action: wait.")])
    policy = make_policy(f"openai:{url}#m", PolicyOptions(retries=0))
    try:
        [first] = policy.generate([PolicyRequest(MESSAGES, TOOLS)])
        [second] = policy.generate([PolicyRequest(MESSAGES, TOOLS)])
    finally:
        policy.close()
    assert (first.input_tokens, first.cached_input_tokens) == (321, 256)
    assert (second.input_tokens, second.cached_input_tokens) == (321, None)


def test_text_mode_restores_the_stop_string_and_reports_usage(server):
    url, log = server([completion('Action: save.\n<tool_call>\n{"name": "libreoffice_calc.save"}\n')])
    policy = make_policy(f"openai:{url}#qwen3-vl", PolicyOptions(retries=0))
    [gen] = policy.generate([PolicyRequest(MESSAGES, TOOLS)])
    assert gen.error is None and gen.text.endswith("</tool_call>")
    assert (gen.input_tokens, gen.output_tokens, gen.tokens_estimated) == (321, 12, False)
    assert gen.finish_reason == "stop" and gen.reasoning is None and not gen.cut_off
    parsed = parse_response(gen.text, TOOLS)
    assert isinstance(parsed, ParsedAction) and parsed.repairs == ("flat_shape",)
    [sent] = log.bodies
    assert log.records[0]["path"] == "/v1/chat/completions"
    assert sent["model"] == "qwen3-vl" and sent["stop"] == ["</tool_call>"] and sent["temperature"] == 0
    assert sent["max_tokens"] == 8192 and "tools" not in sent and "top_p" not in sent and "seed" not in sent
    assert sent["messages"][1]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")


def test_sampling_flags_and_extra_body_are_sent_when_set(server):
    url, log = server([completion("x")])
    extra = {"chat_template_kwargs": {"enable_thinking": False}, "mm_processor_kwargs": {"fps": 1}}
    sampling = {"temperature": 0.7, "max_tokens": 64, "top_p": 0.9, "seed": 7, "repetition_penalty": 1.05}
    options = PolicyOptions(retries=0, extra_body=extra, **sampling)
    assert ask(url, options).error is None
    [sent] = log.bodies
    assert (sent["temperature"], sent["max_tokens"], sent["top_p"], sent["seed"]) == (0.7, 64, 0.9, 7)
    assert sent["repetition_penalty"] == 1.05 and sent["chat_template_kwargs"] == {"enable_thinking": False}
    assert sent["mm_processor_kwargs"] == {"fps": 1}


def test_the_key_from_openai_api_key_is_sent_as_a_bearer_token(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-default")
    url, log = server([completion("x")])
    assert ask(url).error is None
    assert log.header("Authorization") == "Bearer sk-default"


def test_the_key_comes_from_the_variable_named_by_api_key_env(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    monkeypatch.setenv("MY_VLLM_KEY", "sk-custom")
    url, log = server([completion("x")])
    assert ask(url, PolicyOptions(retries=0, api_key_env="MY_VLLM_KEY")).error is None
    assert log.header("Authorization") == "Bearer sk-custom"


def test_an_unset_key_variable_sends_a_placeholder(server):
    url, log = server([completion("x")])
    assert ask(url).error is None
    assert log.header("Authorization") == f"Bearer {PLACEHOLDER_KEY}"


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_is_an_auth_error_naming_the_variable_and_not_retried(server, status):
    url, log = server([failure(status, "Invalid API key", headers=FAST_RETRY), completion("x")])
    gen = ask(url, PolicyOptions(retries=3, api_key_env="MY_VLLM_KEY"))
    assert gen.text == "" and gen.error_code == GenerationErrorCode.AUTH
    assert "MY_VLLM_KEY is not set" in gen.error and f"HTTP {status}" in gen.error
    assert len(log.records) == 1


def test_a_429_with_retry_after_is_retried_then_succeeds(server):
    url, log = server([failure(429, "slow down", headers={"Retry-After": "1"}), completion("done")])
    gen = ask(url, PolicyOptions(retries=2))
    assert gen.error is None and gen.text == "done"
    assert len(log.records) == 2 and log.bodies[0] == log.bodies[1]


def test_server_errors_are_retried_then_returned_as_an_error_value(server):
    url, log = server([failure(503, headers=FAST_RETRY), failure(500, headers=FAST_RETRY), completion("ok")])
    assert ask(url, PolicyOptions(retries=2)).error is None and len(log.records) == 3
    url, log = server([failure(503, "overloaded", headers=FAST_RETRY)] * 3)
    gen = ask(url, PolicyOptions(retries=2))
    assert gen.text == "" and gen.error_code == GenerationErrorCode.HTTP and "HTTP 503" in gen.error
    assert len(log.records) == 3
    url, log = server([failure(400, "bad field"), completion("x")])
    gen = ask(url, PolicyOptions(retries=3))
    assert gen.error_code == GenerationErrorCode.HTTP and "HTTP 400" in gen.error and len(log.records) == 1


@pytest.mark.parametrize(
    "message, code",
    [
        ("This model's maximum context length is 32768 tokens. However, you requested 40000 tokens.", None),
        ("Input too long.", "context_length_exceeded"),
        ("prompt is too long: 210000 tokens > 200000 maximum", None),
        ("The decoder prompt (length 40000) is longer than the maximum model length of 32768.", None),
    ],
)
def test_a_prompt_over_the_context_is_a_context_length_error_not_retried(server, message, code):
    url, log = server([failure(400, message, code=code), completion("x")])
    gen = ask(url, PolicyOptions(retries=3))
    assert gen.error_code == GenerationErrorCode.CONTEXT_LENGTH and len(log.records) == 1


def test_a_torn_body_is_a_transport_error(server):
    url, log = server([{**completion("x"), "torn": True}] * 2)
    gen = ask(url, PolicyOptions(retries=1))
    assert gen.text == "" and gen.error_code == GenerationErrorCode.TRANSPORT and len(log.records) == 2


def test_a_body_that_is_not_json_is_a_malformed_response(server):
    url, _ = server([{"raw": '{"choices": [ oops'}])
    assert ask(url).error_code == GenerationErrorCode.MALFORMED_RESPONSE
    url, _ = server([{"json": {"object": "error", "message": "no choices here"}}])
    gen = ask(url)
    assert gen.error_code == GenerationErrorCode.MALFORMED_RESPONSE and "no choices here" in gen.error


def test_a_server_that_never_answers_times_out_as_a_transport_error(server):
    url, log = server([{"hang": True}])
    gen = ask(url, PolicyOptions(retries=0, timeout_s=0.5))
    assert gen.error_code == GenerationErrorCode.TRANSPORT and "Timeout" in gen.error
    assert len(log.records) == 1


def test_an_unreachable_server_is_an_error_not_a_crash():
    gen = ask("http://127.0.0.1:9", PolicyOptions(retries=1, timeout_s=5))
    assert gen.error and gen.error_code == GenerationErrorCode.TRANSPORT and "APIConnectionError" in gen.error


def test_finish_reason_length_is_carried_as_cut_off(server):
    url, _ = server([completion("Action: I will", finish="length")])
    gen = ask(url)
    assert gen.finish_reason == "length" and gen.cut_off and gen.text == "Action: I will"


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_apart_from_the_content_is_carried(server, field):
    url, _ = server([completion("<tool_call>{}</tool_call>", **{field: "The file is open."})])
    gen = ask(url)
    assert gen.reasoning == "The file is open." and gen.text == "<tool_call>{}</tool_call>"


def test_missing_usage_marks_the_tokens_as_estimated(server):
    url, _ = server([completion("x", usage=False)])
    gen = ask(url)
    assert gen.tokens_estimated and (gen.input_tokens, gen.output_tokens) == (None, None)


def test_function_mode_maps_names_both_ways(server):
    call = {"id": "c1", "type": "function",
            "function": {"name": "libreoffice_calc__save", "arguments": "{}"}}  # fmt: skip
    url, log = server([completion("Action: save.", [call], finish="tool_calls")])
    policy = make_policy(f"openai:{url}/v1#m", PolicyOptions(tool_format="functions", retries=0))
    assert policy.tools_in_request
    [gen] = policy.generate([PolicyRequest(MESSAGES, TOOLS)])
    assert gen.finish_reason == "tool_calls"
    parsed = parse_response(gen.text, TOOLS)
    assert isinstance(parsed, ParsedAction) and parsed.call.name == "libreoffice_calc.save"
    [sent] = log.bodies
    assert [t["function"]["name"] for t in sent["tools"]] == ["computer_use", "libreoffice_calc__save"]
    assert sent["tool_choice"] == "auto" and "stop" not in sent


def test_function_mode_replays_past_calls_under_wire_names(server):
    url, log = server([completion("x")])
    assert ask(url, PolicyOptions(tool_format="functions", retries=0), messages=HISTORY).error is None
    [sent] = log.bodies
    roles = [m["role"] for m in sent["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "user", "assistant", "tool", "user"]
    save, result, wait, no_result = (sent["messages"][i] for i in (2, 3, 5, 6))
    assert save["content"] == "Action: save." and "<tool_call>" not in json.dumps(sent["messages"])
    [save_call] = save["tool_calls"]
    assert save_call["function"] == {"name": "libreoffice_calc__save", "arguments": "{}"}
    assert result == {"role": "tool", "tool_call_id": save_call["id"], "content": "Tool result: saved"}
    assert [p["type"] for p in sent["messages"][4]["content"]] == ["image_url"]  # the result moved out
    assert json.loads(wait["tool_calls"][0]["function"]["arguments"]) == {"action": "wait", "time": 1}
    assert no_result["content"] == NO_RESULT and no_result["tool_call_id"] == wait["tool_calls"][0]["id"]


def test_function_mode_maps_a_call_left_in_the_content_back(server):
    text = 'Action: save.\n<tool_call>\n{"name": "libreoffice_calc__save", "arguments": {}}\n</tool_call>'
    url, _ = server([completion(text)])
    gen = ask(url, PolicyOptions(tool_format="functions", retries=0))
    parsed = parse_response(gen.text, TOOLS)
    assert isinstance(parsed, ParsedAction) and parsed.call.name == "libreoffice_calc.save"
    assert parsed.repairs == ()


def test_a_missing_openai_package_says_which_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "openai", None)  # makes `import openai` fail
    with pytest.raises(ConfigError, match=re.escape("pip install 'hybrid-agent[openai]'")):
        make_policy("openai:http://127.0.0.1:9#m")


def test_extra_body_must_be_an_object():
    with pytest.raises(ConfigError, match=r"extra_body must be a JSON object, got \[1\]"):
        make_policy("openai:http://127.0.0.1:9#m", PolicyOptions(extra_body=[1]))


def test_name_map_is_reversible_even_on_collisions():
    names = ["a.b", "a__b", "x.y-z", "computer_use"]
    mapping = NameMap(names)
    wires = [mapping.wire(n) for n in names]
    assert len(set(wires)) == 4 and all(w.replace("_", "").replace("-", "").isalnum() for w in wires)
    assert [mapping.original(w) for w in wires] == names
    assert NameMap([*names, "a.b"]).to_wire == mapping.to_wire  # a repeated name keeps its wire name


# --- the policy in the evaluation loop ----------------------------------------------------


def test_an_eval_authenticates_and_a_cut_off_claim_executes_nothing(server, tmp_path, monkeypatch):
    """OPENAI_API_KEY authenticates; a reply cut off at the length limit with a draft
    terminate(success) runs nothing, the episode goes on, and only the executed claim counts."""
    import grpo_trainer  # noqa: F401  (registers the toy env: the desktop env's interface, instant steps)
    import gymnasium as gym
    from grpo_trainer.model.toy_menu import GUI_TYPE, TERMINATE
    from hybrid_agent import metrics
    from hybrid_agent.recorder import iter_episodes
    from hybrid_agent.runner import RunConfig, Runner
    from hybrid_agent.suite import SuiteTask

    monkeypatch.setenv("OPENAI_API_KEY", "sk-eval")
    draft = "<think>A1 might hold 5 already, so I could just say\n" + TERMINATE
    url, log = server(
        [
            completion(draft, finish="length"),
            completion(GUI_TYPE.removesuffix("</tool_call>")),
            completion(TERMINATE.removesuffix("</tool_call>")),
        ]
    )
    policy = make_policy(f"openai:{url}#m", PolicyOptions(retries=0))
    try:
        Runner(RunConfig(policy="openai:m"), policy, tmp_path, lambda: gym.make("grpo_trainer:ToolOrGui-v0"),
               progress=False).evaluate([SuiteTask("toy", "toy", "toy")])  # fmt: skip
    finally:
        policy.close()
    assert [log.header("authorization", i) for i in range(3)] == ["Bearer sk-eval"] * 3
    (record,) = list(iter_episodes(tmp_path))
    assert [s["parse"].get("code") for s in record.steps] == ["truncated", None, None]
    assert record.steps[0]["model_output"] == draft and "action" not in record.steps[0]
    assert record.end["score"] == 1.0 and record.end["claimed_success"] is True and record.end["steps"] == 3
    stats = [metrics.episode_stats(record)]
    assert metrics.malformed_rate(stats) == pytest.approx(1 / 3)
    assert metrics.false_success_all(stats) == 0.0


def test_an_eval_with_a_rejected_key_ends_as_an_auth_error_not_a_score(server, tmp_path, monkeypatch):
    import grpo_trainer  # noqa: F401
    import gymnasium as gym
    from hybrid_agent.recorder import iter_episodes
    from hybrid_agent.runner import RunConfig, Runner
    from hybrid_agent.suite import SuiteTask

    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    url, log = server([failure(401, "invalid api key")])
    policy = make_policy(f"openai:{url}#m", PolicyOptions(retries=3))
    try:
        result = Runner(RunConfig(policy="openai:m"), policy, tmp_path,
                        lambda: gym.make("grpo_trainer:ToolOrGui-v0"),
                        progress=False).evaluate([SuiteTask("toy", "toy", "toy")])  # fmt: skip
    finally:
        policy.close()
    assert result.errors == 1 and len(log.records) == 1  # a 401 is not retried
    (record,) = list(iter_episodes(tmp_path))
    assert record.end["score"] is None
    assert (record.end["error"]["type"], record.end["error"]["code"]) == ("policy_error", "auth")

"""The openai-cua: policy against a real HTTP server process speaking the Responses API.

The server is ``openai_script_server.py`` serving ``/v1/responses`` (the Responses JSON
is scripted); the official ``openai`` client, its retries and ``OPENAI_BASE_URL``
handling run for real over loopback.
"""

import base64
import io

import pytest
from hybrid_agent.messages import image_part, text_part
from hybrid_agent.parse import ParsedAction, parse_response
from hybrid_agent.policies import PolicyOptions, PolicyRequest, make_policy
from hybrid_agent.policies.base import GenerationErrorCode
from hybrid_agent.toolset import ToolSpec
from hybrid_agent.trajectory import Call
from PIL import Image
from script_server import ScriptServers

pytest.importorskip("openai")  # the hybrid-agent[openai] extra

PATH = "/v1/responses"
KEY = "sk-right"
SCREEN = (1280, 720)
TOOLS = (ToolSpec("libreoffice_calc", "save", "Save the file."),)
CHECK = {"id": "cu_sc_1", "code": "malicious_instructions", "message": "The page asks for a password."}


def messages(*history):
    return [
        {"role": "system", "content": "rules\n\n# Response format\n\nWrite <tool_call> JSON."},
        *history,
        {"role": "user", "content": [image_part(Image.new("RGB", SCREEN)), text_part("Instruction: save")]},
    ]


def response(*output, usage=True, status="completed", incomplete=None):
    body = {"id": "resp_1", "object": "response", "created_at": 0, "model": "computer-use-preview",
            "status": status, "output": list(output), "parallel_tool_calls": False, "tool_choice": "auto",
            "tools": [], "incomplete_details": incomplete}  # fmt: skip
    if usage:
        body["usage"] = {"input_tokens": 900, "output_tokens": 40, "total_tokens": 940,
                         "input_tokens_details": {"cached_tokens": 512},
                         "output_tokens_details": {"reasoning_tokens": 10}}  # fmt: skip
    return {"json": body}


def computer_call(action, call_id="call_1", checks=()):
    return {"type": "computer_call", "id": f"cu_{call_id}", "call_id": call_id, "action": action,
            "pending_safety_checks": list(checks), "status": "completed"}  # fmt: skip


def reasoning(summary):
    return {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": summary}]}


def message(value):
    return {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": value, "annotations": []}]}  # fmt: skip


def failure(status, text="scripted failure", headers=None):
    return {"status": status, "json": {"error": {"message": text, "type": "error"}}, "headers": headers or {}}


@pytest.fixture
def server(tmp_path, monkeypatch):
    """Starts a Responses API server and points the SDK at it through OPENAI_BASE_URL."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with ScriptServers(tmp_path) as servers:

        def start(script, key=KEY):
            url, log = servers.start(script, PATH, key)
            monkeypatch.setenv("OPENAI_BASE_URL", url + "/v1")
            return url, log

        yield start


def ask(options=None, request=None, policy=None):
    own = policy is None
    policy = policy or make_policy("openai-cua:computer-use-preview", options or PolicyOptions(retries=0))
    try:
        [gen] = policy.generate([request or PolicyRequest(messages(), TOOLS, "t", 0, 0)])
    finally:
        if own:
            policy.close()
    return gen


def test_a_click_becomes_a_left_click_and_the_request_is_stateless_replay(server):
    click = computer_call({"type": "click", "button": "left", "x": 40, "y": 12})
    _, log = server([response(reasoning("Save is at the top."), click)])
    gen = ask()
    assert gen.error is None and gen.finish_reason == "tool_calls"
    parsed = parse_response(gen.text, TOOLS)
    assert isinstance(parsed, ParsedAction)
    assert parsed.call == Call("computer_use", {"action": "left_click", "coordinate": [40, 12]})
    assert gen.reasoning == "Save is at the top."
    assert (gen.input_tokens, gen.cached_input_tokens, gen.output_tokens) == (900, 512, 40)
    [record] = log.records
    assert record["path"] == PATH and log.header("authorization") == f"Bearer {KEY}"
    body = record["body"]
    computer, *functions = body["tools"]
    assert computer == {"type": "computer_use_preview", "display_width": 1280, "display_height": 720,
                        "environment": "linux"}  # fmt: skip
    assert [f["name"] for f in functions] == ["terminate", "answer", "libreoffice_calc__save"]
    assert body["store"] is False and body["truncation"] == "auto" and "previous_response_id" not in body
    assert body["include"] == ["reasoning.encrypted_content"] and body["max_output_tokens"] == 8192
    assert "<tool_call>" not in body["instructions"]
    [user] = body["input"]
    assert [p["type"] for p in user["content"]] == ["input_image", "input_text"]


@pytest.mark.parametrize(
    "action, expected",
    [
        ({"type": "double_click", "x": 5, "y": 6}, {"action": "double_click", "coordinate": [5, 6]}),
        ({"type": "keypress", "keys": ["CTRL", "S"]}, {"action": "key", "keys": ["ctrl", "s"]}),
        ({"type": "scroll", "x": 9, "y": 9, "scroll_x": 0, "scroll_y": 300},
         {"action": "scroll", "coordinate": [9, 9], "pixels": -300}),
        ({"type": "type", "text": "5\n"}, {"action": "type", "text": "5\n"}),
        ({"type": "drag", "path": [{"x": 1, "y": 2}, {"x": 3, "y": 3}, {"x": 7, "y": 8}]},
         {"action": "left_click_drag", "start_coordinate": [1, 2], "coordinate": [7, 8]}),
        ({"type": "screenshot"}, {"action": "wait", "time": 0}),
    ],
)  # fmt: skip
def test_each_action_reaches_the_env_vocabulary(server, action, expected):
    server([response(computer_call(action))])
    parsed = parse_response(ask().text, TOOLS)
    assert isinstance(parsed, ParsedAction) and parsed.call == Call("computer_use", expected)


def test_a_pending_safety_check_ends_the_step_as_an_error_unless_acknowledged(server):
    click = computer_call({"type": "click", "button": "left", "x": 1, "y": 1}, checks=[CHECK])
    server([response(click)])
    gen = ask()
    assert gen.text == "" and gen.error_code == GenerationErrorCode.SAFETY_CHECK
    assert "malicious_instructions" in gen.error and "--ack-safety-checks" in gen.error


def test_an_acknowledged_check_runs_and_its_output_acknowledges_it(server):
    """With ack on, the call executes; the next request replays the call with its checks and
    sends the screenshot after it as computer_call_output with acknowledged_safety_checks."""
    click = computer_call({"type": "click", "button": "left", "x": 1, "y": 1}, "call_9", [CHECK])
    _, log = server([response(message("Clicking OK."), click), response(message("done"))])
    policy = make_policy(
        "openai-cua:computer-use-preview", PolicyOptions(retries=0, extra={"ack_safety_checks": True})
    )
    try:
        call = parse_response(ask(policy=policy).text, TOOLS).call
        turn = f"Action: click.\n<tool_call>\n{call.to_json()}\n</tool_call>"
        past = [
            {"role": "user", "content": [image_part(Image.new("RGB", SCREEN))]},
            {"role": "assistant", "content": turn},
        ]
        ask(policy=policy, request=PolicyRequest(messages(*past), TOOLS, "t", 0, 1))
    finally:
        policy.close()
    sent = log.bodies[1]["input"]
    assert [i.get("type", i.get("role")) for i in sent] == [
        "user",
        "message",
        "computer_call",
        "computer_call_output",
        "user",
    ]
    assert sent[2]["call_id"] == "call_9" and sent[2]["pending_safety_checks"] == [CHECK]
    output = sent[3]
    assert output["call_id"] == "call_9" and output["acknowledged_safety_checks"] == [CHECK]
    assert output["output"]["type"] == "computer_screenshot"
    data = output["output"]["image_url"].removeprefix("data:image/png;base64,")
    assert Image.open(io.BytesIO(base64.b64decode(data))).size == SCREEN


def test_function_calls_come_back_under_real_names(server):
    save = {"type": "function_call", "id": "fc_1", "call_id": "call_2", "name": "libreoffice_calc__save",
            "arguments": "{}", "status": "completed"}  # fmt: skip
    end = {**save, "name": "terminate", "arguments": '{"status": "failure"}'}
    server([response(save), response(end)])
    policy = make_policy("openai-cua:computer-use-preview", PolicyOptions(retries=0))
    try:
        first, second = (ask(policy=policy) for _ in range(2))
    finally:
        policy.close()
    assert parse_response(first.text, TOOLS).call == Call("libreoffice_calc.save", {})
    assert parse_response(second.text, TOOLS).call == Call(
        "computer_use", {"action": "terminate", "status": "failure"}
    )


def test_a_wrong_key_is_refused_as_an_auth_error_and_not_retried(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    _, log = server([response(message("never"))])
    gen = ask(PolicyOptions(retries=3))
    assert gen.error_code == GenerationErrorCode.AUTH and "OPENAI_API_KEY is set" in gen.error
    assert len(log.records) == 1


def test_a_429_with_retry_after_is_retried_then_succeeds(server):
    _, log = server([failure(429, "slow down", headers={"Retry-After": "1"}), response(message("done"))])
    gen = ask(PolicyOptions(retries=2))
    assert gen.error is None and gen.text == "done" and gen.finish_reason == "stop"
    assert len(log.records) == 2 and log.bodies[0] == log.bodies[1]


def test_a_malformed_body_is_a_malformed_response(server):
    server([{"raw": '{"output": [ oops'}])
    assert ask().error_code == GenerationErrorCode.MALFORMED_RESPONSE
    server([{"json": {"object": "response", "note": "no output here"}}])
    gen = ask()
    assert gen.error_code == GenerationErrorCode.MALFORMED_RESPONSE and "not a documented answer" in gen.error


def test_an_answer_cut_at_the_output_budget_is_cut_off(server):
    server([response(message("I will"), status="incomplete", incomplete={"reason": "max_output_tokens"})])
    gen = ask()
    assert gen.cut_off and gen.text == "I will"

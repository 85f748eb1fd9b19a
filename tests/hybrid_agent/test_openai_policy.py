"""The openai: policy against a real HTTP server process speaking the chat-completions protocol.

``transformers serve`` needs torch (not in the workspace), so the server is a small
stdlib process answering from a fixed script; the client, its retries and the name
mapping run for real over loopback.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hybrid_agent.messages import image_part, text_part
from hybrid_agent.parse import ParsedAction, parse_response
from hybrid_agent.policies import PolicyOptions, PolicyRequest, make_policy
from hybrid_agent.policies.openai import NameMap
from hybrid_agent.toolset import ToolSpec
from PIL import Image

SERVER = Path(__file__).with_name("openai_script_server.py")
TOOLS = (ToolSpec("libreoffice_calc", "save", "Save the file."),)
MESSAGES = [
    {"role": "system", "content": "rules"},
    {"role": "user", "content": [image_part(Image.new("RGB", (8, 8))), text_part("Instruction: save")]},
]


def completion(content=None, tool_calls=None, finish="stop"):
    message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "json": {
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 321, "completion_tokens": 12},
        }
    }


@pytest.fixture
def server(tmp_path):
    procs = []

    def start(script):
        script_file = tmp_path / f"script{len(procs)}.json"
        script_file.write_text(json.dumps(script))
        port_file = tmp_path / f"port{len(procs)}"
        proc = subprocess.Popen([sys.executable, str(SERVER), str(port_file), str(script_file)])
        procs.append(proc)
        deadline = time.monotonic() + 30
        while not port_file.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.01)
        return f"http://127.0.0.1:{port_file.read_text()}", Path(str(port_file) + ".requests")

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


def test_text_mode_restores_the_stop_string_and_reports_usage(server):
    url, requests = server([completion('Action: save.\n<tool_call>\n{"name": "libreoffice_calc.save"}\n')])
    policy = make_policy(f"openai:{url}#qwen3-vl", PolicyOptions(retries=0))
    [gen] = policy.generate([PolicyRequest(MESSAGES, TOOLS)])
    assert gen.error is None and gen.text.endswith("</tool_call>")
    assert (gen.input_tokens, gen.output_tokens) == (321, 12)
    parsed = parse_response(gen.text, TOOLS)
    assert isinstance(parsed, ParsedAction) and parsed.repairs == ("flat_shape",)
    sent = json.loads(requests.read_text().splitlines()[0])
    assert sent["model"] == "qwen3-vl" and sent["stop"] == ["</tool_call>"] and sent["temperature"] == 0
    assert sent["messages"][1]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")


def test_function_mode_maps_names_both_ways(server):
    call = {"id": "c1", "type": "function",
            "function": {"name": "libreoffice_calc__save", "arguments": "{}"}}  # fmt: skip
    url, requests = server([completion("Action: save.", [call], finish="tool_calls")])
    policy = make_policy(f"openai:{url}/v1#m", PolicyOptions(tool_format="functions", retries=0))
    assert policy.tools_in_request
    [gen] = policy.generate([PolicyRequest(MESSAGES, TOOLS)])
    parsed = parse_response(gen.text, TOOLS)
    assert isinstance(parsed, ParsedAction) and parsed.call.name == "libreoffice_calc.save"
    names = [t["function"]["name"] for t in json.loads(requests.read_text())["tools"]]
    assert names == ["computer_use", "libreoffice_calc__save"]
    assert "stop" not in json.loads(requests.read_text())


def test_name_map_is_reversible_even_on_collisions():
    names = ["a.b", "a__b", "x.y-z", "computer_use"]
    mapping = NameMap(names)
    wires = [mapping.to_wire[n] for n in names]
    assert len(set(wires)) == 4 and all(w.replace("_", "").replace("-", "").isalnum() for w in wires)
    assert [mapping.original(w) for w in wires] == names


def test_server_errors_are_retried_then_returned_as_an_error_value(server):
    url, requests = server([{"status": 503}, {"status": 500}, completion("<tool_call>{}</tool_call>")])
    policy = make_policy(f"openai:{url}#m", PolicyOptions(retries=2, backoff_s=0.01))
    [gen] = policy.generate([PolicyRequest(MESSAGES)])
    assert gen.error is None and len(requests.read_text().splitlines()) == 3
    url, _ = server([{"status": 503}] * 3)
    failing = make_policy(f"openai:{url}#m", PolicyOptions(retries=1, backoff_s=0.01))
    [gen] = failing.generate([PolicyRequest(MESSAGES)])
    assert gen.text == "" and "HTTP 503" in gen.error
    url, requests = server([{"status": 400}, completion("x")])
    [gen] = make_policy(f"openai:{url}#m", PolicyOptions(retries=3, backoff_s=0.01)).generate(
        [PolicyRequest(MESSAGES)]
    )
    assert "HTTP 400" in gen.error and len(requests.read_text().splitlines()) == 1  # a 400 is not retried


def test_an_unreachable_server_is_an_error_not_a_crash():
    policy = make_policy("openai:http://127.0.0.1:9#m", PolicyOptions(retries=1, backoff_s=0.01, timeout_s=5))
    [gen] = policy.generate([PolicyRequest(MESSAGES)])
    assert gen.error and "URLError" in gen.error

"""Hostile messages on every transport: each gets a JSON-RPC error reply, and the next call works.

Raw bytes go to the real servers (``osworld-mcp-server os`` over stdio, streamable
HTTP over TCP, and ``serve_all`` on a Unix socket, the env's path), as a hostile or
broken client would send them; no SDK client sits in between to tidy them up.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from osworld_mcp_env.mcp_host.limits import ToolLimits
from polling import wait_until

pytestmark = [pytest.mark.timeout(180)]

EXE = str(Path(sys.executable).with_name("osworld-mcp-server"))
MAX_RESULT = ToolLimits().max_result_bytes  # the served hosts run with the default limits


def request(request_id: int, name: str, arguments: dict[str, Any]) -> bytes:
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return json.dumps(body).encode()


def nested(depth: int) -> bytes:
    inner = b"[" * depth + b"]" * depth
    return (
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"os.calculator","arguments":{"expression":'
        + inner
        + b"}}}"
    )


# (raw message, JSON-RPC error codes the reply may carry). Shape errors: the SDK's HTTP
# transport says -32602, ours on stdio -32600; both are errors the client can read.
MALFORMED: dict[str, tuple[bytes, set[int]]] = {
    "nested_200": (nested(200), {PARSE_ERROR}),
    "nested_1000": (nested(1000), {PARSE_ERROR}),
    "not_utf8": (
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"os.calculator","arguments":{"expression":"\xff\xfe"}}}',
        {PARSE_ERROR},
    ),
    "lone_surrogate": (
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"os.calculator","arguments":{"expression":"\\ud800"}}}',
        {PARSE_ERROR},
    ),
    "not_json": (b"hello", {PARSE_ERROR}),
    "truncated_json": (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{', {PARSE_ERROR}),
    "batch": (b"[1, 2]", {INVALID_REQUEST, INVALID_PARAMS}),
    "wrong_id_type": (b'{"jsonrpc":"2.0","id":{"a":1},"method":5}', {INVALID_REQUEST, INVALID_PARAMS}),
    "five_megabytes": (request(7, "os.calculator", {"expression": "1" * 5_000_000}), {INVALID_REQUEST}),
}


def assert_error_reply(reply: dict[str, Any], codes: set[int]) -> None:
    assert reply.get("jsonrpc") == "2.0" and "result" not in reply, reply
    assert reply["error"]["code"] in codes, reply
    assert len(json.dumps(reply)) < 4096, "the error must not echo the message"


def assert_calculates(reply: dict[str, Any], value: int) -> None:
    assert reply["result"]["isError"] is False, reply
    assert reply["result"]["structuredContent"]["data"] == value


# ----------------------------------------------------------------------------- stdio


class StdioPeer:
    """``osworld-mcp-server os --stdio`` driven line by line."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([EXE, "os", "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.buffer = b""
        self.send(json.dumps(_initialize(0)).encode())
        assert "result" in self.receive()
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def send(self, message: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(message + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 60.0) -> dict[str, Any]:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.proc.stdout], [], [], max(left, 0))
            if not ready:
                raise TimeoutError(f"no reply in {timeout} s (server alive: {self.proc.poll() is None})")
            chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
            if not chunk:
                raise EOFError("the server closed stdout")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def call(self, message: bytes) -> dict[str, Any]:
        self.send(message)
        return self.receive()

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def stdio() -> Iterator[StdioPeer]:
    peer = StdioPeer()
    try:
        yield peer
    finally:
        peer.close()


@pytest.mark.parametrize("case", list(MALFORMED))
def test_stdio_answers_a_malformed_line_with_an_error_and_keeps_serving(stdio: StdioPeer, case: str) -> None:
    message, codes = MALFORMED[case]
    reply = stdio.call(message)
    assert_error_reply(reply, codes)
    if reply["id"] is not None:
        assert reply["id"] == 7, "a readable id is echoed so the waiting client gets its answer"
    assert_calculates(stdio.call(request(8, "os.calculator", {"expression": "6*7"})), 42)


def test_stdio_names_the_request_id_when_the_message_opening_has_it(stdio: StdioPeer) -> None:
    for case in ("nested_1000", "not_utf8", "lone_surrogate", "five_megabytes"):
        assert stdio.call(MALFORMED[case][0])["id"] == 7, case
    assert stdio.call(b"hello")["id"] is None


def test_stdio_notification_gets_no_reply_but_the_next_request_does(stdio: StdioPeer) -> None:
    """A message without an id is a notification: JSON-RPC forbids answering it."""
    stdio.send(b'{"jsonrpc":"2.0","method":"tools/call"}')
    assert_calculates(stdio.call(request(9, "os.calculator", {"expression": "2+2"})), 4)


def test_stdio_tool_level_attacks_are_tool_errors(stdio: StdioPeer) -> None:
    for expression in ("-" * 100_000 + "1", "((10**1000)**1000)**1000", "9**9**9**9"):
        reply = stdio.call(request(10, "os.calculator", {"expression": expression}))
        assert reply["result"]["isError"] is True
        assert (
            "limit" in reply["result"]["content"][0]["text"]
            or "digits" in reply["result"]["content"][0]["text"]
        )
    assert_calculates(stdio.call(request(11, "os.calculator", {"expression": "1+1"})), 2)


# ----------------------------------------------------------------------------- HTTP (TCP and Unix socket)


class HttpPeer:
    """One MCP session over streamable HTTP, posting raw bodies."""

    def __init__(self, client: httpx2.Client, url: str) -> None:
        self.client, self.url = client, url
        self.headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        reply = client.post(url, headers=self.headers, content=json.dumps(_initialize(0)))
        assert reply.status_code == 200, reply.text
        self.headers |= {
            "mcp-session-id": reply.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-06-18",
        }
        client.post(
            url, headers=self.headers, content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
        )

    def post(self, message: bytes) -> httpx2.Response:
        return self.client.post(self.url, headers=self.headers, content=message)

    def call(self, message: bytes) -> dict[str, Any]:
        reply = self.post(message)
        return json.loads(_body_json(reply))


def _body_json(reply: httpx2.Response) -> bytes:
    """The JSON of a JSON or an SSE response (the TCP server streams one event per call)."""
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in reply.text.splitlines() if line.startswith("data:")]
        return [d for d in data if d][-1].encode()
    return reply.content


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module", params=["unix_socket", "tcp"])
def http(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpPeer]:
    if request.param == "unix_socket":
        path = tmp_path_factory.mktemp("wire") / "mcp.sock"
        proc = subprocess.Popen([EXE, "os", "--uds", str(path)])
        client = httpx2.Client(transport=httpx2.HTTPTransport(uds=str(path)), timeout=60)
        url = "http://127.0.0.1:8000/os/mcp"
        ready = path.exists
    else:
        port = _free_port()
        proc = subprocess.Popen([EXE, "os", "--http", str(port)])
        client = httpx2.Client(timeout=60)
        url = f"http://127.0.0.1:{port}/mcp"

        def ready() -> bool:
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0

    try:
        wait_until(ready, 60, f"the {request.param} server")
        yield HttpPeer(client, url)
    finally:
        client.close()
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("case", list(MALFORMED))
def test_http_answers_a_malformed_body_with_an_error_and_keeps_serving(http: HttpPeer, case: str) -> None:
    message, codes = MALFORMED[case]
    reply = http.post(message)
    assert reply.status_code in {400, 413}, reply.text[:200]
    assert_error_reply(json.loads(reply.content), codes)
    assert_calculates(http.call(request(8, "os.calculator", {"expression": "6*7"})), 42)


def test_http_tool_results_and_refusals_are_bounded(http: HttpPeer, tmp_path: Path) -> None:
    # Arguments over the argument limit but under the message limit: a tool error, not an echo.
    reply = http.post(request(12, "os.calculator", {"expression": "1" * 500_000}))
    assert len(reply.content) < 4096
    result = json.loads(_body_json(reply))["result"]
    assert result["isError"] is True and "262144" in result["content"][0]["text"]
    # A tool that echoes a 200 KB argument (its message quotes the keyword): cut, with a marker.
    reply = http.post(request(13, "os.search_files", {"keyword": "k" * 200_000, "root_dir": str(tmp_path)}))
    assert len(reply.content) <= MAX_RESULT + 1024
    result = json.loads(_body_json(reply))["result"]
    assert result["isError"] is False and "[truncated" in result["structuredContent"]["message"]
    assert result["structuredContent"]["effect"]["kind"] == "read_only", "the result keeps its schema"
    assert_calculates(http.call(request(14, "os.calculator", {"expression": "3*3"})), 9)


def _initialize(request_id: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "hostile", "version": "1"},
        },
    }

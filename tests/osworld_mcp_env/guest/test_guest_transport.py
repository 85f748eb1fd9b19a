"""The guest server's request parsing refuses absurd requests with a 4xx; no handler sees them.

Runs the real server class on a Unix socket in the test process (no desktop): the
refusals happen before any route touches the display.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
from pathlib import Path

import pytest
from osworld_mcp_env.backends.guest_client import GuestClient
from osworld_mcp_env.deadline import deadline
from osworld_mcp_env.errors import GuestTimeout, GuestUnreachable
from osworld_mcp_env.guest import routes_hybrid, routes_osworld  # noqa: F401 - registers the routes
from osworld_mcp_env.guest.transport import GuestHTTPServer

TOKEN = "t0ken"


@pytest.fixture
def server(tmp_path: Path):
    path = str(tmp_path / "guest.sock")
    # No Guest behind it: every request below must be answered before a route needs one.
    httpd = GuestHTTPServer(path, None, TOKEN, family=socketserver.socket.AF_UNIX)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield path
    httpd.shutdown()
    httpd.server_close()


def raw(path: str, request: bytes) -> tuple[int, bytes]:
    """Sends bytes as they are (http.client would fix the Content-Length) and reads the answer."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(10)
        sock.connect(path)
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def post(path: str, body: bytes, *, length: str | None = None) -> tuple[int, dict]:
    headers = (
        f"POST /settle HTTP/1.1\r\nHost: guest\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Content-Type: application/json\r\nConnection: close\r\n"
        f"Content-Length: {length or len(body)}\r\n\r\n"
    )
    status, reply = raw(path, headers.encode() + body)
    return status, json.loads(reply)


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"[" * 100_000 + b"]" * 100_000, 400),  # deeper than the recursion limit
        (b'{"a": ' + b"[" * 2_000 + b"]" * 2_000 + b"}", 400),
        (b'{"max_ms": NaN}', 400),
        (b'{"max_ms": Infinity}', 400),
        (b'{"max_ms": 1' + b"0" * 5000 + b"}", 400),  # past the integer digit limit
        (b"\xff\xfe{}", 400),  # not UTF-8
        (b"{not json", 400),
        (b"[1, 2]", 400),
        (b" " * (16 * 1024 * 1024 + 1), 413),
    ],
)
def test_absurd_json_bodies_are_refused(server, body, status):
    code, reply = post(server, body)
    assert code == status, reply
    assert reply["status"] == "error"


@pytest.mark.parametrize(("length", "status"), [("-1", 400), ("abc", 400), ("²", 400), ("9" * 40, 413)])
def test_a_bad_content_length_is_refused_and_ends_the_connection(server, length, status):
    code, reply = post(server, b"{}", length=length)
    assert code == status, reply


def test_a_wrong_token_leaves_the_body_unread_and_closes(server):
    body = b"GET /health HTTP/1.1\r\nHost: g\r\nContent-Length: 5\r\n\r\nGET /"
    status, _ = raw(server, body)  # the unread body must not be served as a second request
    assert status == 401


def test_the_client_types_its_failures(server, tmp_path):
    client = GuestClient(unix_socket=server, token=TOKEN)
    assert client.request("GET", "/health")[0] == 200
    missing = GuestClient(unix_socket=str(tmp_path / "nowhere.sock"), token=TOKEN)
    with pytest.raises(GuestUnreachable):
        missing.request("GET", "/health")
    with deadline(0.0), pytest.raises(GuestTimeout, match="nothing was sent"):
        client.request("GET", "/health")

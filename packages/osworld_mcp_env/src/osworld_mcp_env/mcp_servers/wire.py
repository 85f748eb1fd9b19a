r"""A JSON-RPC error reply for every malformed message, on stdio and on streamable HTTP.

The SDK's stdio transport reads a line of any length into memory and drops a line
it cannot parse without replying, so a client that sent JSON nested 200 deep,
bytes that are not UTF-8 or ``"\ud800"`` waits forever for its answer. Its HTTP
transport answers those, but refuses an oversized body with a plain-text 413.

- :func:`check_line` judges one message before the SDK sees it: larger than
  ``max_message_bytes`` or not a JSON-RPC message (``-32600 Invalid Request``), not
  UTF-8 or not JSON, nesting too deep and lone surrogates included
  (``-32700 Parse error``). The reply carries the request's ``id`` when the
  message's opening names it (``{"jsonrpc": "2.0", "id": 7, ...``), so a waiting
  client gets its answer; otherwise ``null``, as JSON-RPC asks.
- :func:`serve_stdio` serves one server over stdin/stdout with that check.
- :class:`BodyLimit` answers an oversized HTTP body with a JSON-RPC error.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import AsyncIterator
from typing import Any, BinaryIO

import anyio
import anyio.to_thread
import pydantic
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp_types import INVALID_REQUEST, PARSE_ERROR, jsonrpc_message_adapter
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from osworld_mcp_env.mcp_host.limits import ToolLimits

# An "id" among the leading scalar members of the top-level object.
_LEADING_ID = re.compile(
    rb'^\s*\{(?:\s*"[^"\\]{0,64}"\s*:\s*(?:"[^"\\]{0,256}"|-?\d{1,20}|true|false|null)\s*,)*?'
    rb'\s*"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,256}")\s*[,}]'
)


def error_reply(message: bytes, code: int, text: str) -> dict[str, Any]:
    """The JSON-RPC error response to ``message``, with its id when it can be read."""
    found = _LEADING_ID.match(message[:2048])
    request_id = json.loads(found.group(1)) if found else None
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}}


def check_line(message: bytes, max_bytes: int) -> dict[str, Any] | None:
    """None when ``message`` is one JSON-RPC message the SDK accepts, else the error reply to send."""
    if len(message) > max_bytes:
        return error_reply(
            message, INVALID_REQUEST, f"Invalid Request: the message exceeds the {max_bytes}-byte limit"
        )
    try:
        text = message.decode("utf-8")
    except UnicodeDecodeError as exc:
        return error_reply(message, PARSE_ERROR, f"Parse error: not UTF-8 ({exc.reason} at byte {exc.start})")
    try:
        jsonrpc_message_adapter.validate_json(text, by_name=False)
    except pydantic.ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        if first["type"] == "json_invalid":
            return error_reply(message, PARSE_ERROR, f"Parse error: {first['msg']}")
        where = ".".join(str(p) for p in first["loc"][1:]) or "message"
        return error_reply(
            message, INVALID_REQUEST, f"Invalid Request: not a JSON-RPC 2.0 message ({where}: {first['msg']})"
        )
    return None


# ----------------------------------------------------------------------------- stdio


async def serve_stdio(server: MCPServer[Any], limits: ToolLimits) -> None:
    """Serves ``server`` over this process's stdin and stdout until stdin closes.

    fds 0 and 1 are pointed at ``/dev/null`` and stderr while serving, so a program a
    tool starts (or a stray print) can neither read nor write the wire.
    """
    wire_in, wire_out = _claim_stdio()
    out = _LineWriter(wire_out)

    async def checked_lines() -> AsyncIterator[str]:
        async for line in _read_lines(wire_in, limits.max_message_bytes):
            message = line.rstrip(b"\r\n")
            if not message.strip():
                continue
            reply = check_line(message, limits.max_message_bytes)
            if reply is None:
                yield message.decode("utf-8")
            else:
                await out.write(json.dumps(reply) + "\n")

    async with stdio_server(stdin=checked_lines(), stdout=out) as (read, write):  # type: ignore[arg-type]
        # MCPServer serves only the SDK's own stdio streams; its low-level server takes any.
        lowlevel = server._lowlevel_server
        await lowlevel.run(read, write, lowlevel.create_initialization_options())


def _claim_stdio() -> tuple[BinaryIO, BinaryIO]:
    wire_in = os.fdopen(os.dup(0), "rb")
    wire_out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return wire_in, wire_out


async def _read_lines(wire: BinaryIO, max_bytes: int) -> AsyncIterator[bytes]:
    """Lines of ``wire``; one longer than ``max_bytes`` comes as its first ``max_bytes + 1`` bytes.

    The rest of a long line is read in bounded chunks and dropped, so memory stays
    bounded whatever the client sends.
    """
    while True:
        line = await anyio.to_thread.run_sync(wire.readline, max_bytes + 1)
        if not line:
            return
        if len(line) > max_bytes and not line.endswith(b"\n"):
            rest = line
            while rest and not rest.endswith(b"\n"):
                rest = await anyio.to_thread.run_sync(wire.readline, 1 << 16)
        yield line


class _LineWriter:
    """The SDK's stdout writer and ours on one pipe: each line is written whole."""

    def __init__(self, wire: BinaryIO) -> None:
        self._wire = wire
        self._lock = threading.Lock()

    async def write(self, text: str) -> None:
        # "replace": a lone surrogate in a reply costs one character, not the session.
        data = text.encode("utf-8", "replace")
        await anyio.to_thread.run_sync(self._write, data)

    async def flush(self) -> None:
        """Each write is already flushed."""

    def _write(self, data: bytes) -> None:
        with self._lock:
            self._wire.write(data)
            self._wire.flush()


# ----------------------------------------------------------------------------- HTTP


class BodyLimit:
    """ASGI wrapper: a request body over ``max_bytes`` gets a JSON-RPC error (HTTP 413), unread."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Buffers the body up to the limit, then hands it on or refuses it."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = bytearray()
        first: list[Message] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                first.append(message)
                break
            body += message.get("body", b"")
            if len(body) > self.max_bytes:
                await self._refuse(bytes(body), send)
                return
            if not message.get("more_body", False):
                break
        replay: list[Message] = [{"type": "http.request", "body": bytes(body), "more_body": False}, *first]

        async def receive_again() -> Message:
            return replay.pop(0) if replay else await receive()

        await self.app(scope, receive_again, send)

    async def _refuse(self, body: bytes, send: Send) -> None:
        reply = error_reply(
            body, INVALID_REQUEST, f"Invalid Request: the message exceeds the {self.max_bytes}-byte limit"
        )
        payload = json.dumps(reply).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

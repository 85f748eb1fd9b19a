"""Host-side client of the in-desktop MCP servers (``serve_all`` on a Unix socket).

A synchronous facade over the SDK's async ``ClientSession`` (streamable HTTP over the
socket), running its own event loop in a daemon thread, so the gym env can call::

    client = MCPToolClient("/run/desktop-3/mcp.sock")
    tools = client.list_tools("libreoffice_calc")          # {name: mcp Tool}
    r = client.call("libreoffice_calc.set_cell_value", {"cell": "A1", "value": "1"}, timeout_s=10)
    r.exec_ok, r.effect, r.error_code                          # True, {...}, None

Arguments are validated against the tool's JSON schema before anything is sent; an
unknown tool, invalid arguments, a timeout or a tool failure come back as a
:class:`ToolCallResult` with ``error_code`` set, never as an exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import httpx2
import jsonschema
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Tool

from osworld_mcp_env.errors import DesktopError

# The socket ignores host and port, but the server's DNS-rebinding check wants a loopback host with a port.
_BASE_URL = "http://127.0.0.1:8000"


class ToolErrorCode(StrEnum):
    """Why a tool call did not execute."""

    UNKNOWN_TOOL = "unknown_tool"
    INVALID_ARGUMENTS = "invalid_arguments"
    TIMEOUT = "timeout"
    TOOL_ERROR = "tool_error"


@dataclass(frozen=True)
class ToolCallResult:
    """The typed outcome of one tool call.

    Attributes:
        name: The full tool name (``namespace.method``).
        exec_ok: Whether the tool executed (MCP ``isError`` false).
        effect: The ``effect`` object of the structured result (``kind``, ``count``, ...), or None.
        text: The text the model reads.
        structured: The full ``structuredContent``, or None.
        latency_ms: Wall time of the call as seen by the client (0 when nothing was sent).
        error_code: Set when ``exec_ok`` is False.
        dispatched: Whether anything was sent to the desktop.
    """

    name: str
    exec_ok: bool
    effect: dict[str, Any] | None
    text: str
    structured: dict[str, Any] | None = None
    latency_ms: float = 0.0
    error_code: ToolErrorCode | None = None
    dispatched: bool = True
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def changed(self) -> bool | None:
        """True/False when the tool could observe its effect, None otherwise."""
        return None if self.effect is None else self.effect.get("changed")


def _failure(
    name: str, code: ToolErrorCode, text: str, *, dispatched: bool, latency_ms: float = 0.0, **details: Any
) -> ToolCallResult:
    return ToolCallResult(
        name=name,
        exec_ok=False,
        effect=None,
        text=f"Error [{code}]: {text}",
        latency_ms=latency_ms,
        error_code=code,
        dispatched=dispatched,
        details=details,
    )


class MCPToolClient:
    """Synchronous client of every namespace served on one Unix socket.

    Args:
        socket_path: The socket ``serve_all`` listens on.
        connect_timeout_s: Deadline for connecting to one namespace (and listing its tools).
    """

    def __init__(self, socket_path: str | Path, *, connect_timeout_s: float = 10.0) -> None:
        self.socket_path = str(socket_path)
        self.connect_timeout_s = connect_timeout_s
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-client", daemon=True)
        self._thread.start()
        self._holders: list[asyncio.Future[None]] = []
        self._closing = asyncio.Event()
        self._sessions: dict[str, ClientSession] = {}
        self._tools: dict[str, dict[str, Tool]] = {}
        self._validators: dict[str, jsonschema.protocols.Validator] = {}
        self._closed = False

    # ------------------------------------------------------------------ plumbing

    def _run(self, coro: Any, timeout: float) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout)
        except FutureTimeout:
            future.cancel()
            raise

    async def _session(self, namespace: str) -> ClientSession:
        if namespace in self._sessions:
            return self._sessions[namespace]
        # The transport's task groups must be entered and exited by one task: a holder
        # task per namespace owns them until close().
        ready: asyncio.Future[ClientSession] = self._loop.create_future()
        self._holders.append(asyncio.ensure_future(self._hold(namespace, ready)))
        session = await ready
        self._sessions[namespace] = session
        return session

    async def _hold(self, namespace: str, ready: asyncio.Future[ClientSession]) -> None:
        try:
            async with (
                httpx2.AsyncClient(
                    transport=httpx2.AsyncHTTPTransport(uds=self.socket_path), timeout=None
                ) as http,
                streamable_http_client(f"{_BASE_URL}/{namespace}/mcp", http_client=http) as streams,
                ClientSession(streams[0], streams[1]) as session,
            ):
                await session.initialize()
                ready.set_result(session)
                await self._closing.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else DesktopError(repr(exc)))
            if not isinstance(exc, Exception):
                raise

    async def _list(self, namespace: str) -> dict[str, Tool]:
        session = await self._session(namespace)
        result = await session.list_tools()
        tools = {tool.name: tool for tool in result.tools}
        self._tools[namespace] = tools
        return tools

    # ------------------------------------------------------------------ API

    def list_tools(self, namespace: str, *, refresh: bool = False) -> dict[str, Tool]:
        """Returns ``{full tool name: Tool}`` of a namespace (cached after the first call).

        Raises:
            DesktopError: If the namespace's server cannot be reached in time.
        """
        if namespace in self._tools and not refresh:
            return self._tools[namespace]
        try:
            return self._run(self._list(namespace), self.connect_timeout_s)
        except FutureTimeout as exc:
            raise DesktopError(
                f"MCP namespace {namespace!r} did not answer in {self.connect_timeout_s} s"
            ) from exc
        except Exception as exc:
            raise DesktopError(f"MCP namespace {namespace!r} at {self.socket_path}: {exc!r}") from exc

    def call(
        self, name: str, arguments: dict[str, Any] | None = None, *, timeout_s: float = 30.0
    ) -> ToolCallResult:
        """Calls ``namespace.method`` with arguments validated against its schema first.

        Never raises for a bad call: returns a result with ``error_code`` instead.
        """
        arguments = {} if arguments is None else arguments
        namespace = name.split(".", 1)[0] if "." in name else ""
        try:
            tools = self.list_tools(namespace) if namespace else {}
        except DesktopError as exc:
            return _failure(
                name, ToolErrorCode.UNKNOWN_TOOL, f"no tool server for {namespace!r}: {exc}", dispatched=False
            )
        tool = tools.get(name)
        if tool is None:
            return _failure(name, ToolErrorCode.UNKNOWN_TOOL, f"no tool named {name!r}", dispatched=False)
        problem = validate_arguments(tool.input_schema, arguments, validator=self._validator(name, tool))
        if problem is not None:
            return _failure(name, ToolErrorCode.INVALID_ARGUMENTS, problem, dispatched=False)
        start = time.perf_counter()
        try:
            result = self._run(self._call(namespace, name, arguments), timeout_s)
        except FutureTimeout:
            ms = (time.perf_counter() - start) * 1000
            return _failure(
                name, ToolErrorCode.TIMEOUT, f"no answer in {timeout_s} s", dispatched=True, latency_ms=ms
            )
        ms = (time.perf_counter() - start) * 1000
        text = "\n".join(getattr(block, "text", "") for block in result.content)
        structured = result.structured_content
        if result.is_error:
            return _failure(name, ToolErrorCode.TOOL_ERROR, text, dispatched=True, latency_ms=ms)
        effect = structured.get("effect") if isinstance(structured, dict) else None
        return ToolCallResult(
            name=name, exec_ok=True, effect=effect, text=text, structured=structured, latency_ms=ms
        )

    def _validator(self, name: str, tool: Tool) -> jsonschema.protocols.Validator:
        # Checking the schema itself is most of jsonschema.validate's cost (~1.4 ms): do it once per tool.
        validator = self._validators.get(name)
        if validator is None or validator.schema is not tool.input_schema:
            cls = jsonschema.validators.validator_for(tool.input_schema)
            cls.check_schema(tool.input_schema)
            validator = self._validators[name] = cls(tool.input_schema)
        return validator

    async def _call(self, namespace: str, name: str, arguments: dict[str, Any]) -> Any:
        session = await self._session(namespace)
        return await session.call_tool(name, arguments)

    def close(self) -> None:
        """Closes every session and stops the loop thread."""
        if self._closed:
            return
        self._closed = True

        async def shut() -> None:
            self._closing.set()
            await asyncio.wait(self._holders, timeout=5) if self._holders else None

        self._loop.call_soon_threadsafe(self._loop.set_exception_handler, _quiet_while_closing)
        # Closing a dead connection must not mask the caller's error.
        with contextlib.suppress(Exception):
            self._run(shut(), 6.0)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    def __enter__(self) -> MCPToolClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _quiet_while_closing(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Drops the transport's late callbacks on futures that teardown already settled."""
    if isinstance(context.get("exception"), asyncio.InvalidStateError):
        return
    loop.default_exception_handler(context)


def validate_arguments(
    schema: dict[str, Any], arguments: Any, *, validator: jsonschema.protocols.Validator | None = None
) -> str | None:
    """Returns None when ``arguments`` satisfy the JSON schema, else a message naming the problem.

    Args:
        schema: The tool's input schema.
        arguments: The call's arguments.
        validator: A validator already built for ``schema`` (skips re-checking the schema).
    """
    if not isinstance(arguments, dict):
        return f"arguments must be a JSON object, got {type(arguments).__name__}"
    try:
        if validator is None:
            jsonschema.validate(arguments, schema)
        else:
            error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
            if error is not None:
                raise error
    except jsonschema.ValidationError as exc:
        where = ".".join(str(p) for p in exc.absolute_path) or "arguments"
        return f"{where}: {exc.message}"
    extra = set(arguments) - set(schema.get("properties", {}))
    if extra and schema.get("additionalProperties", True) is not False:
        # OSWorld-MCP's schemas do not forbid extra keys, but a model that sends one has
        # the name wrong; refusing says so instead of silently dropping it.
        return f"unknown argument(s) {sorted(extra)}; expected some of {sorted(schema.get('properties', {}))}"
    return None

"""Host-side client of the in-desktop MCP servers (``serve_all`` on a Unix socket).

A synchronous facade over the SDK's async ``ClientSession`` (streamable HTTP over the
socket), running its own event loop in a daemon thread, so the gym env can call::

    client = MCPToolClient("/run/desktop-3/mcp.sock")
    tools = client.list_tools("libreoffice_calc")          # {name: mcp Tool}
    r = client.call("libreoffice_calc.set_cell_value", {"cell": "A1", "value": "1"}, timeout_s=10)
    r.exec_ok, r.effect, r.error_code                          # True, {...}, None

A call never raises and never outlives its ``timeout_s`` (connecting and listing
the namespace's tools included). Its failures are values (:class:`ToolErrorCode`):

- ``unknown_tool``, ``invalid_arguments``, ``payload_too_large``: checked here, nothing sent
  (arguments must be JSON text: no lone surrogate, NaN or nesting past
  :data:`MAX_ARGUMENT_DEPTH`, at most ``max_argument_bytes``);
- ``tool_error``: the tool ran and failed, or the server refused the call;
- ``timeout``: no answer in time (a hung tool, a stopped tool host);
- ``desktop_error``: the tool host cannot be reached (socket gone, connection
  refused or dropped). The dead session is dropped and the next call connects
  anew, so a restarted host is used again without a new client. A socket removed
  from under a live session (a tmp cleaner on a long run) fails the call at once,
  with nothing sent: no new connection could reach the host any more.

A client dropped without :meth:`MCPToolClient.close` is closed when collected: its
thread ends and its sockets close.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import time
import weakref
from collections.abc import Coroutine
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import jsonschema
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, CallToolResult, Tool

from osworld_mcp_env.errors import DesktopError
from osworld_mcp_env.mcp_host.limits import ToolLimits

# The socket ignores host and port, but the server's DNS-rebinding check wants a loopback host with a port.
_BASE_URL = "http://127.0.0.1:8000"
MAX_ARGUMENT_DEPTH = 64
"""Deepest nesting of a call's arguments (no tool schema nests past 4; the server's parser stops near 200)."""
_GRACE_S = 0.5  # how long past a deadline the caller waits for the loop to deliver the timeout itself

T = TypeVar("T")


class ToolErrorCode(StrEnum):
    """Why a tool call did not execute (the env's ``info["error"]["code"]``)."""

    UNKNOWN_TOOL = "unknown_tool"
    INVALID_ARGUMENTS = "invalid_arguments"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    TIMEOUT = "timeout"
    TOOL_ERROR = "tool_error"
    DESKTOP_ERROR = "desktop_error"
    STALE_ELEMENT_REF = "stale_element_ref"
    AMBIGUOUS_TARGET = "ambiguous_target"
    UNSUPPORTED_OPERATION = "unsupported_operation"
    WAIT_TIMEOUT = "wait_timeout"
    WAIT_BUDGET_EXHAUSTED = "wait_budget_exhausted"


# An error result may name its own code in ``structuredContent.error`` (``ax.act``); only these,
# and only these fields of it, reach the env's ``info["error"]``.
STRUCTURED_ERROR_CODES = frozenset(
    {
        ToolErrorCode.STALE_ELEMENT_REF,
        ToolErrorCode.AMBIGUOUS_TARGET,
        ToolErrorCode.UNSUPPORTED_OPERATION,
        ToolErrorCode.WAIT_TIMEOUT,
        ToolErrorCode.WAIT_BUDGET_EXHAUSTED,
        ToolErrorCode.DESKTOP_ERROR,
        ToolErrorCode.TOOL_ERROR,
    }
)
STRUCTURED_ERROR_FIELDS = ("failure_phase", "input_events_emitted", "stopped_at", "completed")


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
        dispatched: Whether anything may have reached the tool.
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


class HostUnavailable(DesktopError):
    """The tool host cannot be reached: its socket is gone, or the connection was refused or dropped.

    Attributes:
        dispatched: Whether the request may have reached the host before the connection failed.
    """

    def __init__(self, message: str, *, dispatched: bool) -> None:
        super().__init__(message)
        self.dispatched = dispatched


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
        connect_timeout_s: Deadline of :meth:`list_tools` when the caller gives none.
        max_argument_bytes: Largest arguments (UTF-8 JSON) sent; the servers' default limit.
    """

    def __init__(
        self,
        socket_path: str | Path,
        *,
        connect_timeout_s: float = 10.0,
        max_argument_bytes: int = ToolLimits.max_argument_bytes,
    ) -> None:
        self.socket_path = str(socket_path)
        self.connect_timeout_s = connect_timeout_s
        self.max_argument_bytes = max_argument_bytes
        self._host = _HostLink(self.socket_path)
        # Runs when the client is closed or collected; the loop's tasks hold only _host,
        # never this object, so an env dropped without close() frees its thread and sockets.
        self._finalizer = weakref.finalize(self, self._host.shutdown)
        self._finalizer.atexit = False
        self._tools: dict[str, dict[str, Tool]] = {}
        self._validators: dict[str, jsonschema.protocols.Validator] = {}

    # ------------------------------------------------------------------ API

    def list_tools(
        self, namespace: str, *, refresh: bool = False, timeout_s: float | None = None
    ) -> dict[str, Tool]:
        """Returns ``{full tool name: Tool}`` of a namespace (cached after the first call).

        Raises:
            DesktopError: If the namespace is not served, or its server cannot be reached
                in ``timeout_s`` (default ``connect_timeout_s``).
        """
        if namespace in self._tools and not refresh:
            return self._tools[namespace]
        timeout = self.connect_timeout_s if timeout_s is None else timeout_s
        try:
            tools = self._host.run(self._host.list_tools(namespace), timeout)
        except TimeoutError as exc:
            raise DesktopError(f"MCP namespace {namespace!r} did not answer in {timeout:g} s") from exc
        except DesktopError:
            raise
        except Exception as exc:
            raise DesktopError(f"MCP namespace {namespace!r} at {self.socket_path}: {exc!r}") from exc
        self._tools[namespace] = tools
        return tools

    def call(
        self, name: str, arguments: dict[str, Any] | None = None, *, timeout_s: float = 30.0
    ) -> ToolCallResult:
        """Calls ``namespace.method`` with arguments checked against its schema first.

        Never raises for a bad call or a broken host: returns a result with ``error_code``.
        """
        started = time.monotonic()
        arguments = {} if arguments is None else arguments
        namespace, dot, _ = name.partition(".")
        if not dot:
            return _failure(name, ToolErrorCode.UNKNOWN_TOOL, f"no tool named {name!r}", dispatched=False)
        refusal = self._check_payload(name, arguments)
        if refusal is not None:
            return refusal
        try:
            tools = self.list_tools(namespace, timeout_s=timeout_s)
        except DesktopError as exc:
            return self._unreachable(name, exc, started)
        tool = tools.get(name)
        if tool is None:
            return _failure(name, ToolErrorCode.UNKNOWN_TOOL, f"no tool named {name!r}", dispatched=False)
        problem = validate_arguments(tool.input_schema, arguments, validator=self._validator(name, tool))
        if problem is not None:
            return _failure(name, ToolErrorCode.INVALID_ARGUMENTS, problem, dispatched=False)
        left = timeout_s - (time.monotonic() - started)
        sent = time.perf_counter()
        try:
            result = self._host.run(self._host.call_tool(namespace, name, arguments), left)
        except TimeoutError:
            code, text, dispatched = ToolErrorCode.TIMEOUT, f"no answer in {timeout_s:g} s", True
        except HostUnavailable as exc:
            code, text, dispatched = ToolErrorCode.DESKTOP_ERROR, str(exc), exc.dispatched
        except DesktopError as exc:  # the client was closed
            code, text, dispatched = ToolErrorCode.DESKTOP_ERROR, str(exc), False
        except MCPError as exc:  # the server refused the request itself
            code, text, dispatched = ToolErrorCode.TOOL_ERROR, exc.message, True
        except Exception as exc:  # whatever the SDK raises is this call's failure, not the env's
            code, text, dispatched = ToolErrorCode.TOOL_ERROR, f"{type(exc).__name__}: {exc}", True
        else:
            return _to_result(name, result, _ms(sent))
        return _failure(name, code, text, dispatched=dispatched, latency_ms=_ms(sent))

    def close(self) -> None:
        """Closes every session and stops the loop thread (idempotent)."""
        self._finalizer()

    def __enter__(self) -> MCPToolClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ checks

    def _check_payload(self, name: str, arguments: Any) -> ToolCallResult | None:
        """Refuses arguments that are not JSON text, nest too deep or are too large (nothing sent)."""
        if not isinstance(arguments, dict):
            return _failure(
                name,
                ToolErrorCode.INVALID_ARGUMENTS,
                f"arguments must be a JSON object, got {type(arguments).__name__}",
                dispatched=False,
            )
        if _depth(arguments) > MAX_ARGUMENT_DEPTH:
            return _failure(
                name,
                ToolErrorCode.INVALID_ARGUMENTS,
                f"arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels",
                dispatched=False,
            )
        try:
            size = len(json.dumps(arguments, ensure_ascii=False, allow_nan=False).encode("utf-8"))
        except (UnicodeEncodeError, ValueError, TypeError) as exc:
            return _failure(
                name,
                ToolErrorCode.INVALID_ARGUMENTS,
                f"arguments are not valid JSON text ({type(exc).__name__}: {exc}); "
                "strings must be valid Unicode and numbers finite",
                dispatched=False,
            )
        if size > self.max_argument_bytes:
            return _failure(
                name,
                ToolErrorCode.PAYLOAD_TOO_LARGE,
                f"arguments are {size} bytes of JSON; the limit is {self.max_argument_bytes}",
                dispatched=False,
                size=size,
                limit=self.max_argument_bytes,
            )
        return None

    def _unreachable(self, name: str, exc: DesktopError, started: float) -> ToolCallResult:
        if isinstance(exc, _UnknownNamespace):
            return _failure(name, ToolErrorCode.UNKNOWN_TOOL, str(exc), dispatched=False)
        if isinstance(exc.__cause__, TimeoutError):
            return _failure(
                name, ToolErrorCode.TIMEOUT, str(exc), dispatched=False, latency_ms=_ms_since(started)
            )
        return _failure(name, ToolErrorCode.DESKTOP_ERROR, str(exc), dispatched=False)

    def _validator(self, name: str, tool: Tool) -> jsonschema.protocols.Validator:
        # Checking the schema itself is most of jsonschema.validate's cost (~1.4 ms): do it once per tool.
        validator = self._validators.get(name)
        if validator is None or validator.schema is not tool.input_schema:
            cls = jsonschema.validators.validator_for(tool.input_schema)
            cls.check_schema(tool.input_schema)
            validator = self._validators[name] = cls(tool.input_schema)
        return validator


class _UnknownNamespace(DesktopError):
    """The tool host serves no namespace of that name."""


@dataclass
class _Session:
    """One namespace's live ``ClientSession`` and the task that holds its transport open."""

    session: ClientSession
    holder: asyncio.Task[None]


class _HostLink:
    """The loop thread and the sessions to one tool host: everything the loop's tasks reference."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self.loop = asyncio.new_event_loop()
        self.loop.set_exception_handler(_quiet_late_callbacks)
        self.thread = threading.Thread(target=_run_loop, args=(self.loop,), name="mcp-client", daemon=True)
        self.thread.start()
        self.sessions: dict[str, _Session] = {}
        self.served: frozenset[str] | None = None
        self.closed = False

    def run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """Runs ``coro`` on the loop, cancelled there after ``timeout`` seconds.

        Raises:
            TimeoutError: When the deadline passed (also when the loop could not even answer).
            DesktopError: When the client is closed.
        """
        if self.closed:
            coro.close()
            raise DesktopError("The MCP client is closed")
        timeout = max(timeout, 0.0)
        future = asyncio.run_coroutine_threadsafe(asyncio.wait_for(coro, timeout), self.loop)
        try:
            return future.result(timeout + _GRACE_S)
        except TimeoutError:
            future.cancel()
            raise

    # ---------------------------------------------------------------- on the loop

    async def list_tools(self, namespace: str) -> dict[str, Tool]:
        session = await self._session(namespace)
        try:
            result = await session.list_tools()
        except MCPError as exc:
            raise self._lost(namespace, exc) from exc
        return {tool.name: tool for tool in result.tools}

    async def call_tool(self, namespace: str, name: str, arguments: dict[str, Any]) -> CallToolResult:
        session = await self._session(namespace)
        try:
            return await session.call_tool(name, arguments)
        except MCPError as exc:
            if not _stale_session(exc):
                raise self._lost(namespace, exc) from exc
        # The host was restarted since this session began: the request was refused before
        # any tool ran, so it is sent again once on a fresh session.
        self._drop(namespace)
        session = await self._session(namespace)
        try:
            return await session.call_tool(name, arguments)
        except MCPError as exc:
            raise self._lost(namespace, exc) from exc

    def _lost(self, namespace: str, exc: MCPError) -> Exception:
        """Drops a session the error shows dead; returns the exception to raise."""
        if exc.code == CONNECTION_CLOSED or _stale_session(exc):
            self._drop(namespace)
            return HostUnavailable(
                f"The connection to the tool host at {self.socket_path} was lost ({exc.message}); "
                "the next call reconnects.",
                dispatched=True,
            )
        return exc

    def _drop(self, namespace: str) -> None:
        link = self.sessions.pop(namespace, None)
        if link is not None:
            link.holder.cancel()
        self.served = None  # a host that lost a session may have been replaced: ask it again

    async def _session(self, namespace: str) -> ClientSession:
        link = self.sessions.get(namespace)
        if not os.path.exists(self.socket_path):  # one stat; also under a live session
            if link is not None:
                self._drop(namespace)
            raise HostUnavailable(
                f"The tool host's socket {self.socket_path} does not exist.", dispatched=False
            )
        if link is not None:
            if not link.holder.done():
                return link.session
            self._drop(namespace)
        if namespace not in await self._served():
            raise _UnknownNamespace(f"no tool server for {namespace!r}; served: {sorted(self.served or ())}")
        ready: asyncio.Future[ClientSession] = self.loop.create_future()
        holder = asyncio.ensure_future(self._hold(namespace, ready))
        try:
            session = await ready
        except asyncio.CancelledError:  # the caller's deadline: leave no half-open transport behind
            holder.cancel()
            raise
        except Exception as exc:
            raise HostUnavailable(
                f"Cannot connect to the tool host at {self.socket_path}: {_reason(exc)}", dispatched=False
            ) from exc
        self.sessions[namespace] = _Session(session, holder)
        return session

    async def _served(self) -> frozenset[str]:
        if self.served is None:
            try:
                async with self._http() as http:
                    reply = await http.get(f"{_BASE_URL}/health")
                    reply.raise_for_status()
                    self.served = frozenset(reply.json()["namespaces"])
            except (httpx2.HTTPError, OSError, ValueError, KeyError) as exc:
                raise HostUnavailable(
                    f"The tool host at {self.socket_path} does not answer: {_reason(exc)}", dispatched=False
                ) from exc
        return self.served

    def _http(self) -> httpx2.AsyncClient:
        # No client-side timeouts: every wait is bounded by the caller's deadline (run()).
        return httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(uds=self.socket_path), timeout=None)

    async def _hold(self, namespace: str, ready: asyncio.Future[ClientSession]) -> None:
        """Owns one session's transport: its task groups must be entered and left by one task."""
        try:
            async with (
                self._http() as http,
                streamable_http_client(f"{_BASE_URL}/{namespace}/mcp", http_client=http) as streams,
                ClientSession(streams[0], streams[1]) as session,
            ):
                await session.initialize()
                ready.set_result(session)
                await asyncio.Event().wait()  # until cancelled by _drop or shutdown
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)

    def shutdown(self) -> None:
        """Closes every session, stops the loop and waits for its thread (idempotent, any thread)."""
        if self.closed:
            return
        self.closed = True

        async def close_sessions() -> None:
            holders = [link.holder for link in self.sessions.values()]
            self.sessions.clear()
            for holder in holders:
                holder.cancel()
            if holders:
                await asyncio.wait(holders, timeout=2)

        if not self.thread.is_alive():
            return
        future = asyncio.run_coroutine_threadsafe(close_sessions(), self.loop)
        if threading.current_thread() is self.thread:  # collected on the loop itself
            future.add_done_callback(lambda _: self.loop.stop())
            return
        with contextlib.suppress(Exception):  # closing a dead connection must not mask the caller's error
            future.result(3)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)


def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
    """The client thread: the loop until stopped, then closed (its selector and wake-up pipe)."""
    try:
        loop.run_forever()
    finally:
        with contextlib.suppress(Exception):
            loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


def _stale_session(exc: MCPError) -> bool:
    """The server answered 404: it does not know this session (it was restarted)."""
    return "session not found" in exc.message.lower()


def _reason(exc: BaseException) -> str:
    """The innermost cause of a connection failure (the SDK wraps it in exception groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


def _quiet_late_callbacks(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Drops the transport's late callbacks on futures that teardown already settled."""
    if isinstance(context.get("exception"), asyncio.InvalidStateError):
        return
    loop.default_exception_handler(context)


def _to_result(name: str, result: CallToolResult, latency_ms: float) -> ToolCallResult:
    text = "\n".join(getattr(block, "text", "") for block in result.content)
    structured = result.structured_content
    if result.is_error:
        error = structured.get("error") if isinstance(structured, dict) else None
        if isinstance(error, dict) and error.get("code") in STRUCTURED_ERROR_CODES:
            code = ToolErrorCode(error["code"])
            details = {k: error[k] for k in STRUCTURED_ERROR_FIELDS if k in error}
            body = text.removeprefix(f"Error [{code}]: ")
            return _failure(name, code, body, dispatched=True, latency_ms=latency_ms, **details)
        return _failure(name, ToolErrorCode.TOOL_ERROR, text, dispatched=True, latency_ms=latency_ms)
    effect = structured.get("effect") if isinstance(structured, dict) else None
    return ToolCallResult(
        name=name, exec_ok=True, effect=effect, text=text, structured=structured, latency_ms=latency_ms
    )


def _depth(value: Any) -> int:
    """Nesting depth of a JSON value, without recursion (a hostile value may nest 100,000 deep)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_ARGUMENT_DEPTH:
            break
        if isinstance(item, dict):
            stack += [(v, depth + 1) for v in item.values()]
        elif isinstance(item, list | tuple):
            stack += [(v, depth + 1) for v in item]
    return deepest


def _ms(since_perf: float) -> float:
    return (time.perf_counter() - since_perf) * 1000


def _ms_since(since_monotonic: float) -> float:
    return (time.monotonic() - since_monotonic) * 1000


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

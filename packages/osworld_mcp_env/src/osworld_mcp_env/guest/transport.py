"""HTTP plumbing of the guest server: requests, responses, the route table, the threaded server.

Routes register with :func:`route` in :data:`ROUTES` (a :class:`~osworld_mcp_env.registry.Registry`);
a handler takes the :class:`~osworld_mcp_env.guest.state.Guest` and the :class:`Request` and
returns a :class:`Response` or raises :class:`RequestError`. Any other exception becomes a 500
answer: the server outlives a handler bug. Absurd requests (a bad ``Content-Length``, a JSON
body too large, too deep or not JSON) are
refused with a 4xx before a handler sees them.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import select
import socket
import socketserver
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from osworld_mcp_env.registry import Registry

MAX_BODY_BYTES = 512 * 1024 * 1024  # uploads (multipart) of task files
MAX_JSON_BYTES = 16 * 1024 * 1024  # a JSON request is a command or an action, never a file


@dataclass
class Response:
    """What a route returns: a status, a body and extra headers."""

    body: bytes | memoryview | dict | list | str
    status: int = 200
    content_type: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


class RequestError(Exception):
    """A client error; becomes ``{"status": "error", "message": ...}`` with its HTTP status."""

    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.extra = extra


@dataclass
class Request:
    """A parsed request.

    Attributes:
        connection: The client's socket, to notice a client that hung up (see
            :meth:`client_gone`); None where the request did not come from one.
    """

    method: str
    path: str
    query: dict[str, str]
    headers: Any
    body: bytes
    connection: socket.socket | None = None

    def json(self) -> dict[str, Any]:
        """The body as a JSON object (empty body: ``{}``); anything else is a 400 or 413."""
        if not self.body:
            return {}
        if len(self.body) > MAX_JSON_BYTES:
            raise RequestError(413, f"A JSON body of {len(self.body)} bytes exceeds {MAX_JSON_BYTES}.")
        try:
            value = json.loads(self.body, parse_constant=_refuse_constant)
        except json.JSONDecodeError as exc:
            raise RequestError(400, f"Body is not JSON: {exc.msg}.") from exc
        except ValueError as exc:  # not UTF-8, NaN/Infinity, an integer past the digit limit
            raise RequestError(400, f"Body is not strict JSON: {str(exc)[:200]}.") from exc
        except RecursionError as exc:
            raise RequestError(400, "Body is nested too deeply.") from exc
        if not isinstance(value, dict):
            raise RequestError(400, "Body must be a JSON object.")
        return value

    def client_gone(self) -> bool:
        """True once the client closed its end: the answer has no reader, so long work should stop.

        The client sends nothing else while it waits for this answer, so a readable
        socket that yields no bytes means end of file.
        """
        if self.connection is None:
            return False
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False
        except (OSError, ValueError):  # reset, or the socket is already closed
            return True

    def form(self) -> dict[str, str]:
        """The body as a url-encoded form (OSWorld's ``/file`` and ``/window_size``), or JSON."""
        if "json" in (self.headers.get("Content-Type") or ""):
            return {k: str(v) for k, v in self.json().items()}
        pairs = urllib.parse.parse_qs(self.body.decode("utf-8", "replace"), keep_blank_values=True)
        return {k: v[0] for k, v in pairs.items()}

    def multipart(self) -> dict[str, bytes]:
        """The body as ``multipart/form-data``: field name -> bytes."""
        content_type = self.headers.get("Content-Type") or ""
        if "multipart/form-data" not in content_type:
            raise RequestError(400, f"Expected multipart/form-data, got {content_type!r}.")
        head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + self.body)
        fields: dict[str, bytes] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if isinstance(name, str) and name:  # an RFC 2231 tuple is no field name a client sends
                payload = part.get_payload(decode=True)
                fields[name] = payload if isinstance(payload, bytes) else b""
        return fields


def _refuse_constant(token: str) -> Any:
    raise ValueError(f"{token} is not a JSON number")


Route = Callable[[Any, Request], Response]  # (Guest, Request) -> Response
ROUTES: Registry[Route] = Registry("route")
"""Handlers by ``"<METHOD> <path>"`` (``"POST /gui"``)."""


def route(path: str, *methods: str) -> Callable[[Route], Route]:
    """Registers a handler for a path and HTTP methods.

    Raises:
        RegistryError: A method and path registered twice.
    """

    def decorate(fn: Route) -> Route:
        for method in methods:
            ROUTES.add(f"{method} {path}", fn)
        return fn

    return decorate


class Handler(BaseHTTPRequestHandler):
    """Dispatches to :data:`ROUTES`; never lets an exception kill the connection silently."""

    protocol_version = "HTTP/1.1"
    server: GuestHTTPServer

    def do_GET(self) -> None:  # noqa: D102 - the stdlib's naming
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: D102
        self._dispatch("POST")

    def log_message(self, format: str, *args: Any) -> None:
        """Silences per-request logs (the Unix client address is empty anyway)."""

    def _dispatch(self, method: str) -> None:
        parsed = urllib.parse.urlsplit(self.path)
        try:
            self._check_token()
            body = self._read_body()
            key = f"{method} {parsed.path}"
            if key not in ROUTES:
                raise RequestError(404, ROUTES.unknown_message(key))
            handler = ROUTES.get(key)
            query = dict(urllib.parse.parse_qsl(parsed.query, keep_blank_values=True))
            request = Request(method, parsed.path, query, self.headers, body, self.connection)
            response = handler(self.server.guest, request)
        except RequestError as exc:
            response = Response({"status": "error", "message": str(exc), **exc.extra}, status=exc.status)
        except Exception as exc:
            response = Response({"status": "error", "message": f"{type(exc).__name__}: {exc}"}, status=500)
        self._send(response)

    def _read_body(self) -> bytes:
        raw = self.headers.get("Content-Length") or "0"
        # An unread body would be parsed as the next request: refusing one ends the connection.
        if not (raw.isascii() and raw.isdigit()):
            # A negative length would read to end of file: the handler would hang.
            self.close_connection = True
            raise RequestError(400, f"Content-Length must be a non-negative integer, got {raw[:40]!r}.")
        if len(raw) > 12 or int(raw) > MAX_BODY_BYTES:
            self.close_connection = True
            raise RequestError(413, f"Body of {raw[:40]} bytes exceeds {MAX_BODY_BYTES}.")
        length = int(raw)
        return self.rfile.read(length) if length else b""

    def _check_token(self) -> None:
        token = self.server.token
        if token and self.headers.get("Authorization") != f"Bearer {token}":
            self.close_connection = True  # its body stays unread
            raise RequestError(401, "Missing or wrong bearer token.")

    def _send(self, response: Response) -> None:
        body, content_type = response.body, response.content_type
        if isinstance(body, dict | list):
            body, content_type = json.dumps(body).encode(), content_type or "application/json"
        elif isinstance(body, str):
            body = body.encode("utf-8", "replace")  # a lone surrogate must not cost the answer
            content_type = content_type or "text/plain; charset=utf-8"
        self.send_response(response.status)
        self.send_header("Content-Type", content_type or "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        for key, value in response.headers.items():
            self.send_header(key, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        try:
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up on this answer (its deadline passed)


class GuestHTTPServer(socketserver.ThreadingMixIn, HTTPServer):
    """Threaded HTTP server holding the ``Guest`` state (see ``guest.state``)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: Any, guest: Any, token: str | None, family: int | None = None) -> None:
        if family is not None:
            self.address_family = family
        self.guest = guest
        self.token = token
        super().__init__(address, Handler)

    def server_bind(self) -> None:
        """Binds; for Unix sockets skips the TCP-only host name lookup."""
        if self.address_family == socket.AF_UNIX:
            socketserver.TCPServer.server_bind(self)
            self.server_name, self.server_port = "guest", 0
        else:
            super().server_bind()

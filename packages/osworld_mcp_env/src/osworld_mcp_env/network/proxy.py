"""The host side of a desktop's internet access: an HTTP proxy on a Unix socket.

Run by :class:`~osworld_mcp_env.network.host_proxy.HostProxy` as
``python -I -m osworld_mcp_env.network.proxy --socket PATH`` under the desktop's
infrastructure uid (unprivileged on the host), with the
:class:`~osworld_mcp_env.network.config.NetworkConfig` as one JSON line on stdin.
It serves the two requests HTTP clients send a proxy: ``CONNECT host:port`` (a
tunnel, so HTTPS and any other TCP protocol) and an absolute-form request
(``GET http://host/path``) for plain HTTP, which is forwarded once with
``Connection: close`` so that every connection has exactly one destination the
policy checked. Everything the desktop sends is untrusted: heads are bounded in
size and time, connections in number, and a refused request is answered 403 with
the reason, never followed.

It prints ``ready`` once it listens and exits when stdin reaches EOF (the host
closed it or died), removing its socket.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import sys
import urllib.parse
from dataclasses import dataclass

from osworld_mcp_env.network.config import NetworkConfig, upstream_parts
from osworld_mcp_env.network.pipe import splice
from osworld_mcp_env.network.policy import Refused, Target, decide

HEAD_LIMIT = 16 * 1024
HEAD_TIMEOUT_S = 30.0
# Hop-by-hop headers a proxy must not forward, plus the ones only meant for this proxy.
# The log is on the host's disk and the desktop decides how many lines it gets: it stops here.
LOG_LINES = 10_000
HOP_HEADERS = {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "upgrade"}

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class BadRequest(Exception):
    """The client's request is not one a proxy serves (answered 400)."""


class Unreachable(Exception):
    """No target (or the upstream) accepted the connection (answered 502)."""


@dataclass(frozen=True)
class Request:
    """One request head, parsed."""

    method: str
    host: str
    port: int
    path: str  # origin-form for a forwarded request; "" for CONNECT
    version: str
    headers: tuple[tuple[str, str], ...]

    @property
    def authority(self) -> str:
        """``host:port`` with an IPv6 host in brackets."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def parse_head(head: bytes) -> Request:
    """A proxy request from its head (request line and headers, ending in an empty line).

    Raises:
        BadRequest: Not a CONNECT or an absolute-form ``http://`` request.
    """
    try:
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ")
    except ValueError:
        raise BadRequest("malformed request line") from None
    if not version.startswith("HTTP/1."):
        raise BadRequest(f"unsupported version {version!r}")
    headers = []
    for line in lines[1:]:
        if line:
            name, sep, value = line.partition(":")
            if not sep or not name or name != name.strip():
                raise BadRequest("malformed header")
            headers.append((name, value.strip()))
    if method == "CONNECT":
        parsed = urllib.parse.urlsplit(f"//{target}")
        path = ""
    else:
        parsed = urllib.parse.urlsplit(target)
        if parsed.scheme != "http":
            raise BadRequest("a proxy request names an absolute http:// url (https goes through CONNECT)")
        path = urllib.parse.urlunsplit(("", "", parsed.path or "/", parsed.query, ""))
    try:
        port = parsed.port or (80 if method != "CONNECT" else None)
    except ValueError:
        raise BadRequest("bad port") from None
    if not parsed.hostname or port is None:
        raise BadRequest("the target names no host and port")
    return Request(method, parsed.hostname, port, path, version, tuple(headers))


def response(status: int, reason: str, text: str) -> bytes:
    """A complete plain-text response that closes the connection."""
    body = f"osworld-mcp-env proxy: {text}\n".encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


class Proxy:
    """Serves one desktop's requests under its :class:`NetworkConfig`."""

    def __init__(self, config: NetworkConfig) -> None:
        self.config = config
        self._slots = asyncio.Semaphore(config.max_connections)
        self._upstream = upstream_parts(config.proxy_url) if config.proxy_url else None
        self._logged = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One client connection: read its head, decide, then tunnel or forward.

        The head is read before the cap is checked: answering with the request unread
        would reset the connection, and the client would see no reason.
        """
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
        except (asyncio.IncompleteReadError, ConnectionError, TimeoutError):
            writer.close()
            return
        except asyncio.LimitOverrunError:
            await self._answer(writer, response(431, "Request Header Fields Too Large", "head too large"))
            return
        if self._slots.locked():
            await self._answer(writer, response(503, "Service Unavailable", "too many connections"))
            return
        async with self._slots:
            try:
                request = parse_head(head)
                # The host's resolver blocks: on a thread, so one slow name stalls no other connection.
                targets = await asyncio.to_thread(decide, request.host, request.port, self.config)
                remote = await self._connect(request, targets)
            except BadRequest as exc:
                await self._answer(writer, response(400, "Bad Request", str(exc)))
                return
            except Refused as exc:
                self._log(f"refused {request.method} {request.authority}: {exc}")
                await self._answer(writer, response(403, "Forbidden", f"refused: {exc}"))
                return
            except Unreachable as exc:
                await self._answer(writer, response(502, "Bad Gateway", str(exc)))
                return
            self._log(f"{request.method} {request.authority}")
            if request.method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                remote[1].write(self._forwarded_head(request, targets[0]))
            await splice((reader, writer), remote)

    async def _connect(self, request: Request, targets: list[Target]) -> Streams:
        """A connection to the first target that accepts, directly or through the upstream."""
        timeout = self.config.connect_timeout_s
        if self._upstream is not None:
            host, port, _ = self._upstream
            streams = await self._open(host, port, timeout)
            if request.method == "CONNECT":
                await self._upstream_tunnel(streams, targets[0], timeout)
            return streams
        errors = []
        for target in targets:
            try:
                return await self._open(target.host, target.port, timeout)
            except Unreachable as exc:
                errors.append(str(exc))
        raise Unreachable("; ".join(errors))

    @staticmethod
    async def _open(host: str, port: int, timeout: float) -> Streams:
        try:
            return await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        except (OSError, TimeoutError) as exc:
            raise Unreachable(f"{host}:{port}: {exc or type(exc).__name__}") from None

    async def _upstream_tunnel(self, streams: Streams, target: Target, timeout: float) -> None:
        """Asks the upstream for a tunnel to ``target``; raises :class:`Unreachable` unless it says 200."""
        authority = Request("CONNECT", target.host, target.port, "", "HTTP/1.1", ()).authority  # [v6]:port
        head = f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n{self._upstream_auth()}\r\n"
        streams[1].write(head.encode())
        try:
            reply = await asyncio.wait_for(streams[0].readuntil(b"\r\n\r\n"), timeout)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, TimeoutError):
            streams[1].close()
            raise Unreachable("the upstream proxy did not answer the CONNECT") from None
        status = reply.split(b" ", 2)[1:2]
        if status != [b"200"]:
            streams[1].close()
            line = reply.split(b"\r\n", 1)[0].decode("latin-1")
            raise Unreachable(f"the upstream proxy answered {line!r}")

    def _upstream_auth(self) -> str:
        credentials = self._upstream[2] if self._upstream else None
        if credentials is None:
            return ""
        return f"Proxy-Authorization: Basic {base64.b64encode(credentials.encode()).decode()}\r\n"

    def _forwarded_head(self, request: Request, to: Target) -> bytes:
        """The request as the server gets it (the upstream: absolute-form, for ``to``); then close."""
        authority = Request(request.method, to.host, to.port, "", request.version, ()).authority
        target = request.path if self._upstream is None else f"http://{authority}{request.path}"
        lines = [f"{request.method} {target} {request.version}"]
        lines += [f"{k}: {v}" for k, v in request.headers if k.lower() not in HOP_HEADERS]
        lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n" + self._upstream_auth() + "\r\n").encode("latin-1")

    def _log(self, line: str) -> None:
        """One line to stderr (the host's log file), up to :data:`LOG_LINES`."""
        self._logged += 1
        if self._logged < LOG_LINES:
            print(line, file=sys.stderr, flush=True)
        elif self._logged == LOG_LINES:
            print(f"log cap of {LOG_LINES} lines reached; no more lines", file=sys.stderr, flush=True)

    @staticmethod
    async def _answer(writer: asyncio.StreamWriter, data: bytes) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            writer.write(data)
            await writer.drain()
        writer.close()


async def serve(config: NetworkConfig, socket_path: str) -> None:
    """Listens on ``socket_path`` until stdin reaches EOF."""
    proxy = Proxy(config)
    os.umask(0o077)  # the socket is the infrastructure's alone
    server = await asyncio.start_unix_server(proxy.handle, socket_path, limit=HEAD_LIMIT)
    print("ready", flush=True)
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    try:
        while await stdin.read(4096):
            pass
    finally:
        server.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(socket_path)


def main() -> int:
    """Reads the config line from stdin and serves."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--socket", required=True, help="Unix socket to listen on")
    args = parser.parse_args()
    fields = json.loads(sys.stdin.readline())
    config = NetworkConfig(**{**fields, "allow": tuple(fields["allow"])})
    asyncio.run(serve(config, args.socket))
    return 0


if __name__ == "__main__":
    sys.exit(main())

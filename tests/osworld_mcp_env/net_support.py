"""Real servers for the network tests: a website, a tripwire on the host, an upstream proxy, a client."""

from __future__ import annotations

import contextlib
import http.server
import secrets
import socket
import socketserver
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class Website:
    """An HTTP server on the host's loopback standing for a website; remembers what it was sent."""

    token: str = field(default_factory=lambda: secrets.token_hex(8))
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    port: int = 0

    @contextlib.contextmanager
    def serving(self) -> Iterator[Website]:
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                site.requests.append((self.path, dict(self.headers.items())))
                body = f"site {site.token} {self.path}\n".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = server.server_address[1]
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()


class Tripwire:
    """A host service on every host address (loopback included) that counts who reached it."""

    def __init__(self) -> None:
        self.accepted = 0
        self._socket = socket.create_server(("", 0), family=socket.AF_INET6, dualstack_ipv6=True)
        self.port = self._socket.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self._socket.accept()
                self.accepted += 1
                conn.close()

    def close(self) -> None:
        self._socket.close()


class UpstreamProxy:
    """An upstream HTTP proxy on the host's loopback that wants Basic credentials.

    It tunnels a CONNECT and forwards an absolute-form request in origin form.
    """

    def __init__(self, credentials: str) -> None:
        import base64

        expected = "Basic " + base64.b64encode(credentials.encode()).decode()
        self.heads: list[str] = []
        upstream = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = self.rfile.readline()
                    if not line:
                        return
                    head += line
                text = head.decode("latin-1")
                upstream.heads.append(text)
                if f"Proxy-Authorization: {expected}" not in text:
                    self.wfile.write(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
                    return
                method, target = text.split(" ")[:2]
                if method == "CONNECT":
                    host, port = target.rsplit(":", 1)
                    with socket.create_connection((host, int(port))) as remote:
                        self.wfile.write(b"HTTP/1.1 200 OK\r\n\r\n")
                        self.wfile.flush()
                        _pump(self.connection, remote)
                    return
                authority, _, path = target.removeprefix("http://").partition("/")
                host, port = authority.rsplit(":", 1)
                with socket.create_connection((host, int(port))) as remote:
                    remote.sendall(head.replace(target.encode(), b"/" + path.encode(), 1))
                    _pump(self.connection, remote)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _pump(a: socket.socket, b: socket.socket) -> None:
    def one_way(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)

    other = threading.Thread(target=one_way, args=(b, a), daemon=True)
    other.start()
    one_way(a, b)
    other.join()


def ask(socket_path: str, head: bytes, then: bytes = b"") -> tuple[bytes, bytes]:
    """Sends ``head`` to the proxy on ``socket_path``; with ``then``, sends it after a 200 and reads on.

    Returns (the proxy's reply head, everything after it until the connection closed).
    """
    with socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(30)
        conn.connect(socket_path)
        conn.sendall(head)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return data, b""
            data += chunk
        reply, rest = data.split(b"\r\n\r\n", 1)
        if then and reply.split(b" ")[1] == b"200":
            conn.sendall(then)
        while chunk := conn.recv(65536):
            rest += chunk
        return reply, rest

"""The VM tool route's relays: only a connection that presents the token reaches the tool host.

Both ends run here on loopback, the guest's on an unprivileged port: the relays are
plain sockets, so what the VM adds (QEMU's forward, port 81) is not needed to test
who gets through. The "tool host" is an echo server on a Unix socket that counts the
connections it accepted.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from osworld_mcp_env.guest.token_relay import HostRelay, serve_guest

TOKEN = "ab" * 16
TIMEOUT_S = 30.0


class EchoHost:
    """A Unix-socket server that echoes each connection's bytes and counts its connections."""

    def __init__(self, path: Path) -> None:
        self.accepted = 0
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(path))
        self._listener.listen()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    @staticmethod
    def _echo(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(4096):
                conn.sendall(data)

    def close(self) -> None:
        self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()


@pytest.fixture
def relays(tmp_path: Path) -> Iterator[tuple[EchoHost, int, HostRelay, Path]]:
    """(tool host, guest relay's TCP port, host relay, token file)."""
    tool_host = EchoHost(tmp_path / "mcp.sock")
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    threading.Thread(
        target=serve_guest, args=(listener, token_file, str(tmp_path / "mcp.sock")), daemon=True
    ).start()
    host = HostRelay(tmp_path / "host.sock", TOKEN)
    host.target = ("127.0.0.1", port)
    yield tool_host, port, host, token_file
    host.close()
    listener.close()
    tool_host.close()


def _read_until_closed(sock: socket.socket) -> bytes:
    sock.settimeout(TIMEOUT_S)
    data = b""
    while chunk := sock.recv(4096):
        data += chunk
    return data


def _echo_through(sock: socket.socket, payload: bytes) -> bytes:
    sock.sendall(payload)
    sock.shutdown(socket.SHUT_WR)
    return _read_until_closed(sock)


def _refused(sock: socket.socket, payload: bytes) -> bool:
    """True when the relay ends the connection without a byte back (closed or reset mid-send)."""
    try:
        return _echo_through(sock, payload) == b""
    except OSError as exc:
        return not isinstance(exc, TimeoutError)


def test_the_host_relay_reaches_the_tool_host_and_its_socket_is_private(relays) -> None:
    tool_host, _port, host, _token_file = relays
    assert host.path.stat().st_mode & 0o777 == 0o600
    for payload in (b"first", b"x" * 300_000):  # larger than any socket buffer: both pumps run
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(host.path))
            assert _echo_through(sock, payload) == payload
    assert tool_host.accepted == 2


@pytest.mark.parametrize(
    "preamble",
    [b"", b"wrong-token\n", (TOKEN[:-1] + "\n").encode(), b"x" * 1000],
    ids=["none", "wrong", "prefix", "no-newline"],
)
def test_a_connection_without_the_token_never_reaches_the_tool_host(relays, preamble: bytes) -> None:
    tool_host, port, _host, _token_file = relays
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as sock:
        assert _refused(sock, preamble + b"GET /health HTTP/1.1\r\n\r\n")
    assert tool_host.accepted == 0


def test_the_token_with_the_first_request_in_one_packet_is_relayed_whole(relays) -> None:
    tool_host, port, _host, _token_file = relays
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as sock:
        assert _echo_through(sock, f"{TOKEN}\nhello".encode()) == b"hello"
    assert tool_host.accepted == 1


def test_no_token_file_admits_nobody(relays) -> None:
    tool_host, port, _host, token_file = relays
    token_file.unlink()  # OSWorld's API mode: the guest has no token
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as sock:
        assert _refused(sock, f"{TOKEN}\nhello".encode())
    assert tool_host.accepted == 0


def test_dropped_connections_end_at_once_and_new_ones_work(relays) -> None:
    _tool_host, _port, host, _token_file = relays
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(host.path))
        sock.sendall(b"ping")
        sock.settimeout(TIMEOUT_S)
        assert sock.recv(4) == b"ping"
        host.drop_connections()  # what a VM reset does
        assert _read_until_closed(sock) == b""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(host.path))
        assert _echo_through(sock, b"again") == b"again"

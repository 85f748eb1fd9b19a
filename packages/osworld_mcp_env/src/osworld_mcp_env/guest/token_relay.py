"""A byte relay that admits a connection only once it has presented the guest's bearer token.

The MCP tool host listens on a Unix socket only root can open (``/run/ctl/mcp.sock``),
in a VM as in the local sandbox. A VM's host reaches the guest only through TCP ports
QEMU forwards, and inside the VM every process, the desktop user's included, can
connect to a TCP port. So a VM's tool route is two relays of this module:

- in the guest (``python3 -m osworld_mcp_env.guest.token_relay``, as root, on a
  privileged port no process of the user can bind first): a connection must first
  send the token and a newline; a wrong or missing token is closed before a byte
  reaches the tool host, a right one is spliced to its Unix socket;
- on the host (:class:`HostRelay`): a Unix socket (0600, in the VM's root-only
  instance directory) that the env's MCP client uses as it uses the local backend's;
  each connection opens the forwarded port, sends the token and is spliced to it.

The token is the guest server's (handed in through fw_cfg, readable by root only in
the guest), so the tool host is exactly as reachable as the guest API. Standard
library only: the guest's copy runs on Debian's Python with nothing else.
"""

from __future__ import annotations

import argparse
import contextlib
import hmac
import os
import socket
import threading
from pathlib import Path

PREAMBLE_MAX_BYTES = 256
PREAMBLE_TIMEOUT_S = 10.0
# Connections still owing their token: the desktop user can open these; a cap keeps it
# from tying up the relay's threads without bound.
MAX_UNAUTHENTICATED = 64
CONNECT_TIMEOUT_S = 10.0
CHUNK = 1 << 16


def splice(a: socket.socket, b: socket.socket, first: bytes = b"") -> None:
    """Copies bytes both ways until both directions end, then closes both sockets.

    A clean end of one direction is passed on as a half-close; an error ends both.

    Args:
        a: One connection.
        b: The other.
        first: Bytes already read from ``a`` that go to ``b`` first.
    """

    def pump(src: socket.socket, dst: socket.socket, pending: bytes) -> None:
        try:
            if pending:
                dst.sendall(pending)
            while data := src.recv(CHUNK):
                dst.sendall(data)
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)
        except OSError:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    back = threading.Thread(target=pump, args=(b, a, b""), daemon=True)
    back.start()
    pump(a, b, first)
    back.join()
    a.close()
    b.close()


def read_preamble(conn: socket.socket) -> tuple[bytes, bytes] | None:
    """(token line, bytes after it) read from a new connection, or None when it sends no line in time."""
    data = b""
    conn.settimeout(PREAMBLE_TIMEOUT_S)
    try:
        while b"\n" not in data:
            chunk = conn.recv(PREAMBLE_MAX_BYTES)
            if not chunk:
                return None
            data += chunk
            if len(data) > PREAMBLE_MAX_BYTES and b"\n" not in data[:PREAMBLE_MAX_BYTES]:
                return None
    except OSError:
        return None
    conn.settimeout(None)
    line, _, rest = data.partition(b"\n")
    return line, rest


def _admit(conn: socket.socket, token_file: Path, target: str, slots: threading.BoundedSemaphore) -> None:
    """Splices one guest-side connection to ``target`` if its first line is the token."""
    try:
        preamble = read_preamble(conn)
        try:
            expected = token_file.read_bytes().strip()
        except OSError:
            expected = b""  # no token yet (the session has not started): nobody is admitted
        if preamble is None or not expected or not hmac.compare_digest(preamble[0], expected):
            conn.close()
            return
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(target)
        except OSError:
            upstream.close()
            conn.close()
            return
    finally:
        slots.release()
    splice(conn, upstream, preamble[1])


def serve_guest(listener: socket.socket, token_file: Path, target: str) -> None:
    """The guest's end: connections to ``listener`` that present the token are spliced to ``target``.

    Args:
        listener: A listening TCP socket.
        token_file: The guest server's token, read at each connection (it appears once
            the session has started; until then nobody is admitted).
        target: The Unix socket to relay to.
    """
    slots = threading.BoundedSemaphore(MAX_UNAUTHENTICATED)
    while True:
        conn, _addr = listener.accept()
        if not slots.acquire(blocking=False):
            conn.close()
            continue
        threading.Thread(target=_admit, args=(conn, token_file, target, slots), daemon=True).start()


class HostRelay:
    """The host's end: a Unix socket whose connections reach the guest's relay with the token sent.

    Args:
        path: Where to listen (its directory must be the host's root-only one: the socket
            is made there before its mode is set).
        token: The guest's bearer token.

    Attributes:
        target: The (host, port) the guest's relay is forwarded to; set by the backend at
            each boot (a VM replaced by a new one is reached on a new port).
    """

    def __init__(self, path: Path, token: str) -> None:
        self.path = path
        self.target = ("127.0.0.1", 0)
        self._token = token.encode()
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        path.unlink(missing_ok=True)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(path))
        os.chmod(path, 0o600)
        self._listener.listen(64)
        self._thread = threading.Thread(target=self._accept, name=f"relay-{path.name}", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _addr = self._listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._relay, args=(conn,), daemon=True).start()

    def _relay(self, conn: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.target, timeout=CONNECT_TIMEOUT_S)
            upstream.settimeout(None)
            upstream.sendall(self._token + b"\n")
        except OSError:
            conn.close()  # the client sees the connection drop: the tool host is unreachable
            return
        with self._lock:
            self._open |= {conn, upstream}
        try:
            splice(conn, upstream)
        finally:
            with self._lock:
                self._open -= {conn, upstream}

    def drop_connections(self) -> None:
        """Ends every relayed connection (before the guest behind them is reverted or replaced)."""
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        """Stops listening, ends every connection and removes the socket; safe to call twice."""
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self._listener.close()
        self.drop_connections()
        self._thread.join(timeout=5)
        self.path.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the guest's relay."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True, help="TCP port to listen on (privileged)")
    parser.add_argument("--token-file", type=Path, required=True, help="the guest server's token (root only)")
    parser.add_argument("--unix", required=True, help="the Unix socket to relay to")
    args = parser.parse_args(argv)
    serve_guest(socket.create_server(("", args.port)), args.token_file, args.unix)


if __name__ == "__main__":
    main()

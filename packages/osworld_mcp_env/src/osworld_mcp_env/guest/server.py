"""The guest control server: OSWorld's in-VM HTTP API plus raw frames and GUI input.

Same request and response shapes as OSWorld's ``desktop_env/server/main.py`` for
the endpoints both have, so one client drives official OSWorld VM images and
this project's desktops. Additions are new paths, never changes to old ones:
``GET /frame`` (raw BGRA with its size and layout hash), ``POST /gui`` (one
``computer_use`` action executed through XTest, then a settle wait),
``GET /windows`` and ``GET /health``.

Serves HTTP/1.1 with keep-alive on a Unix socket (the sandbox) or TCP (a VM).
With a token (read from ``OSWORLD_GUEST_TOKEN_FILE``, or ``OSWORLD_GUEST_TOKEN`` in
a VM), every request must carry ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys

from osworld_mcp_env.guest import routes_hybrid, routes_osworld, routes_session  # noqa: F401 - registers the routes
from osworld_mcp_env.guest.state import Guest
from osworld_mcp_env.guest.transport import GuestHTTPServer


def restore_default_signals() -> None:
    """Undoes the signals a host's launcher ignored, so the desktop's programs see them.

    An ignored signal stays ignored across fork and exec: a host started under
    ``nohup`` (SIGHUP) or as a background job of a script (SIGINT, SIGQUIT) would
    hand that down to every program of the desktop, where ``kill -HUP $$`` would no
    longer end a shell. A handler, unlike an ignore, is reset to the default by exec.
    """
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def serve(*, unix_socket: str | None, host: str, port: int, token: str | None) -> None:
    """Serves until killed."""
    restore_default_signals()
    guest = Guest()
    guest.begin_episode()  # the user's home, places and session bus exist before the host is told "ready"
    if unix_socket:
        # A stale socket from a killed server would make bind fail.
        if os.path.exists(unix_socket):
            os.unlink(unix_socket)
        server = GuestHTTPServer(unix_socket, guest, token, family=socket.AF_UNIX)
        os.chmod(unix_socket, 0o600)
    else:
        server = GuestHTTPServer((host, port), guest, token)
    server.serve_forever(poll_interval=0.5)


def _token() -> str | None:
    """The bearer token, from a file only the infrastructure can read.

    Never from argv or the environment, which the host's process list and the
    user's processes would show.
    """
    path = os.environ.get("OSWORLD_GUEST_TOKEN_FILE")
    if path:
        with open(path) as f:
            return f.read().strip()
    return os.environ.get("OSWORLD_GUEST_TOKEN")


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: ``python -m osworld_mcp_env.guest.server --unix PATH`` or ``--port N``."""
    parser = argparse.ArgumentParser(description="OSWorld-compatible guest control server.")
    parser.add_argument("--unix", help="Unix socket path to listen on")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5000)
    args = parser.parse_args(argv)
    serve(unix_socket=args.unix, host=args.host, port=args.port, token=_token())
    return 0


if __name__ == "__main__":
    sys.exit(main())

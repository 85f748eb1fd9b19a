"""The sandbox's end of its internet access: ``127.0.0.1:PORT`` relayed to the host proxy's socket.

Run by ``session.sh`` as the infrastructure uid without capabilities, when the
backend sets ``OSWORLD_NET_RELAY``. The sandbox has no interface but loopback, so
this relay is its only way out, and it goes only to the host proxy, which decides
where each connection may go (:mod:`osworld_mcp_env.network.policy`). The proxy's
socket lies in the control directory, which the desktop user cannot enter: the
user reaches the proxy only through this relay, as every app does. It touches
``--ready`` once it listens; its exit ends the session like any core process's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from pathlib import Path

from osworld_mcp_env.network.pipe import splice


async def relay(port: int, socket_path: str, ready: Path) -> None:
    """Accepts on the sandbox's loopback and hands every connection to the proxy socket."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream = await asyncio.open_unix_connection(socket_path)
        except OSError:
            writer.close()
            return
        await splice((reader, writer), upstream)

    server = await asyncio.start_server(handle, "127.0.0.1", port)
    ready.touch()
    async with server:
        await server.serve_forever()


def main() -> None:
    """Parses the arguments and relays until killed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--socket", required=True)
    parser.add_argument("--ready", type=Path, required=True)
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(relay(args.port, args.socket, args.ready))


if __name__ == "__main__":
    main()

"""``osworld-mcp-server``: run one namespace standalone, or all of them on a Unix socket.

Examples::

    osworld-mcp-server libreoffice_calc --stdio
    osworld-mcp-server vlc --http 8765
    osworld-mcp-server all --uds /run/osworld/mcp.sock

Environment variables are read here only: ``OSWORLD_UNO_URL`` overrides the UNO URL.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import fields

import anyio

from osworld_mcp_env.mcp_host.namespaces import NAMESPACES
from osworld_mcp_env.mcp_servers.config import ServerConfig


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="osworld-mcp-server", description=__doc__.splitlines()[0])
    p.add_argument("namespace", choices=[*NAMESPACES, "all"], help="Which tool namespace to serve.")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--stdio", action="store_true", help="Serve over stdin/stdout.")
    mode.add_argument("--http", type=int, metavar="PORT", help="Serve streamable HTTP on 127.0.0.1:PORT/mcp.")
    mode.add_argument("--uds", metavar="SOCKET", help="Serve streamable HTTP on a Unix socket (/<ns>/mcp).")
    help_of = {f.name: f.metadata.get("help", "") for f in fields(ServerConfig)}
    p.add_argument("--uno-url", default=None, help=help_of["uno_url"] + " Env: OSWORLD_UNO_URL.")
    p.add_argument("--vlc-url", default=None, help=help_of["vlc_url"])
    p.add_argument("--vlc-password", default=None, help=help_of["vlc_password"])
    p.add_argument("--cdp-url", default=None, help=help_of["cdp_url"])
    p.add_argument(
        "--desktop-uid",
        type=int,
        default=None,
        help="With --uds, started as root: bind, then act as this user (tools touch its files only).",
    )
    return p


def config_from_args(args: argparse.Namespace, environ: dict[str, str] | None = None) -> ServerConfig:
    """Returns the config from CLI flags, then ``OSWORLD_UNO_URL``, then defaults."""
    env = os.environ if environ is None else environ
    overrides: dict[str, object] = {}
    uno_url = args.uno_url or env.get("OSWORLD_UNO_URL")
    if uno_url:
        overrides["uno_url"] = uno_url
    for flag in ("vlc_url", "vlc_password", "cdp_url"):
        if getattr(args, flag) is not None:
            overrides[flag] = getattr(args, flag)
    return ServerConfig(**overrides)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``osworld-mcp-server``."""
    args = _parser().parse_args(argv)
    config = config_from_args(args)
    from osworld_mcp_env.mcp_servers.serve import build_server, serve_all, serve_http
    from osworld_mcp_env.mcp_servers.wire import serve_stdio

    if args.uds:
        namespaces = NAMESPACES if args.namespace == "all" else (args.namespace,)
        serve_all(args.uds, config, namespaces=namespaces, desktop_uid=args.desktop_uid)
        return 0
    if args.namespace == "all":
        print("'all' needs --uds SOCKET (one process, every namespace)", file=sys.stderr)
        return 2
    if args.stdio:
        anyio.run(serve_stdio, build_server(args.namespace, config), config.limits)
    else:
        serve_http(args.namespace, config, args.http)
    return 0


if __name__ == "__main__":
    sys.exit(main())

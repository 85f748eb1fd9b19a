"""Build one namespace's server, or serve all of them from one process on a Unix socket."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route
from starlette.types import ASGIApp

from osworld_mcp_env.mcp_host.namespaces import NAMESPACE_TABLE, NAMESPACES
from osworld_mcp_env.mcp_servers.config import ServerConfig
from osworld_mcp_env.mcp_servers.privileges import act_as_desktop_user, bind_unix_socket
from osworld_mcp_env.mcp_servers.registry import ToolRegistry
from osworld_mcp_env.mcp_servers.wire import BodyLimit


def registry_for(name: str) -> ToolRegistry[Any]:
    """Returns the tool registry of a namespace, importing the modules that fill it.

    Imported on demand (the table names modules, not objects) so one namespace's
    missing optional piece never stops the others.

    Raises:
        RegistryError: With the known namespaces, if ``name`` is unknown.
    """
    entry = NAMESPACE_TABLE.get(name)
    modules = [importlib.import_module(module) for module in entry.modules]
    return getattr(modules[0], entry.registry)


def build_server(namespace: str, config: ServerConfig | None = None) -> MCPServer[Any]:
    """Returns the ``MCPServer`` of one namespace (tools named ``<namespace>.<method>``)."""
    return registry_for(namespace).build(config or ServerConfig())


def build_all_app(
    config: ServerConfig | None = None,
    *,
    namespaces: tuple[str, ...] = NAMESPACES,
    extra_servers: Mapping[str, MCPServer[Any]] | None = None,
) -> Starlette:
    """Returns one ASGI app serving each namespace at ``/<namespace>/mcp``, plus ``GET /health``.

    Args:
        config: Where the apps are; defaults to :class:`ServerConfig()`.
        namespaces: Which namespaces to serve.
        extra_servers: More servers to mount by path prefix (tests mount a fault-injection one).
    """
    config = config or ServerConfig()
    servers: dict[str, MCPServer[Any]] = {ns: build_server(ns, config) for ns in namespaces}
    servers.update(extra_servers or {})
    # Plain JSON responses instead of one SSE stream per call (~3 ms less per call on two cores).
    apps = {ns: http_app(server, config, json_response=True) for ns, server in servers.items()}

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        # Mount does not run a sub-app's lifespan; each server's session manager must run.
        async with AsyncExitStack() as stack:
            for server in servers.values():
                await stack.enter_async_context(server.session_manager.run())
            yield

    async def health(_request: Request) -> JSONResponse:
        return JSONResponse({"namespaces": sorted(servers)})

    routes: list[Any] = [Route("/health", health)]
    routes += [Mount(f"/{ns}", app=app) for ns, app in apps.items()]
    return Starlette(routes=routes, lifespan=lifespan)


def http_app(server: MCPServer[Any], config: ServerConfig, *, json_response: bool = False) -> ASGIApp:
    """The streamable-HTTP app of one server, with the config's message size limit.

    No idle expiry: an env may sit between steps longer than the SDK's 30 minutes.
    """
    app = server.streamable_http_app(
        json_response=json_response,
        session_idle_timeout=None,
        max_request_body_size=config.limits.max_message_bytes,
    )
    return BodyLimit(app, config.limits.max_message_bytes)


def serve_http(namespace: str, config: ServerConfig, port: int) -> None:
    """Serves one namespace as streamable HTTP on ``127.0.0.1:port/mcp`` until interrupted."""
    import uvicorn

    server = build_server(namespace, config)
    app = http_app(server, config)
    # A mounted app would not run the session manager: this one is the whole app, so it does.
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=2)


def serve_all(
    socket_path: str | Path,
    config: ServerConfig | None = None,
    *,
    namespaces: tuple[str, ...] = NAMESPACES,
    extra_servers: Mapping[str, MCPServer[Any]] | None = None,
    desktop_uid: int | None = None,
) -> None:
    """Serves every namespace from this process on a Unix socket until interrupted.

    The socket is mode 0600 (only its owner, and root, may connect). With
    ``desktop_uid``, it is bound first and the process then acts as that user
    (:mod:`~osworld_mcp_env.mcp_servers.privileges`).

    The host connects with the SDK's streamable-HTTP client over that socket, at
    ``http://127.0.0.1:8000/<namespace>/mcp`` (the host part must be a loopback
    address with a port for the SDK's DNS-rebinding check; the port is ignored).
    """
    import uvicorn

    app = build_all_app(config, namespaces=namespaces, extra_servers=extra_servers)
    sock = bind_unix_socket(socket_path)
    if desktop_uid is not None:
        act_as_desktop_user(desktop_uid)
    uvicorn.run(app, fd=sock.fileno(), log_level="warning", timeout_graceful_shutdown=2)

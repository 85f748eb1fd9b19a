"""MCP tool servers, one per app namespace, on the ``mcp`` SDK (2.x ``MCPServer``).

- :func:`build_server` returns the ``MCPServer`` of one namespace.
- :func:`serve_all` serves every namespace from one process on a Unix socket,
  at ``/<namespace>/mcp`` (streamable HTTP).
- ``osworld-mcp-server NAMESPACE --stdio | --http PORT`` runs one standalone.

What a message or a call may cost is bounded by :class:`ToolLimits`
(``ServerConfig.limits``): every malformed message gets a JSON-RPC error reply,
oversized arguments a tool error, and no result exceeds ``max_result_bytes``.

Every tool returns an :class:`~osworld_mcp_env.mcp_servers.effects.ToolOutput`
(``structuredContent`` with an ``effect``); see ``docs/mcp_tools.md``.
"""

from osworld_mcp_env.mcp_host.limits import ToolLimits
from osworld_mcp_env.mcp_host.namespaces import NAMESPACES
from osworld_mcp_env.mcp_servers.config import DEFAULT_UNO_URL, ServerConfig
from osworld_mcp_env.mcp_servers.effects import Effect, EffectKind, ToolOutput
from osworld_mcp_env.mcp_servers.serve import build_all_app, build_server, registry_for, serve_all

__all__ = [
    "DEFAULT_UNO_URL",
    "NAMESPACES",
    "Effect",
    "EffectKind",
    "ServerConfig",
    "ToolLimits",
    "ToolOutput",
    "build_all_app",
    "build_server",
    "registry_for",
    "serve_all",
]

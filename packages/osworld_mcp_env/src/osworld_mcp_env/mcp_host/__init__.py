"""The host side of MCP: the env's client of the in-desktop tool host and the tables both sides read.

- :mod:`~osworld_mcp_env.mcp_host.client`: :class:`MCPToolClient`, the tool host over its Unix socket.
- :mod:`~osworld_mcp_env.mcp_host.namespaces`: the one table of tool namespaces (standard library only,
  so the in-desktop servers import it too).
- :mod:`~osworld_mcp_env.mcp_host.apps`: window classes and app names to an app key and its namespaces.
- :mod:`~osworld_mcp_env.mcp_host.limits`: :class:`ToolLimits`, what a message or a call may cost (the
  servers enforce it, the client refuses oversized arguments before sending).

The servers themselves are :mod:`osworld_mcp_env.mcp_servers`; nothing here is imported eagerly, so
reading the tables does not load the MCP SDK.
"""

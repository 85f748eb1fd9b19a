"""The app tools: one module per namespace (and the helpers only they use), apart from the server plumbing.

Each namespace module registers its tools on a ``ToolRegistry`` (:mod:`osworld_mcp_env.mcp_servers.registry`);
:data:`~osworld_mcp_env.mcp_host.namespaces.NAMESPACE_TABLE` names which modules a namespace imports.
The plumbing every namespace shares (arguments and results bounded, JSON-RPC errors, privileges, serving
on a socket) stays in :mod:`osworld_mcp_env.mcp_servers`.
"""

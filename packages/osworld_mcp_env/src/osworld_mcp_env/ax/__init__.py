"""The semantic channel: accessibility records with refs, compact views, and guarded actions.

- :mod:`~osworld_mcp_env.ax.records`: the record of one observed element, the operations each
  role supports, and the checks that read a worker's answer as untrusted data (standard library).
- :mod:`~osworld_mcp_env.ax.compact`: records -> the compact view the model reads (pure).
- :mod:`~osworld_mcp_env.ax.worker`: the AT-SPI worker that runs inside the desktop as its user.
- :mod:`~osworld_mcp_env.ax.link`: the tool host's side of the worker: start, supervise, bound.
- :mod:`~osworld_mcp_env.ax.batch`: ``ax.act``'s batch of steps and waits, and its evidence.

The MCP tools themselves are :mod:`osworld_mcp_env.mcp_servers.tools.ax`.
"""

"""The env's side of the MCP route: one client per desktop and the catalog for the focused app.

The catalog shown with each observation follows the focused window: its
``WM_CLASS`` goes through :mod:`osworld_mcp_env.mcp_host.apps` to an app and its
namespaces; an app without tools gets an explicit empty list, never every tool.

Every wait here (the tool host's socket appearing, listing a namespace) is bounded
by the step's :func:`~osworld_mcp_env.deadline.deadline` scope, so a tool host that
is stopped or gone costs a step its own deadline, not 20 s more. The socket is
waited for only until it first appears: once seen, a missing socket was removed
(a tmp cleaner on a long run) and will not come back, so a call fails at once
(``desktop_error``) and the next reset replaces the tool host (the guest refuses
its fast reset, :meth:`~osworld_mcp_env.guest.state.Guest.unhealthy_core`).
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

from osworld_mcp_env.backends.base import Desktop
from osworld_mcp_env.deadline import budget
from osworld_mcp_env.errors import DesktopError
from osworld_mcp_env.info import ToolSchema
from osworld_mcp_env.mcp_host.apps import app_namespaces
from osworld_mcp_env.mcp_host.client import MCPToolClient, ToolCallResult
from osworld_mcp_env.mcp_servers.catalog import NAMESPACES

SOCKET_WAIT_S = 20.0
LIST_TIMEOUT_S = 10.0


class ToolCatalog:
    """The MCP client of one running desktop plus the per-app tool lists it shows.

    Args:
        socket_path: The desktop's MCP socket (``Desktop.tool_socket()``).
        desktop: The desktop; its ``generation`` tells when the sandbox was replaced.
    """

    def __init__(self, socket_path: str, desktop: Desktop) -> None:
        self.socket_path = socket_path
        self._generation = desktop.generation
        self._client = MCPToolClient(socket_path)
        self._schemas: dict[str, list[ToolSchema]] = {}
        self._read_only: dict[str, bool] = {}
        self._socket_seen = False  # once it was there, a missing socket is gone for good

    def serves(self, socket_path: str | None, desktop: Desktop) -> bool:
        """True while this client still talks to ``desktop``'s current tool host."""
        return socket_path == self.socket_path and desktop.generation == self._generation

    def _wait_for_socket(self) -> None:
        # The tool host starts beside the guest server and listens ~1 s later.
        if self._socket_seen:
            if not os.path.exists(self.socket_path):
                raise DesktopError(f"The MCP tool host's socket {self.socket_path} was removed.")
            return
        wait = budget(SOCKET_WAIT_S)
        deadline = time.monotonic() + wait
        while not os.path.exists(self.socket_path):
            if time.monotonic() > deadline:
                raise DesktopError(f"The MCP tool host did not open {self.socket_path} in {wait:g} s.")
            time.sleep(0.02)
        self._socket_seen = True

    def namespace_tools(self, namespace: str) -> list[ToolSchema]:
        """The tool schemas of one namespace as the model sees them."""
        if namespace not in self._schemas:
            self._wait_for_socket()
            tools = self._client.list_tools(namespace, timeout_s=budget(LIST_TIMEOUT_S))
            self._schemas[namespace] = [
                ToolSchema(
                    name=tool.name,
                    description=tool.description or "",
                    parameters=tool.input_schema,
                    read_only=bool(tool.annotations and tool.annotations.read_only_hint),
                )
                for tool in tools.values()
            ]
            for schema in self._schemas[namespace]:
                self._read_only[schema["name"]] = schema["read_only"]
        return self._schemas[namespace]

    def for_app(self, app: str) -> list[ToolSchema]:
        """Every tool of the focused app's served namespaces; ``[]`` for an app without tools."""
        served = [ns for ns in app_namespaces(app) if ns in NAMESPACES]
        return [tool for ns in served for tool in self.namespace_tools(ns)]

    def is_read_only(self, name: str) -> bool | None:
        """The tool's ``readOnlyHint``, or None for a name never listed."""
        namespace = name.split(".", 1)[0]
        if name not in self._read_only and namespace in NAMESPACES:
            try:
                self.namespace_tools(namespace)
            except DesktopError:
                return None
        return self._read_only.get(name)

    def call(self, name: str, arguments: dict[str, Any], *, timeout_s: float) -> ToolCallResult:
        """Validates and calls a tool; never raises for a bad call."""
        namespace = name.split(".", 1)[0]
        if namespace in NAMESPACES:
            # An unreachable host becomes the client's own error value below.
            with contextlib.suppress(DesktopError):
                self._wait_for_socket()
        return self._client.call(name, arguments, timeout_s=timeout_s)

    def close(self) -> None:
        """Closes the client's sessions and thread."""
        self._client.close()

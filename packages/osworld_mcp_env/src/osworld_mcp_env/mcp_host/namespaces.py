"""The one table of MCP tool namespaces: what each serves, from which module, for which apps.

Every reader of "which namespaces exist" reads :data:`NAMESPACE_TABLE`: the schema
catalog (which OSWorld-MCP groups fold into which namespace), the server
(:func:`~osworld_mcp_env.mcp_servers.serve.registry_for` imports ``modules``), the app
table (:data:`~osworld_mcp_env.mcp_host.apps.APP_NAMESPACES`: the focused app's tool groups)
and each namespace's ``ToolRegistry``, which is built from its entry here rather than
from a retyped name.

Standard library only: :mod:`osworld_mcp_env.mcp_host.apps` imports it, and the MCP SDK is not
needed to know the names.
"""

from __future__ import annotations

from dataclasses import dataclass

from osworld_mcp_env.registry import Registry

_SERVERS = "osworld_mcp_env.mcp_servers.tools"


@dataclass(frozen=True)
class Namespace:
    """One MCP tool namespace.

    Attributes:
        name: The namespace; tools are served as ``<name>.<method>``.
        modules: The modules whose import registers the namespace's tools; the first
            holds its ``ToolRegistry`` under ``registry``.
        registry: The attribute of ``modules[0]`` that holds the ``ToolRegistry``.
        osworld_groups: OSWorld-MCP's tool groups (schema file stems under
            ``mcp_servers/osworld_schemas``) folded into this namespace, its own first.
        apps: Canonical app keys (:mod:`osworld_mcp_env.mcp_host.apps`) whose focus shows these tools.
        description: What the tools act on.
    """

    name: str
    modules: tuple[str, ...]
    registry: str
    osworld_groups: tuple[str, ...]
    apps: tuple[str, ...]
    description: str


LIBREOFFICE_CALC = Namespace(
    "libreoffice_calc",
    (f"{_SERVERS}.calc", f"{_SERVERS}.calc_extra"),
    "calc",
    ("libreoffice_calc", "libreoffice_calc2"),
    ("libreoffice_calc",),
    "The open Calc spreadsheet, through UNO.",
)
LIBREOFFICE_WRITER = Namespace(
    "libreoffice_writer",
    (f"{_SERVERS}.writer",),
    "writer",
    ("libreoffice_writer",),
    ("libreoffice_writer",),
    "The open Writer document, through UNO.",
)
LIBREOFFICE_IMPRESS = Namespace(
    "libreoffice_impress",
    (f"{_SERVERS}.impress",),
    "impress",
    ("libreoffice_impress", "libreoffice_impress2"),
    ("libreoffice_impress",),
    "The open Impress presentation, through UNO.",
)
OS = Namespace(
    "os",
    (f"{_SERVERS}.os_tools",),
    "os_tools",
    ("os",),
    ("os",),
    "Files, search, trash, archives and the settings the desktop has.",
)
CODE = Namespace(
    "code",
    (f"{_SERVERS}.code",),
    "code",
    ("code", "code2"),
    ("code",),
    "The desktop's text editor (mousepad), in place of OSWorld-MCP's VS Code.",
)
VLC = Namespace(
    "vlc",
    (f"{_SERVERS}.vlc",),
    "vlc",
    ("vlc",),
    ("vlc",),
    "The running VLC, through its HTTP interface.",
)
GOOGLE_CHROME = Namespace(
    "google_chrome",
    (f"{_SERVERS}.chrome",),
    "chrome",
    ("google_chrome",),
    ("google_chrome",),
    "The running Chromium, over its DevTools endpoint.",
)

AX = Namespace(
    "ax",
    (f"{_SERVERS}.ax",),
    "ax",
    (),
    (),
    "The semantic channel: compact accessibility views with refs, search, guarded batches of actions "
    "(offered with every app's tools when the env's ax_tools is on).",
)

NAMESPACE_TABLE: Registry[Namespace] = Registry("namespace")
"""Every namespace this package serves, by name."""

NAMESPACES: tuple[str, ...] = tuple(
    NAMESPACE_TABLE.add(ns.name, ns).name
    for ns in (LIBREOFFICE_CALC, LIBREOFFICE_WRITER, LIBREOFFICE_IMPRESS, OS, CODE, VLC, GOOGLE_CHROME, AX)
)
"""Every namespace name, in a stable order (the order servers mount and tools list)."""

OSWORLD_NAMESPACES: tuple[str, ...] = tuple(n for n in NAMESPACES if NAMESPACE_TABLE.get(n).osworld_groups)
"""The namespaces with OSWorld-MCP's schemas: the study's tool lists (``ax`` is not among them)."""


__all__ = [
    "AX",
    "CODE",
    "GOOGLE_CHROME",
    "LIBREOFFICE_CALC",
    "LIBREOFFICE_IMPRESS",
    "LIBREOFFICE_WRITER",
    "NAMESPACES",
    "NAMESPACE_TABLE",
    "OS",
    "OSWORLD_NAMESPACES",
    "VLC",
    "Namespace",
]

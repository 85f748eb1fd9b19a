"""Schema compatibility with OSWorld-MCP: tool names, descriptions, parameter schemas.

The JSON files under ``osworld_schemas/`` are OSWorld-MCP's ``tools/apis/*.json``
(OpenAI function format, ``"<Class>.<method>"`` names). Models and prompts written
for OSWorld-MCP see the same descriptions and parameter schemas here; the tool
name becomes ``"<namespace>.<method>"``, with OSWorld-MCP's secondary groups
folded in as the namespace table says (:data:`~osworld_mcp_env.mcp_host.namespaces.NAMESPACE_TABLE`:
``libreoffice_calc2`` into ``libreoffice_calc``, ``code2`` into ``code``, ...).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from osworld_mcp_env.errors import RegistryError
from osworld_mcp_env.mcp_host.namespaces import NAMESPACE_TABLE, NAMESPACES
from osworld_mcp_env.registry import unknown_name_message

# OSWorld-MCP schema file stem -> our namespace (the table's ``osworld_groups``).
_FILE_NAMESPACE: dict[str, str] = {
    group: entry.name for entry in map(NAMESPACE_TABLE.get, NAMESPACES) for group in entry.osworld_groups
}


@dataclass(frozen=True)
class ToolSchema:
    """One tool as OSWorld-MCP describes it.

    Attributes:
        namespace: Our namespace (``libreoffice_calc``).
        method: The method name (``set_cell_value``).
        description: The description text, verbatim.
        parameters: The JSON schema of the arguments, verbatim.
        source: OSWorld-MCP's own name (``CalcTools.set_cell_value``) and file.
    """

    namespace: str
    method: str
    description: str
    parameters: dict[str, Any]
    source: str

    @property
    def name(self) -> str:
        """The tool name served here: ``<namespace>.<method>``."""
        return f"{self.namespace}.{self.method}"


@cache
def load_catalog() -> dict[str, dict[str, ToolSchema]]:
    """Returns ``{namespace: {method: ToolSchema}}`` for all 132 OSWorld-MCP tools."""
    out: dict[str, dict[str, ToolSchema]] = {ns: {} for ns in NAMESPACES}
    folder = resources.files(__package__).joinpath("osworld_schemas")
    for stem, namespace in _FILE_NAMESPACE.items():
        entries = json.loads(folder.joinpath(f"{stem}.json").read_text(encoding="utf-8"))
        for entry in entries:
            fn = entry["function"]
            method = fn["name"].split(".", 1)[1]
            if method in out[namespace]:
                raise ValueError(f"Duplicate tool {namespace}.{method} in {stem}.json")
            out[namespace][method] = ToolSchema(
                namespace=namespace,
                method=method,
                description=fn["description"],
                parameters=fn["parameters"],
                source=f"{fn['name']} ({stem}.json)",
            )
    return out


def schema_for(name: str, method: str) -> ToolSchema:
    """Returns the OSWorld-MCP schema of one tool.

    Raises:
        RegistryError: With the known names, if the namespace or method is not in the catalog.
    """
    tools = load_catalog()[NAMESPACE_TABLE.get(name).name]
    if method not in tools:
        raise RegistryError(unknown_name_message(f"{name} tool (OSWorld-MCP's schemas)", method, tools))
    return tools[method]

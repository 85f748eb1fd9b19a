"""MCP tool descriptions as the agent sees them, and loaders for the public formats.

Two formats exist in the field: the study's registry (``{namespace: [{name,
description, params}]}``, 120 tools in 9 namespaces) and OSWorld-MCP's API
files (one OpenAI-function list per namespace file, names like
``CalcTools.save``). Both are normalised here into :class:`ToolSpec` with the
qualified name ``<namespace>.<tool>`` that the env dispatches on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hybrid_agent.errors import ToolCatalogError


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool: qualified name, description and JSON-schema parameters.

    Attributes:
        namespace: The server namespace (``libreoffice_calc``, ``libreoffice_calc2``, ``os``...).
        name: The bare tool name (``sort_column``).
        description: What the tool does, shown to the model.
        parameters: A JSON schema object (``{"type": "object", "properties": ..., "required": ...}``).
    """

    namespace: str
    name: str
    description: str
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    @property
    def qualified_name(self) -> str:
        """``<namespace>.<tool>``, the name the model must emit."""
        return f"{self.namespace}.{self.name}"

    @property
    def required(self) -> tuple[str, ...]:
        """Names of the required parameters."""
        return tuple(self.parameters.get("required", ()))

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """Names of all parameters, in schema order."""
        return tuple(self.parameters.get("properties", {}))

    def to_function(self) -> dict[str, Any]:
        """Returns the ``{"type": "function", "function": {...}}`` object of the ``<tools>`` block."""
        return {
            "type": "function",
            "function": {
                "name": self.qualified_name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }


def _registry_schema(params: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    # The registry marks optional parameters by giving them a default; the rest are required.
    properties = {name: dict(spec) for name, spec in params.items()}
    required = [name for name, spec in params.items() if "default" not in spec]
    return {"type": "object", "properties": properties, "required": required}


def tools_from_registry(data: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[ToolSpec]:
    """Converts the study's registry (``{namespace: [{name, description, params}]}``).

    Raises:
        ToolCatalogError: When an entry lacks ``name``.
    """
    tools = []
    for namespace, entries in data.items():
        for entry in entries:
            if "name" not in entry:
                raise ToolCatalogError(f"Registry entry in {namespace!r} has no 'name': {entry!r}.")
            tools.append(
                ToolSpec(
                    namespace=namespace,
                    name=entry["name"],
                    description=entry.get("description", ""),
                    parameters=_registry_schema(entry.get("params", {})),
                )
            )
    return tools


def tools_from_openai_functions(namespace: str, functions: Sequence[Mapping[str, Any]]) -> list[ToolSpec]:
    """Converts one OSWorld-MCP API file (OpenAI function list) into tools of ``namespace``.

    OSWorld-MCP names its functions ``<Class>.<tool>`` (``CalcTools.save``); the class
    part is an implementation detail and is replaced by the file's namespace.
    """
    tools = []
    for item in functions:
        fn = item.get("function", item)
        if "name" not in fn:
            raise ToolCatalogError(f"Function in {namespace!r} has no 'name': {item!r}.")
        tools.append(
            ToolSpec(
                namespace=namespace,
                name=fn["name"].rsplit(".", 1)[-1],
                description=fn.get("description", ""),
                parameters=fn.get("parameters", {"type": "object", "properties": {}}),
            )
        )
    return tools


def load_registry(path: str | Path) -> list[ToolSpec]:
    """Loads the study's ``tools_registry.json``."""
    return tools_from_registry(json.loads(Path(path).read_text()))


def load_osworld_mcp_apis(directory: str | Path) -> list[ToolSpec]:
    """Loads every ``<namespace>.json`` of OSWorld-MCP's ``tools/apis`` directory.

    Raises:
        ToolCatalogError: When the directory holds no JSON file.
    """
    files = sorted(Path(directory).glob("*.json"))
    if not files:
        raise ToolCatalogError(f"No '*.json' tool files in {str(directory)!r}.")
    tools: list[ToolSpec] = []
    for file in files:
        tools.extend(tools_from_openai_functions(file.stem, json.loads(file.read_text())))
    return tools


def tools_from_env(entries: Sequence[Mapping[str, Any]]) -> list[ToolSpec]:
    """Converts the env's per-step catalog (``info["tools"]``: ``{name, description, parameters}``).

    These are the tools the env serves for the focused app, so showing them can never
    offer a name the env would refuse.
    """
    tools = []
    for entry in entries:
        namespace, _, method = str(entry["name"]).partition(".")
        if not method:
            raise ToolCatalogError(f"Env tool name {entry['name']!r} is not '<namespace>.<tool>'.")
        tools.append(
            ToolSpec(
                namespace=namespace,
                name=method,
                description=entry.get("description", ""),
                parameters=entry.get("parameters") or {"type": "object", "properties": {}},
            )
        )
    return tools


def served_tools() -> list[ToolSpec]:
    """Every tool the env's MCP servers serve, with OSWorld-MCP's descriptions and schemas.

    The offline twin of the env's per-step catalog: what retrieval ranks when no
    env is at hand (tests, benchmarks). Imported lazily: it loads the server modules.
    The semantic channel's ``ax`` tools are left out: the env offers them only with its
    ``ax_tools`` option, beside every app's tools, never through retrieval.
    """
    from osworld_mcp_env.mcp_host.namespaces import OSWORLD_NAMESPACES
    from osworld_mcp_env.mcp_servers import registry_for
    from osworld_mcp_env.mcp_servers.catalog import schema_for

    tools = []
    for namespace in OSWORLD_NAMESPACES:
        for method in registry_for(namespace).tools:
            schema = schema_for(namespace, method)
            tools.append(ToolSpec(namespace, method, schema.description, schema.parameters))
    return tools


def fold_to_served(tools: Sequence[ToolSpec], served: Sequence[ToolSpec]) -> tuple[list[ToolSpec], list[str]]:
    """Renames or drops tools so that every name left is one the env serves.

    The study's registry has secondary namespaces (``libreoffice_calc2.*``, ``code2.*``,
    ``libreoffice_impress2.*``) that the env folds into their parents; a tool whose name
    the env serves under the parent namespace is renamed to it, one it does not serve
    at all is dropped.

    Returns:
        ``(kept, dropped)``: the kept tools (served names, first occurrence wins) and the
        qualified names that were dropped.
    """
    by_name = {tool.qualified_name: tool for tool in served}
    kept: dict[str, ToolSpec] = {}
    dropped = []
    for tool in tools:
        names = [tool.qualified_name, f"{tool.namespace.rstrip('0123456789')}.{tool.name}"]
        target = next((name for name in names if name in by_name), None)
        if target is None:
            dropped.append(tool.qualified_name)
            continue
        if target not in kept:
            namespace = target.partition(".")[0]
            kept[target] = ToolSpec(namespace, tool.name, tool.description, tool.parameters)
    return list(kept.values()), dropped

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

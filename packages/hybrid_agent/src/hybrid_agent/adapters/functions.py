"""Generic OpenAI function calling: any model served behind an OpenAI-compatible API with ``tools``.

The model gets the stack's functions in the request (``--tool-format functions``) or in
its system text, with the real screen's resolution: a generic model has no trained
grid, so it addresses screen pixels and the frame is sent as it is. Its calls arrive
in either wire form, both read:

* as the ``openai:`` policy relays them: one ``<tool_call>{"name", "arguments"}</tool_call>``
  per ``tool_calls`` entry (``arguments`` a JSON string, ``functions.`` prefixes repaired);
* as the raw wire JSON a custom policy may return: a message ``{"tool_calls": [...]}`` or
  the list itself, each entry ``{"type": "function", "function": {"name", "arguments"}}``.

More than one call is ``multiple_tool_calls`` (the env takes one per step).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hybrid_agent.adapters.base import ModelAdapter, register_adapter
from hybrid_agent.coords import CoordinateConfig, CoordinatePolicy
from hybrid_agent.parse import (
    ParseError,
    ParseErrorCode,
    ParseResult,
    call_from_object,
    parse_response,
    split_think,
)
from hybrid_agent.toolset import ToolSpec


def _wire_calls(rest: str) -> list[Any] | None:
    """The ``tool_calls`` list of a wire-JSON reply, ``None`` when the reply is not one."""
    try:
        decoded = json.loads(rest)
    except json.JSONDecodeError:
        return None
    if isinstance(decoded, dict) and isinstance(decoded.get("tool_calls"), list):
        return decoded["tool_calls"]
    return decoded if isinstance(decoded, list) else None


@register_adapter("openai-fc")
class FunctionCallingAdapter(ModelAdapter):
    """Any OpenAI-compatible model through ``tool_calls``; screen-pixel coordinates."""

    family = "OpenAI-compatible function calling"
    default_coordinates = CoordinateConfig(policy=CoordinatePolicy.ABSOLUTE_SCREEN)

    def parse_text(self, text: str, tools: Sequence[ToolSpec]) -> ParseResult:
        """Reads relayed ``<tool_call>`` blocks, else a wire ``tool_calls`` JSON."""
        think, rest = split_think(text)
        calls = _wire_calls(rest.strip()) if "<tool_call>" not in rest else None
        if calls is None:
            return parse_response(text, tools, actions=self.gui_actions)
        if len(calls) != 1:
            code = ParseErrorCode.NO_TOOL_CALL if not calls else ParseErrorCode.MULTIPLE_TOOL_CALLS
            return ParseError(code, f"Make exactly one tool call per step, got {len(calls)}.", think)
        entry = calls[0]
        function = entry.get("function", entry) if isinstance(entry, dict) else None
        if not isinstance(function, dict):
            return ParseError(ParseErrorCode.INVALID_JSON, "A tool call must be a JSON object.", think)
        return call_from_object(dict(function), "", think, tools, [], self.gui_actions)

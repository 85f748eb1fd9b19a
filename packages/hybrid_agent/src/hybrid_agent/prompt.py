"""The text the model sees: system prompt, ``<tools>`` block, tool results, current turn.

This module is also the single source of the GUI action schema: the
``computer_use`` function shown to the model is built from
:data:`COMPUTER_USE_ACTIONS` and :data:`COMPUTER_USE_ARGUMENTS`, and the parser
validates against the same two tables, so the prompt and the validator cannot
drift apart. (To be unified with ``osworld_mcp_env.actions`` once that exists.)
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from hybrid_agent.errors import ConfigError
from hybrid_agent.toolset import ToolSpec
from hybrid_agent.trajectory import GUI_TOOL_NAME


@dataclass(frozen=True)
class ActionSpec:
    """One ``computer_use`` action: what it does and which arguments it needs."""

    description: str
    required: tuple[str, ...] = ()


# Qwen3-VL's 14 actions. Pointer actions require a coordinate here (Qwen's reference
# code lets clicks fall back to the cursor position): the env acts on explicit pixels.
COMPUTER_USE_ACTIONS: Mapping[str, ActionSpec] = MappingProxyType(
    {
        "key": ActionSpec("Press the keys in `keys` together (a chord), then release them.", ("keys",)),
        "type": ActionSpec("Type the string in `text`.", ("text",)),
        "mouse_move": ActionSpec("Move the pointer to `coordinate`.", ("coordinate",)),
        "left_click": ActionSpec("Left-click at `coordinate`.", ("coordinate",)),
        "right_click": ActionSpec("Right-click at `coordinate`.", ("coordinate",)),
        "middle_click": ActionSpec("Middle-click at `coordinate`.", ("coordinate",)),
        "double_click": ActionSpec("Double-click at `coordinate`.", ("coordinate",)),
        "triple_click": ActionSpec("Triple-click at `coordinate` (selects a line).", ("coordinate",)),
        "left_click_drag": ActionSpec(
            "Press the left button at the pointer and drag it to `coordinate`.", ("coordinate",)
        ),
        "scroll": ActionSpec(
            "Scroll vertically by `pixels` (positive: up), at `coordinate` if given.", ("pixels",)
        ),
        "hscroll": ActionSpec(
            "Scroll horizontally by `pixels` (positive: right), at `coordinate` if given.", ("pixels",)
        ),
        "wait": ActionSpec("Wait `time` seconds for the screen to change.", ("time",)),
        "terminate": ActionSpec("End the task and report `status`.", ("status",)),
        "answer": ActionSpec("Give the final answer in `text`.", ("text",)),
    }
)

# JSON-schema of every argument; the parser checks types against these.
COMPUTER_USE_ARGUMENTS: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {
        "keys": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "description": 'Key names, e.g. ["ctrl", "s"]. Required by `key`.',
        },
        "text": {
            "type": "string",
            "description": "Text to type or the answer. Required by `type` and `answer`.",
        },
        "coordinate": {
            "type": "array",
            "items": {"type": "number"},
            "minItems": 2,
            "maxItems": 2,
            "description": "[x, y] on the screen, in the resolution stated above.",
        },
        "pixels": {"type": "number", "description": "Scroll amount. Required by `scroll` and `hscroll`."},
        "time": {"type": "number", "description": "Seconds to wait. Required by `wait`."},
        "status": {
            "type": "string",
            "enum": ["success", "failure"],
            "description": "Outcome of the task. Required by `terminate`.",
        },
    }
)


def computer_use_function(resolution: tuple[int, int]) -> dict[str, Any]:
    """Returns the ``computer_use`` function object shown first in ``<tools>``.

    Args:
        resolution: ``(width, height)`` the model must address, e.g. ``(1000, 1000)`` for
            Qwen3-VL's relative grid (see :func:`hybrid_agent.coords.prompt_resolution`).
    """
    width, height = resolution
    action_lines = "\n".join(f"* `{name}`: {spec.description}" for name, spec in COMPUTER_USE_ACTIONS.items())
    description = (
        "Control the desktop with the mouse and keyboard.\n"
        f"* The screen's resolution is {width}x{height}.\n"
        "* Look at the latest screenshot before choosing a coordinate; aim at the centre of the element."
    )
    properties: dict[str, Any] = {
        "action": {
            "type": "string",
            "enum": list(COMPUTER_USE_ACTIONS),
            "description": "The action to perform:\n" + action_lines,
        }
    }
    properties.update({name: dict(schema) for name, schema in COMPUTER_USE_ARGUMENTS.items()})
    return {
        "type": "function",
        "function": {
            "name": GUI_TOOL_NAME,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": ["action"]},
        },
    }


@dataclass(frozen=True)
class PromptConfig:
    """How the system prompt is written.

    Attributes:
        resolution: ``(width, height)`` stated in ``computer_use``; must agree with the
            coordinate policy (``coords.prompt_resolution``).
        tool_preference_hint: Add the study's "prefer a listed MCP tool" sentence when at
            least one MCP tool is shown.
        preamble: The first paragraph of the system message.
    """

    resolution: tuple[int, int] = (1000, 1000)
    tool_preference_hint: bool = True
    preamble: str = "You are a computer-use agent operating a Linux desktop to complete the user's task."

    def __post_init__(self) -> None:
        if len(self.resolution) != 2 or min(self.resolution) < 1:
            raise ConfigError(f"resolution must be (width, height) >= 1, got {self.resolution!r}.")


def render_tools_block(functions: Sequence[Mapping[str, Any]]) -> str:
    """Renders ``<tools>`` with one compact JSON object per line."""
    lines = [json.dumps(fn, ensure_ascii=False) for fn in functions]
    return "<tools>\n" + "\n".join(lines) + "\n</tools>"


def system_prompt(tools: Sequence[ToolSpec], config: PromptConfig = PromptConfig()) -> str:
    """Builds the system message: preamble, ``<tools>`` (``computer_use`` first), format rules."""
    functions = [computer_use_function(config.resolution)] + [tool.to_function() for tool in tools]
    parts = [
        config.preamble,
        "# Tools\n\nYou may call exactly one function per step. Function signatures, one per line:\n"
        + render_tools_block(functions),
    ]
    if tools and config.tool_preference_hint:
        parts.append(
            "When one of the listed MCP tools does what the current step needs, call it by name rather "
            "than driving the GUI with computer_use; use computer_use when no listed tool fits."
        )
    parts.append(
        "# Response format\n\n"
        "Every step, answer in this order:\n"
        "1) Action: one short imperative sentence saying what you do next.\n"
        "2) One call, as JSON inside tags:\n"
        '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>\n'
        "Emit exactly one <tool_call> and nothing after it. "
        "When the task is finished or cannot be done, call computer_use with action=terminate."
    )
    return "\n\n".join(parts)


TRUNCATION_MARKER = "...[truncated: {omitted} more characters]"


def render_tool_result(text: str, limit: int) -> str:
    """Renders a relayed tool result, truncated to ``limit`` characters with a visible marker.

    The full result stays in the trajectory; only the rendered copy is cut, so a
    later change of ``limit`` can be replayed from the same record.
    """
    if len(text) > limit:
        text = text[:limit] + TRUNCATION_MARKER.format(omitted=len(text) - limit)
    return f"Tool result: {text}"


def current_turn_text(instruction: str, history: Sequence[str]) -> str:
    """The text closing the current user turn: instruction and every earlier one-line action."""
    lines = [f"Step {i}: {line}" for i, line in enumerate(history, start=1)] or ["None"]
    return (
        "Choose the next step from the screenshot, the instruction and the previous actions.\n\n"
        f"Instruction: {instruction}\n\n"
        "Previous actions:\n" + "\n".join(lines)
    )

"""The text the model sees: system prompt, ``<tools>`` block, tool results, current turn.

The ``computer_use`` function shown to the model is derived from the env's
single description of the GUI vocabulary,
:data:`osworld_mcp_env.actions.COMPUTER_USE_ACTIONS`; the parser validates against
the same table, so prompt, parser and executor cannot drift apart. The vocabulary
offered is the model adapter's choice (:func:`offered_actions`): Qwen3-VL's published
set, as the OSWorld-MCP study shows it, or that set and the graphical ``zoom``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from osworld_mcp_env.actions import (
    COMPUTER_USE_ACTIONS,
    GUI_ACTIONS,
    TERMINAL_ACTIONS,
    TERMINATE_STATUSES,
    ActionSpec,
    ArgKind,
)
from osworld_mcp_env.text import truncate

from hybrid_agent.errors import ConfigError
from hybrid_agent.toolset import ToolSpec
from hybrid_agent.trajectory import GUI_TOOL_NAME

# JSON schema of each argument kind of osworld_mcp_env.actions.ArgKind.
_KIND_SCHEMAS: Mapping[str, Mapping[str, Any]] = {
    "coordinate": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
    "int": {"type": "integer"},
    "number": {"type": "number"},
    "text": {"type": "string"},
    "keys": {"type": "array", "items": {"type": "string"}, "minItems": 1},
    "status": {"type": "string", "enum": list(TERMINATE_STATUSES)},
    "region": {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4},
    "scale": {"type": "integer", "minimum": 2},
}

_ARGUMENT_HINTS: Mapping[str, str] = {
    "coordinate": "[x, y] on the screen, in the resolution stated above.",
    "start_coordinate": "[x, y] where a drag starts (default: the pointer).",
    "keys": 'Key names pressed together, e.g. ["ctrl", "s"].',
    "text": "Text to type, or the final answer.",
    "pixels": "Scroll amount.",
    "time": "Seconds to wait.",
    "status": "Outcome of the task.",
    "region": "[x1, y1, x2, y2]: the top-left and bottom-right corners of the part to enlarge.",
    "scale": "Enlargement factor (default: as large as fits the screen).",
}


def offered_actions(zoom: bool) -> Mapping[str, ActionSpec]:
    """The ``computer_use`` actions a model is told about and its replies may use.

    The env carries out every action of :data:`~osworld_mcp_env.actions.GUI_ACTIONS`;
    what the model is offered is the agent's setting, so the OSWorld-MCP study's prompt
    and parser keep Qwen3-VL's published vocabulary exactly (``zoom`` off), and the
    ``hcu`` setting adds Hybrid Computer Use's graphical zoom.
    """
    return GUI_ACTIONS if zoom else COMPUTER_USE_ACTIONS


def _argument_schemas(actions: Mapping[str, ActionSpec] = COMPUTER_USE_ACTIONS) -> dict[str, dict[str, Any]]:
    """One schema per argument name, with the actions that require / accept it."""
    kinds: dict[str, ArgKind] = {}
    required_by: dict[str, list[str]] = {}
    for action, spec in actions.items():
        for arg, kind in [*spec.required.items(), *spec.optional.items()]:
            kinds.setdefault(arg, kind)
        for arg in spec.required:
            required_by.setdefault(arg, []).append(action)
    schemas = {}
    for arg, kind in kinds.items():
        users = required_by.get(arg)
        needed = "Required by " + ", ".join(f"`{a}`" for a in users) + "." if users else "Optional."
        hint = _ARGUMENT_HINTS.get(arg, "")
        schemas[arg] = {**_KIND_SCHEMAS[kind], "description": f"{hint} {needed}".strip()}
    return schemas


def computer_use_function(
    resolution: tuple[int, int], actions: Mapping[str, ActionSpec] = COMPUTER_USE_ACTIONS
) -> dict[str, Any]:
    """Returns the ``computer_use`` function object shown first in ``<tools>``.

    Args:
        resolution: ``(width, height)`` the model must address, e.g. ``(1000, 1000)`` for
            Qwen3-VL's relative grid (see :func:`hybrid_agent.coords.model_space`).
        actions: The vocabulary offered (:func:`offered_actions`); the study's by default.
    """
    width, height = resolution
    action_lines = "\n".join(f"* `{name}`: {spec.description}" for name, spec in actions.items())
    description = (
        "Control the desktop with the mouse and keyboard.\n"
        f"* The screen's resolution is {width}x{height}.\n"
        "* Look at the latest screenshot before choosing a coordinate; aim at the centre of the element."
    )
    properties: dict[str, Any] = {
        "action": {
            "type": "string",
            "enum": list(actions),
            "description": "The action to perform:\n" + action_lines,
        }
    }
    properties.update(_argument_schemas(actions))
    return {
        "type": "function",
        "function": {
            "name": GUI_TOOL_NAME,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": ["action"]},
        },
    }


def end_functions() -> list[dict[str, Any]]:
    """The episode-ending ``computer_use`` actions (``terminate``, ``answer``) as functions of their own.

    For transports whose built-in GUI tool has no way to end a task (Anthropic's
    ``computer``, OpenAI's ``computer_use_preview``); a call of one is the same
    ``computer_use`` action.
    """
    schemas = _argument_schemas()
    functions = []
    for action in (name for name in COMPUTER_USE_ACTIONS if name in TERMINAL_ACTIONS):
        spec = COMPUTER_USE_ACTIONS[action]
        properties = {
            arg: {k: v for k, v in schemas[arg].items() if k != "description"} for arg in spec.required
        }
        parameters = {"type": "object", "properties": properties, "required": list(spec.required)}
        functions.append(
            {
                "type": "function",
                "function": {"name": action, "description": spec.description, "parameters": parameters},
            }
        )
    return functions


RESPONSE_FORMAT_HEADING = "# Response format"
END_RULE = "When the task is finished or cannot be done, call computer_use with action=terminate."
END_FUNCTIONS_RULE = (
    "When the task is finished or cannot be done, call terminate (or answer, with the answer asked for)."
)
"""The end rule for a GUI tool without terminate: the end actions are functions (:func:`end_functions`)."""
NATIVE_RESPONSE_FORMAT = (
    f"{RESPONSE_FORMAT_HEADING}\n\n"
    "Every step, say in one short sentence what you do next, then make exactly one tool call. "
    + END_FUNCTIONS_RULE
)


JSON_CALL_FORMAT = (
    "One call, as JSON inside tags:\n"
    '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)
"""How one call is written in the Qwen families' replies (a model adapter may state its own)."""


@dataclass(frozen=True)
class PromptConfig:
    """How the system prompt is written.

    Attributes:
        resolution: ``(width, height)`` stated in ``computer_use``; must agree with the
            coordinate policy (``coords.model_space``).
        tool_preference_hint: Add the study's "prefer a listed MCP tool" sentence when at
            least one MCP tool is shown.
        preamble: The first paragraph of the system message.
        tools_block: Render the ``<tools>`` block. Off when the tools travel in the
            request instead (OpenAI function calling), so they are not listed twice.
        call_format: How one call is written, shown in the response format rules (the
            model family's own: JSON in ``<tool_call>`` for Qwen, XML-tagged arguments for GLM ...).
        skill_text: Append the section that teaches the interface (:mod:`hybrid_agent.skill`),
            whatever the model family's own prompt; off in the study's settings.
    """

    resolution: tuple[int, int] = (1000, 1000)
    tool_preference_hint: bool = True
    tools_block: bool = True
    preamble: str = "You are a computer-use agent operating a Linux desktop to complete the user's task."
    call_format: str = JSON_CALL_FORMAT
    skill_text: bool = False

    def __post_init__(self) -> None:
        if len(self.resolution) != 2 or min(self.resolution) < 1:
            raise ConfigError(f"resolution must be (width, height) >= 1, got {self.resolution!r}.")


def render_tools_block(functions: Sequence[Mapping[str, Any]]) -> str:
    """Renders ``<tools>`` with one compact JSON object per line."""
    lines = [json.dumps(fn, ensure_ascii=False) for fn in functions]
    return "<tools>\n" + "\n".join(lines) + "\n</tools>"


def system_prompt(
    tools: Sequence[ToolSpec],
    config: PromptConfig = PromptConfig(),
    *,
    functions: Sequence[Mapping[str, Any]] | None = None,
    gui_tool: str = GUI_TOOL_NAME,
    end_rule: str = END_RULE,
) -> str:
    """Builds the system message: preamble, ``<tools>`` (``computer_use`` first), format rules.

    A family trained on another GUI tool (a provider's ``computer``) passes its own
    ``functions`` to list, the name of its GUI tool for the MCP preference hint, and how a
    task ends with it (:data:`END_FUNCTIONS_RULE`).
    """
    if functions is None:
        functions = [computer_use_function(config.resolution)] + [tool.to_function() for tool in tools]
    listing = (
        "Function signatures, one per line:\n" + render_tools_block(functions)
        if config.tools_block
        else "The functions are provided with the request."
    )
    parts = [config.preamble, "# Tools\n\nYou may call exactly one function per step. " + listing]
    if tools and config.tool_preference_hint:
        parts.append(
            "When one of the listed MCP tools does what the current step needs, call it by name rather "
            f"than driving the GUI with {gui_tool}; use {gui_tool} when no listed tool fits."
        )
    parts.append(
        f"{RESPONSE_FORMAT_HEADING}\n\n"
        "Every step, answer in this order:\n"
        "1) Action: one short imperative sentence saying what you do next.\n"
        f"2) {config.call_format}\n"
        "Emit exactly one <tool_call> and nothing after it. " + end_rule
    )
    return "\n\n".join(parts)


def native_calls_prompt(system: str) -> str:
    """A system message for native tool calling: its ``<tool_call>`` text rules replaced.

    Policies whose API carries calls as structured tool use (Anthropic, the OpenAI
    Responses API) keep the preamble, the tool listing and the MCP preference hint of
    :func:`system_prompt` and swap the response format for :data:`NATIVE_RESPONSE_FORMAT`.
    """
    head = system.split(f"\n\n{RESPONSE_FORMAT_HEADING}", 1)[0]
    return f"{head}\n\n{NATIVE_RESPONSE_FORMAT}"


def render_tool_result(text: str, limit: int) -> str:
    """Renders a relayed tool result cut to ``limit`` characters, the stack's marker included.

    The full result stays in the trajectory; only the rendered copy is cut, so a
    later change of ``limit`` can be replayed from the same record.
    """
    return f"Tool result: {truncate(text, limit)}"


CLI_TRUNCATION_MARKER = "\n...(truncated)..."
"""HybridCUA's marker after a command's output cut at its limit (the head is kept)."""
_EXIT_CODE_LINE = re.compile(r"^\[exit code -?\d+\]\n")


def render_cli_output(text: str, limit: int) -> str:
    """One command's relayed output as HybridCUA shows it: ``CLI output:``, cut at ``limit`` characters.

    The env's ``[exit code N]`` line is not part of it (HybridCUA relays what the command
    printed); an empty output reads ``(no output)``. The head is kept and
    :data:`CLI_TRUNCATION_MARKER` follows a cut.
    """
    body = _EXIT_CODE_LINE.sub("", text, count=1)
    if not body.strip():
        body = "(no output)"
    elif len(body) > limit:
        body = body[:limit] + CLI_TRUNCATION_MARKER
    return f"CLI output:\n{body}"


def current_turn_text(
    instruction: str,
    history: Sequence[str],
    first: int = 1,
    frame_id: int | None = None,
    zoom_scale: int | None = None,
) -> str:
    """The text closing the current user turn: instruction and the one-line actions given.

    ``history`` holds the entries shown, the first of them step ``first`` (every earlier step
    for the study; only those that left the window for HybridCUA's policy). With ``frame_id``,
    the screenshot's id comes first: the harness cites it with each coordinate action, and a
    ``stale_gui_frame`` refusal names the frame the model read. With ``zoom_scale``, the
    screenshot is a zoom, and the model is told that its coordinates on it are mapped back.
    """
    lines = [f"Step {i}: {line}" for i, line in enumerate(history, start=first)] or ["None"]
    frame = f"The screenshot is frame {frame_id}; your coordinates are checked against it.\n\n"
    if zoom_scale is not None:
        of = f" of frame {frame_id}" if frame_id is not None else ""
        frame = (
            f"The screenshot is a zoom{of}: part of the screen enlarged {zoom_scale} times, at its top "
            "left. Give coordinates on it as on any screenshot: they are mapped back to the screen, for "
            "your next action only.\n\n"
        )
    return (
        (frame if frame_id is not None or zoom_scale is not None else "")
        + "Choose the next step from the screenshot, the instruction and the previous actions.\n\n"
        f"Instruction: {instruction}\n\n"
        "Previous actions:\n" + "\n".join(lines)
    )

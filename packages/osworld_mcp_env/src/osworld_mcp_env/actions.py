"""Typed actions: one JSON call per step, GUI and tools in the same shape.

The model emits ``{"name": "computer_use", "arguments": {"action": "left_click",
"coordinate": [x, y]}}`` or ``{"name": "libreoffice_calc.set_cell_value",
"arguments": {...}}``. :func:`parse_action` turns a string or dict into a
:class:`GuiAction` or a :class:`ToolCall`, or into an
:class:`~osworld_mcp_env.errors.ActionError` value: bad model output is an
agent mistake, never an exception out of ``env.step``.

The ``computer_use`` vocabulary is Qwen3-VL's. :data:`COMPUTER_USE_ACTIONS` is
its single description here: the validator, the agent's prompt schema and the
guest's executor all read it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from osworld_mcp_env.errors import ActionError

COMPUTER_USE = "computer_use"
BASH = "bash"

ArgKind = Literal["coordinate", "int", "number", "text", "keys", "status"]


@dataclass(frozen=True)
class ActionSpec:
    """One ``computer_use`` action: its required and optional arguments, and what it does."""

    description: str
    required: Mapping[str, ArgKind] = field(default_factory=dict)
    optional: Mapping[str, ArgKind] = field(default_factory=dict)
    ends_episode: bool = False


COMPUTER_USE_ACTIONS: Mapping[str, ActionSpec] = {
    "key": ActionSpec("Press keys together, e.g. ['ctrl', 's'], then release them.", {"keys": "keys"}),
    "type": ActionSpec("Type a string at the keyboard focus.", {"text": "text"}),
    "mouse_move": ActionSpec("Move the pointer to a pixel.", {"coordinate": "coordinate"}),
    "left_click": ActionSpec("Left-click at a pixel.", {"coordinate": "coordinate"}, {"keys": "keys"}),
    "right_click": ActionSpec("Right-click at a pixel.", {"coordinate": "coordinate"}),
    "middle_click": ActionSpec("Middle-click at a pixel.", {"coordinate": "coordinate"}),
    "double_click": ActionSpec("Double-click at a pixel.", {"coordinate": "coordinate"}),
    "triple_click": ActionSpec("Triple-click at a pixel (selects a line).", {"coordinate": "coordinate"}),
    "left_click_drag": ActionSpec(
        "Press the left button at start_coordinate (default: the pointer) and release it at coordinate.",
        {"coordinate": "coordinate"},
        {"start_coordinate": "coordinate"},
    ),
    "scroll": ActionSpec(
        "Scroll vertically by `pixels` (positive up, negative down), at coordinate if given.",
        {"pixels": "int"},
        {"coordinate": "coordinate"},
    ),
    "hscroll": ActionSpec(
        "Scroll horizontally by `pixels` (positive right, negative left), at coordinate if given.",
        {"pixels": "int"},
        {"coordinate": "coordinate"},
    ),
    "wait": ActionSpec("Wait `time` seconds for the screen to change.", {"time": "number"}),
    "terminate": ActionSpec(
        "End the task, reporting success or failure.", {"status": "status"}, ends_episode=True
    ),
    "answer": ActionSpec("End the task with a text answer.", {"text": "text"}, ends_episode=True),
}

TERMINATE_STATUSES = ("success", "failure")


@dataclass(frozen=True)
class ActionLimits:
    """Bounds that keep one action from hurting the desktop or the host.

    Attributes:
        max_payload_chars: Longest accepted action string (or its JSON form).
        max_type_chars: Longest text for ``type`` (typing is ~5 ms a character).
        max_keys: Most keys pressed together in one ``key`` action.
        max_wait_seconds: Longest ``wait``.
        max_scroll_pixels: Largest absolute ``pixels`` for a scroll.
    """

    max_payload_chars: int = 65_536
    max_type_chars: int = 4_000
    max_keys: int = 8
    max_wait_seconds: float = 30.0
    max_scroll_pixels: int = 10_000


@dataclass(frozen=True)
class GuiAction:
    """A validated ``computer_use`` action in screen pixels.

    Attributes:
        action: One of :data:`COMPUTER_USE_ACTIONS`.
        arguments: The validated arguments, ``action`` excluded; coordinates are int tuples.
        frame_id: The frame the coordinates were read from, when the agent cites it.
    """

    action: str
    arguments: Mapping[str, Any]
    frame_id: int | None = None

    @property
    def ends_episode(self) -> bool:
        """True for ``terminate`` and ``answer``."""
        return COMPUTER_USE_ACTIONS[self.action].ends_episode

    def to_call(self) -> dict[str, Any]:
        """Returns the JSON call form (the shape the model emitted)."""
        args = {"action": self.action}
        args.update({k: list(v) if isinstance(v, tuple) else v for k, v in self.arguments.items()})
        return {"name": COMPUTER_USE, "arguments": args}


@dataclass(frozen=True)
class ToolCall:
    """A call of a text tool: ``<namespace>.<tool>`` (MCP) or ``bash``."""

    name: str
    arguments: Mapping[str, Any]

    @property
    def namespace(self) -> str:
        """The MCP namespace (the part before the first dot), or the name itself."""
        return self.name.split(".", 1)[0]

    @property
    def tool(self) -> str:
        """The tool name inside its namespace."""
        return self.name.split(".", 1)[-1]

    def to_call(self) -> dict[str, Any]:
        """Returns the JSON call form."""
        return {"name": self.name, "arguments": dict(self.arguments)}


Action = GuiAction | ToolCall


def parse_action(
    raw: str | Mapping[str, Any],
    screen_size: tuple[int, int],
    limits: ActionLimits = ActionLimits(),
) -> Action | ActionError:
    """Validates one action call and returns it typed, or the agent's mistake as a value.

    Args:
        raw: The call as JSON text or a mapping ``{"name": ..., "arguments": {...}}``.
        screen_size: (width, height); coordinates outside it are refused.
        limits: Size bounds.

    Returns:
        A :class:`GuiAction`, a :class:`ToolCall` (not yet checked against a tool
        catalogue: that is the env's job), or an :class:`ActionError`.
    """
    call = _decode(raw, limits)
    if isinstance(call, ActionError):
        return call
    name, arguments = call.get("name"), call.get("arguments", {})
    if not isinstance(name, str) or not name:
        return ActionError("invalid_action", "The call needs a non-empty string 'name'.")
    if not isinstance(arguments, Mapping):
        return ActionError(
            "invalid_arguments", f"'arguments' must be an object, got {type(arguments).__name__}."
        )
    if name != COMPUTER_USE:
        return ToolCall(name=name, arguments=dict(arguments))
    return _parse_gui(arguments, screen_size, limits)


def _decode(raw: str | Mapping[str, Any], limits: ActionLimits) -> Mapping[str, Any] | ActionError:
    if isinstance(raw, Mapping):
        try:
            size = len(json.dumps(raw, default=str))
        except (TypeError, ValueError) as exc:
            return ActionError("invalid_json", f"The action is not JSON-serialisable: {exc}.")
        if size > limits.max_payload_chars:
            return _too_large(size, limits)
        return raw
    if not isinstance(raw, str):
        return ActionError(
            "invalid_json", f"An action is a JSON string or an object, got {type(raw).__name__}."
        )
    if len(raw) > limits.max_payload_chars:
        return _too_large(len(raw), limits)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return ActionError("invalid_json", f"The action is not valid JSON: {exc.msg} at char {exc.pos}.")
    if not isinstance(value, Mapping):
        return ActionError("invalid_json", f"The action must be a JSON object, got {type(value).__name__}.")
    return value


def _too_large(size: int, limits: ActionLimits) -> ActionError:
    return ActionError(
        "payload_too_large",
        f"The action has {size} characters; the limit is {limits.max_payload_chars}.",
        {"size": size, "limit": limits.max_payload_chars},
    )


def _parse_gui(
    arguments: Mapping[str, Any], screen_size: tuple[int, int], limits: ActionLimits
) -> GuiAction | ActionError:
    action = arguments.get("action")
    if action not in COMPUTER_USE_ACTIONS:
        known = ", ".join(COMPUTER_USE_ACTIONS)
        return ActionError(
            "unknown_action",
            f"Unknown computer_use action {action!r}. Known: {known}.",
            {"action": str(action)},
        )
    spec = COMPUTER_USE_ACTIONS[action]
    frame_id = arguments.get("frame_id")
    if frame_id is not None and (isinstance(frame_id, bool) or not isinstance(frame_id, int)):
        return ActionError("invalid_arguments", f"'frame_id' must be an integer, got {frame_id!r}.")
    allowed = {"action", "frame_id", *spec.required, *spec.optional}
    extra = sorted(set(arguments) - allowed)
    if extra:
        return ActionError(
            "invalid_arguments",
            f"{action} does not take {extra}; it takes {sorted(set(spec.required) | set(spec.optional))}.",
        )
    checked: dict[str, Any] = {}
    for arg, kind in [*spec.required.items(), *spec.optional.items()]:
        if arg not in arguments:
            if arg in spec.required:
                return ActionError("invalid_arguments", f"{action} needs the argument {arg!r} ({kind}).")
            continue
        value = _check_argument(action, arg, kind, arguments[arg], screen_size, limits)
        if isinstance(value, ActionError):
            return value
        checked[arg] = value
    return GuiAction(action=action, arguments=checked, frame_id=frame_id)


def _check_argument(
    action: str, arg: str, kind: ArgKind, value: Any, screen_size: tuple[int, int], limits: ActionLimits
) -> Any:
    def bad(expected: str) -> ActionError:
        return ActionError(
            "invalid_arguments",
            f"{action}.{arg} must be {expected}, got {_preview(value)}.",
            {"argument": arg},
        )

    if kind == "coordinate":
        if not (isinstance(value, list | tuple) and len(value) == 2):
            return bad("[x, y] in screen pixels")
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
            return bad("two numbers [x, y]")
        x, y = round(value[0]), round(value[1])
        width, height = screen_size
        if not (0 <= x < width and 0 <= y < height):
            return ActionError(
                "out_of_screen",
                f"{action}.{arg} = [{x}, {y}] is outside the {width}x{height} screen.",
                {"argument": arg, "coordinate": [x, y], "screen_size": [width, height]},
            )
        return (x, y)
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            return bad("an integer")
        if abs(value) > limits.max_scroll_pixels:
            return bad(f"at most {limits.max_scroll_pixels} in absolute value")
        return int(value)
    if kind == "number":
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not 0 <= value <= limits.max_wait_seconds
        ):
            return bad(f"a number of seconds in [0, {limits.max_wait_seconds}]")
        return float(value)
    if kind == "text":
        if not isinstance(value, str):
            return bad("a string")
        if len(value) > limits.max_type_chars:
            return ActionError(
                "payload_too_large",
                f"{action}.{arg} has {len(value)} characters; the limit is {limits.max_type_chars}.",
                {"size": len(value), "limit": limits.max_type_chars},
            )
        return value
    if kind == "keys":
        if isinstance(value, str):
            value = [value]
        if not (isinstance(value, list) and value and all(isinstance(k, str) and k for k in value)):
            return bad("a non-empty list of key names")
        if len(value) > limits.max_keys:
            return bad(f"at most {limits.max_keys} keys")
        return tuple(value)
    if kind == "status":
        if value not in TERMINATE_STATUSES:
            return bad(f"one of {list(TERMINATE_STATUSES)}")
        return value
    raise AssertionError(f"unhandled argument kind {kind}")


def _preview(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."

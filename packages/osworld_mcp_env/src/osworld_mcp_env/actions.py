"""Typed actions: one JSON call per step, GUI and tools in the same shape.

The model emits ``{"name": "computer_use", "arguments": {"action": "left_click",
"coordinate": [x, y]}}`` or ``{"name": "libreoffice_calc.set_cell_value",
"arguments": {...}}``. :func:`parse_action` turns a string or dict into a
:class:`GuiAction` or a :class:`ToolCall`, or into an
:class:`~osworld_mcp_env.errors.ActionError` value: bad model output is an
agent mistake, never an exception out of ``env.step``.

The ``computer_use`` vocabulary is Qwen3-VL's. :data:`COMPUTER_USE_ACTIONS` is
its single description: each entry gives the arguments, the text the model
reads, and who carries the action out (:class:`Executor`). The validator here,
the agent's prompt schema and parser (``hybrid_agent``), the guest's ``/gui``
route and its input device (``guest.xinput``) all read this table, and
``tests/osworld_mcp_env/test_action_table.py`` fails when one of them disagrees.

:data:`GUI_ACTIONS` is that vocabulary plus the graphical ``zoom`` of Hybrid Computer
Use (:data:`ZOOM`): the env accepts it always, since it emits no input (the env crops
and upscales the current screen, :mod:`osworld_mcp_env.zoom`), while
:data:`COMPUTER_USE_ACTIONS` stays the published set the OSWorld-MCP study's prompt
and parser offer. Which of the two a model is told about is the agent's choice
(``hybrid_agent``'s ``hcu`` setting offers zoom): a model never told about zoom does
not emit it, and the study's harness refuses it at parse time as before.
The one action outside ``computer_use``'s vocabulary, ``bash``, is checked here
too (:func:`parse_bash`), once the env knows bash is enabled.

The guest imports this module inside the desktop: it uses the standard library
and :mod:`osworld_mcp_env.errors` only.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from osworld_mcp_env.errors import ActionError, ErrorCode

COMPUTER_USE = "computer_use"
BASH = "bash"

ArgKind = Literal["coordinate", "int", "number", "text", "keys", "status", "region", "scale"]


ButtonName = Literal["left", "middle", "right"]


class Executor(StrEnum):
    """Who carries an action out; each kind has one code path.

    * ``input``: the guest's input device emits X events for it (``POST /gui``,
      ``guest.xinput``);
    * ``env``: the env handles it without input events (``wait`` waits for the
      screen to settle, ``zoom`` crops the screen);
    * ``end``: nothing runs; the episode ends (``terminate``, ``answer``).
    """

    INPUT = "input"
    ENV = "env"
    END = "end"


@dataclass(frozen=True)
class Click:
    """How the guest performs a click action: which button, pressed how many times.

    Modifier keys the action accepts (``left_click``'s ``keys``) are held around the clicks.
    """

    button: ButtonName
    count: int = 1


@dataclass(frozen=True)
class ActionSpec:
    """One ``computer_use`` action: its arguments, what it does, and who carries it out.

    Attributes:
        description: The sentence the model reads in the prompt.
        required: Arguments it needs, by name, with their kind.
        optional: Arguments it accepts.
        executor: Who performs it (:class:`Executor`).
        click: For clicks, the button and click count the guest's input device
            uses (a click has one handler there, driven by this field).
    """

    description: str
    required: Mapping[str, ArgKind] = field(default_factory=dict)
    optional: Mapping[str, ArgKind] = field(default_factory=dict)
    executor: Executor = Executor.INPUT
    click: Click | None = None

    def __post_init__(self) -> None:
        if self.click is not None and self.executor is not Executor.INPUT:
            raise ValueError(f"A click is performed by the input executor, not by {self.executor.value!r}.")

    @property
    def ends_episode(self) -> bool:
        """True when the episode ends with this action (the ``end`` executor)."""
        return self.executor is Executor.END


# The one argument of the pointer actions.
_AT_PIXEL: Mapping[str, ArgKind] = {"coordinate": "coordinate"}

COMPUTER_USE_ACTIONS: Mapping[str, ActionSpec] = {
    "key": ActionSpec("Press keys together, e.g. ['ctrl', 's'], then release them.", {"keys": "keys"}),
    "type": ActionSpec("Type a string at the keyboard focus.", {"text": "text"}),
    "mouse_move": ActionSpec("Move the pointer to a pixel.", _AT_PIXEL),
    "left_click": ActionSpec("Left-click at a pixel.", _AT_PIXEL, {"keys": "keys"}, click=Click("left")),
    "right_click": ActionSpec("Right-click at a pixel.", _AT_PIXEL, click=Click("right")),
    "middle_click": ActionSpec("Middle-click at a pixel.", _AT_PIXEL, click=Click("middle")),
    "double_click": ActionSpec("Double-click at a pixel.", _AT_PIXEL, click=Click("left", 2)),
    "triple_click": ActionSpec(
        "Triple-click at a pixel (selects a line).", _AT_PIXEL, click=Click("left", 3)
    ),
    "left_click_drag": ActionSpec(
        "Press the left button at start_coordinate (default: the pointer) and release it at coordinate.",
        _AT_PIXEL,
        {"start_coordinate": "coordinate"},
    ),
    "scroll": ActionSpec(
        "Scroll vertically by `pixels` (positive up, negative down), at coordinate if given.",
        {"pixels": "int"},
        _AT_PIXEL,
    ),
    "hscroll": ActionSpec(
        "Scroll horizontally by `pixels` (positive right, negative left), at coordinate if given.",
        {"pixels": "int"},
        _AT_PIXEL,
    ),
    "wait": ActionSpec(
        "Wait `time` seconds for the screen to change.", {"time": "number"}, executor=Executor.ENV
    ),
    "terminate": ActionSpec(
        "End the task, reporting success or failure.", {"status": "status"}, executor=Executor.END
    ),
    "answer": ActionSpec("End the task with a text answer.", {"text": "text"}, executor=Executor.END),
}


ZOOM = "zoom"

GUI_ACTIONS: Mapping[str, ActionSpec] = {
    **COMPUTER_USE_ACTIONS,
    ZOOM: ActionSpec(
        "Look closer without input: the next screenshot shows `region` [x1, y1, x2, y2] (two corner "
        "pixels, both included) enlarged `scale` times (default: as large as fits) at its top left; "
        "coordinates you give on it are mapped back to the screen, for the next action only.",
        {"region": "region"},
        {"scale": "scale"},
        executor=Executor.ENV,
    ),
}
"""Every ``computer_use`` action the env carries out: Qwen3-VL's and the graphical zoom."""


def actions_by(executor: Executor) -> frozenset[str]:
    """The names of the actions ``executor`` carries out."""
    return frozenset(name for name, spec in GUI_ACTIONS.items() if spec.executor is executor)


# What the guest's /gui route accepts and its input device performs.
INPUT_ACTIONS = actions_by(Executor.INPUT)
# The actions after which the episode is over.
TERMINAL_ACTIONS = actions_by(Executor.END)

TERMINATE_STATUSES = ("success", "failure")


def cited_points(action: str, arguments: Mapping[str, Any]) -> list[tuple[int, int]]:
    """The screen points an action's input goes to: its ``coordinate``-kind arguments, as given.

    The stale-frame guard checks these against the cited frame's layout
    (``guest.layout.stale_reasons``). Arguments that are not two numbers are skipped:
    the validator refuses them before any guard runs.
    """
    spec = GUI_ACTIONS.get(action)
    if spec is None:
        return []
    points = []
    for arg, kind in [*spec.required.items(), *spec.optional.items()]:
        value = arguments.get(arg)
        if kind != "coordinate" or not isinstance(value, list | tuple) or len(value) != 2:
            continue
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
            points.append((round(value[0]), round(value[1])))
    return points


@dataclass(frozen=True)
class ActionLimits:
    """Bounds that keep one action from hurting the desktop or the host.

    Attributes:
        max_payload_chars: Longest accepted action string (or its JSON form).
        max_type_chars: Longest text for ``type`` (native speed in a plain X client,
            ~7-10 ms a character in LibreOffice Writer).
        max_keys: Most keys pressed together in one ``key`` action.
        max_wait_seconds: Longest ``wait``.
        max_scroll_pixels: Largest absolute ``pixels`` for a scroll.
        max_depth: Deepest nesting of objects and arrays in one action (the call
            itself is level 1, its ``arguments`` level 2).
        max_zoom_scale: Largest ``zoom`` factor: past 8 a screen pixel is a block wider
            than most glyphs, and nothing more can be read.
    """

    max_payload_chars: int = 65_536
    max_type_chars: int = 4_000
    max_keys: int = 8
    max_wait_seconds: float = 30.0
    max_scroll_pixels: int = 10_000
    max_depth: int = 32
    max_zoom_scale: int = 8


@dataclass(frozen=True)
class GuiAction:
    """A validated ``computer_use`` action in screen pixels.

    Attributes:
        action: One of :data:`GUI_ACTIONS`.
        arguments: The validated arguments, ``action`` excluded; coordinates are int tuples
            (a zoom's ``region`` four ints, its ``scale`` resolved to the factor used).
        frame_id: The frame the coordinates were read from, when the agent cites it.
    """

    action: str
    arguments: Mapping[str, Any]
    frame_id: int | None = None

    @property
    def ends_episode(self) -> bool:
        """True for the actions that end the episode (:data:`TERMINAL_ACTIONS`)."""
        return GUI_ACTIONS[self.action].ends_episode

    def to_call(self) -> dict[str, Any]:
        """Returns the JSON call form (the shape the model emitted)."""
        args: dict[str, Any] = {"action": self.action}
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

# ``bash``'s timeout when the call names none, and the longest it may ask for (seconds).
BASH_DEFAULT_TIMEOUT_S = 30
BASH_MAX_TIMEOUT_S = 300
# The largest coordinate grid a ``bash`` call may ask pyautogui to use.
BASH_MAX_PYAUTOGUI_GRID = 100_000


@dataclass(frozen=True)
class BashCommand:
    """A validated ``bash`` call: a shell command run as the desktop user.

    Attributes:
        command: The shell command line (non-empty).
        timeout: Seconds it may run, in (0, :data:`BASH_MAX_TIMEOUT_S`]; as the call gave it.
        pyautogui_grid: When set (the call's optional ``pyautogui_grid``, e.g. HybridCUA's 999),
            pyautogui inside this command takes positions on the grid ``0..pyautogui_grid``
            and scales them to the screen (``guest/coordinate_grid``); ``None``: pixels.
    """

    command: str
    timeout: float
    pyautogui_grid: int | None = None


def parse_bash(call: ToolCall) -> BashCommand | ActionError:
    """Checks a ``bash`` call's arguments, or returns the agent's mistake as a value.

    :func:`parse_action` leaves ``bash`` a plain :class:`ToolCall`: whether the name
    is a tool at all depends on the env's ``enable_bash`` (off: ``unknown_tool``),
    so the env checks the arguments here once it knows bash runs.
    """
    command = call.arguments.get("command")
    timeout = call.arguments.get("timeout", BASH_DEFAULT_TIMEOUT_S)
    if not isinstance(command, str) or not command.strip():
        return ActionError(ErrorCode.INVALID_ARGUMENTS, "bash needs a non-empty string 'command'.")
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 < timeout <= BASH_MAX_TIMEOUT_S
    ):
        return ActionError(
            ErrorCode.INVALID_ARGUMENTS,
            f"bash 'timeout' must be a number of seconds in (0, {BASH_MAX_TIMEOUT_S}].",
        )
    grid = call.arguments.get("pyautogui_grid")
    if grid is not None and (
        isinstance(grid, bool) or not isinstance(grid, int) or not 1 <= grid <= BASH_MAX_PYAUTOGUI_GRID
    ):
        return ActionError(
            ErrorCode.INVALID_ARGUMENTS,
            f"bash 'pyautogui_grid' must be an integer in [1, {BASH_MAX_PYAUTOGUI_GRID}] (HybridCUA: 999).",
        )
    return BashCommand(command=command, timeout=timeout, pyautogui_grid=grid)


def parse_action(
    raw: str | Mapping[str, Any],
    screen_size: tuple[int, int],
    limits: ActionLimits = ActionLimits(),
) -> Action | ActionError:
    """Validates one action call and returns it typed, or the agent's mistake as a value.

    Whatever ``raw`` holds, this returns: a mapping is first normalised through
    strict JSON (so the checks below only ever see dicts, lists, strings, finite
    numbers, booleans and None), and each way a payload can be unfit is one
    :class:`~osworld_mcp_env.errors.ErrorCode`.

    Args:
        raw: The call as JSON text or a mapping ``{"name": ..., "arguments": {...}}``.
        screen_size: (width, height); coordinates outside it are refused.
        limits: Size bounds.

    Returns:
        A :class:`GuiAction`, a :class:`ToolCall` (not yet checked against a tool
        catalog: that is the env's job), or an :class:`ActionError`.
    """
    call = decode_json_object(raw, limits)
    if isinstance(call, ActionError):
        return call
    name, arguments = call.get("name"), call.get("arguments", {})
    if not isinstance(name, str) or not name:
        return ActionError(ErrorCode.INVALID_ACTION, "The call needs a non-empty string 'name'.")
    if not isinstance(arguments, dict):
        return ActionError(
            ErrorCode.INVALID_ARGUMENTS, f"'arguments' must be an object, got {_json_type(arguments)}."
        )
    if name != COMPUTER_USE:
        return ToolCall(name=name, arguments=arguments)
    return _parse_gui(arguments, screen_size, limits)


class _Refused(ValueError):
    """A JSON value that strict JSON cannot carry (raised from the decoder's hooks)."""


def _refuse_constant(token: str) -> Any:
    raise _Refused(f"{token} is not a JSON number")


def _finite_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise _Refused(f"the number {token[:40]} is outside the range of a double")
    return value


def _mapping_as_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def decode_json_object(raw: Any, limits: ActionLimits) -> dict[str, Any] | ActionError:
    """Turns JSON text or a mapping into a plain dict of strict JSON values, or an error value.

    Refused as ``invalid_json``: text that does not parse, a value that is not an
    object, NaN and Infinity (not JSON; ``1e400`` overflows to one), integers past
    Python's digit limit, nesting deeper than ``limits.max_depth``, and strings or
    keys holding lone surrogates (not Unicode: the UTF-8 encoders downstream would
    fail on them). Longer than ``limits.max_payload_chars``: ``payload_too_large``.
    """
    if isinstance(raw, Mapping):
        try:
            # Round trip: mixed key types become strings, tuples lists, and what JSON
            # cannot carry fails here rather than in a validator or on the wire.
            text = json.dumps(raw, default=_mapping_as_dict, allow_nan=True)
        except (TypeError, ValueError, RecursionError) as exc:
            return ActionError(ErrorCode.INVALID_JSON, f"The action is not JSON-serialisable: {_cut(exc)}.")
    elif isinstance(raw, str):
        text = raw
    else:
        return ActionError(
            ErrorCode.INVALID_JSON, f"An action is a JSON string or an object, got {type(raw).__name__}."
        )
    if len(text) > limits.max_payload_chars:
        return _too_large(len(text), limits)
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        return ActionError(
            ErrorCode.INVALID_JSON, f"The action is not valid JSON: {exc.msg} at char {exc.pos}."
        )
    except _Refused as exc:
        return ActionError(ErrorCode.INVALID_JSON, f"The action is not strict JSON: {exc}.")
    except ValueError as exc:  # an integer literal past Python's digit limit
        return ActionError(ErrorCode.INVALID_JSON, f"The action holds an unreadable number: {_cut(exc)}.")
    except RecursionError:
        return _too_deep(limits)
    if not isinstance(value, dict):
        return ActionError(
            ErrorCode.INVALID_JSON, f"The action must be a JSON object, got {_json_type(value)}."
        )
    return _check_values(value, limits) or value


def _check_values(value: dict[str, Any], limits: ActionLimits) -> ActionError | None:
    """Walks the decoded tree (iteratively) for excess depth and lone surrogates."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            if not _is_unicode(node):
                return ActionError(
                    ErrorCode.INVALID_JSON,
                    "The action holds a string with a lone surrogate, which is not Unicode: "
                    f"{_preview(node)}.",
                )
            continue
        if not isinstance(node, dict | list):
            continue
        if depth > limits.max_depth:
            return _too_deep(limits)
        children = [*node.keys(), *node.values()] if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children)
    return None


def _is_unicode(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _too_deep(limits: ActionLimits) -> ActionError:
    return ActionError(
        ErrorCode.INVALID_JSON,
        f"The action is nested deeper than {limits.max_depth} levels.",
        {"limit": limits.max_depth},
    )


def _too_large(size: int, limits: ActionLimits) -> ActionError:
    return ActionError(
        ErrorCode.PAYLOAD_TOO_LARGE,
        f"The action has {size} characters; the limit is {limits.max_payload_chars}.",
        {"size": size, "limit": limits.max_payload_chars},
    )


def _json_type(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number"
    )


def _cut(exc: BaseException, limit: int = 200) -> str:
    text = str(exc)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _parse_gui(
    arguments: Mapping[str, Any], screen_size: tuple[int, int], limits: ActionLimits
) -> GuiAction | ActionError:
    action = arguments.get("action")
    if not isinstance(action, str) or action not in GUI_ACTIONS:
        known = ", ".join(GUI_ACTIONS)
        return ActionError(
            ErrorCode.UNKNOWN_ACTION,
            f"Unknown computer_use action {_preview(action)}. Known: {known}.",
            {"action": _preview(action)},
        )
    spec = GUI_ACTIONS[action]
    frame_id = arguments.get("frame_id")
    if frame_id is not None and (isinstance(frame_id, bool) or not isinstance(frame_id, int)):
        return ActionError(
            ErrorCode.INVALID_ARGUMENTS, f"'frame_id' must be an integer, got {_preview(frame_id)}."
        )
    allowed = {"action", "frame_id", *spec.required, *spec.optional}
    extra = sorted(set(arguments) - allowed)
    if extra:
        return ActionError(
            ErrorCode.INVALID_ARGUMENTS,
            f"{action} does not take {_preview(extra)}; "
            f"it takes {sorted(set(spec.required) | set(spec.optional))}.",
        )
    checked: dict[str, Any] = {}
    for arg, kind in [*spec.required.items(), *spec.optional.items()]:
        if arg not in arguments:
            if arg in spec.required:
                return ActionError(
                    ErrorCode.INVALID_ARGUMENTS, f"{action} needs the argument {arg!r} ({kind})."
                )
            continue
        value = _check_argument(action, arg, kind, arguments[arg], screen_size, limits)
        if isinstance(value, ActionError):
            return value
        checked[arg] = value
    if action == ZOOM:
        scale = _check_zoom_scale(checked["region"], checked.get("scale"), screen_size, limits)
        if isinstance(scale, ActionError):
            return scale
        checked["scale"] = scale
    return GuiAction(action=action, arguments=checked, frame_id=frame_id)


def _check_zoom_scale(
    region: tuple[int, int, int, int], scale: int | None, screen_size: tuple[int, int], limits: ActionLimits
) -> int | ActionError:
    """The zoom factor: the one asked, or the largest that fits; the enlarged region must fit the screen.

    The zoomed image is an observation of the screen's size (the observation space is
    fixed), so ``region`` times ``scale`` must fit in it; a factor below 2 enlarges nothing.
    """
    width, height = region[2] - region[0] + 1, region[3] - region[1] + 1
    fits = min(screen_size[0] // width, screen_size[1] // height, limits.max_zoom_scale)
    if scale is None:
        scale = fits
    screen = f"{screen_size[0]}x{screen_size[1]}"
    if fits < 2:
        message = f"{width}x{height} is too large to zoom on the {screen} screen (half its sides at most)."
    elif scale > fits:
        message = f"a {width}x{height} region at {scale}x does not fit the {screen} screen; at most {fits}x."
    else:
        return scale
    return ActionError(
        ErrorCode.INVALID_ARGUMENTS,
        f"zoom: {message}",
        {"argument": "scale", "region": list(region), "max_scale": max(fits, 0)},
    )


def _check_argument(
    action: str, arg: str, kind: ArgKind, value: Any, screen_size: tuple[int, int], limits: ActionLimits
) -> Any:
    def bad(expected: str) -> ActionError:
        return ActionError(
            ErrorCode.INVALID_ARGUMENTS,
            f"{action}.{arg} must be {expected}, got {_preview(value)}.",
            {"argument": arg},
        )

    if kind == "coordinate":
        if not (isinstance(value, list) and len(value) == 2):
            return bad("[x, y] in screen pixels")
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
            return bad("two numbers [x, y]")
        x, y = round(value[0]), round(value[1])
        width, height = screen_size
        if not (0 <= x < width and 0 <= y < height):
            return ActionError(
                ErrorCode.OUT_OF_SCREEN,
                f"{action}.{arg} = {_preview([x, y])} is outside the {width}x{height} screen.",
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
                ErrorCode.PAYLOAD_TOO_LARGE,
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
    if kind == "region":
        if not (isinstance(value, list) and len(value) == 4):
            return bad("[x1, y1, x2, y2]: the top-left and bottom-right pixels")
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
            return bad("four numbers [x1, y1, x2, y2]")
        x1, y1, x2, y2 = (round(v) for v in value)
        width, height = screen_size
        if not (0 <= x1 < x2 < width and 0 <= y1 < y2 < height):
            return ActionError(
                ErrorCode.INVALID_ARGUMENTS if x1 >= x2 or y1 >= y2 else ErrorCode.OUT_OF_SCREEN,
                f"{action}.{arg} = {_preview([x1, y1, x2, y2])} must have x1 < x2 and y1 < y2, "
                f"inside the {width}x{height} screen.",
                {"argument": arg, "region": [x1, y1, x2, y2], "screen_size": [width, height]},
            )
        return (x1, y1, x2, y2)
    if kind == "scale":
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            return bad("an integer factor")
        if not 2 <= value <= limits.max_zoom_scale:
            return bad(f"an integer in [2, {limits.max_zoom_scale}]")
        return int(value)
    if kind == "status":
        if value not in TERMINATE_STATUSES:
            return bad(f"one of {list(TERMINATE_STATUSES)}")
        return value
    raise AssertionError(f"unhandled argument kind {kind}")


def _preview(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."

"""Provider computer-use vocabularies -> the env's ``computer_use`` actions, and the display they see.

Anthropic's ``computer`` tool and OpenAI's ``computer_use_preview`` tool each have
their own action names and argument shapes. :func:`from_anthropic` and
:func:`from_openai` rewrite one provider action into the arguments of one
``computer_use`` call (Qwen3-VL's set, :data:`osworld_mcp_env.actions.COMPUTER_USE_ACTIONS`)
in the same pixel space; :func:`display_to_screen` then maps its points from the
display the model was shown onto the real screen.

The rewrite does not validate: an action without an env counterpart (Anthropic's
``cursor_position``, ``hold_key``, ``left_mouse_down``; OpenAI's ``back``/``forward``
buttons) keeps its own name, and an argument the env's action lacks keeps its own key,
so the stack's one validator (:func:`hybrid_agent.parse.parse_response`, reading the
env's table) reports it as ``unknown_gui_action`` or ``invalid_arguments`` and the
model is told, with nothing sent to the desktop.

One input is refused rather than rewritten: a ``scroll`` whose ``scroll_amount`` is
negative. The tool's schema counts notches from 0 and takes the direction from
``scroll_direction``, so the sign has no meaning the rewrite may assume (turning it into
the opposite direction would execute a scroll the model never asked for);
:func:`anthropic_refusal` says why, and the rewrite leaves the provider's arguments for
the parser to refuse.

Two rewrites are not one-to-one, and say so here: ``screenshot`` becomes ``wait`` with
``time`` 0 (one step whose observation is the fresh frame), and an OpenAI ``drag``
path keeps its first and last points (the env drags in a straight line).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hybrid_agent.coords import POINT_ARGUMENTS, Size, scale_to_screen

WHEEL_NOTCH_PIXELS = 50
"""Pixels of one wheel notch: the guest turns ``pixels`` into notches of this size
(``osworld_mcp_env.guest.xinput.SCROLL_PIXELS_PER_NOTCH``; a test keeps them equal)."""

SCALING_TARGETS: Mapping[str, Size] = {"XGA": (1024, 768), "WXGA": (1280, 800), "FWXGA": (1366, 768)}
"""Anthropic's recommended screenshot sizes for computer use, by aspect ratio (4:3, 16:10, ~16:9)."""
ASPECT_TOLERANCE = 0.02
"""How far a screen's width/height may be from a target's and still use it (16:9 is 1.778, FWXGA 1.779)."""

_OPENAI_BUTTONS = {"left": "left_click", "right": "right_click", "wheel": "middle_click"}
# OpenAI key names the env's key table does not spell (it lower-cases and knows ctrl, enter, esc ...).
_OPENAI_KEYS = {"arrowup": "up", "arrowdown": "down", "arrowleft": "left", "arrowright": "right"}


def scaled_display(screen: Size, targets: Mapping[str, Size] = SCALING_TARGETS) -> Size:
    """The display size the model is shown: the target of the screen's aspect ratio, else the screen.

    A target is used only when it is smaller than the screen (a screen at or below the
    target goes as it is), as Anthropic's reference implementation does.
    """
    width, height = screen
    for target_width, target_height in targets.values():
        if abs(target_width / target_height - width / height) < ASPECT_TOLERANCE:
            return (target_width, target_height) if target_width < width else screen
    return screen


def display_to_screen(arguments: Mapping[str, Any], display: Size, screen: Size) -> dict[str, Any]:
    """``computer_use`` arguments with every well-formed point mapped from ``display`` onto ``screen``.

    A point that is not two numbers is left as it is for the parser to report.
    """
    out = dict(arguments)
    for key in POINT_ARGUMENTS:
        point = out.get(key)
        if point is not None and _is_point(point):
            out[key] = list(scale_to_screen((float(point[0]), float(point[1])), display, screen))
    return out


def _is_point(value: Any) -> bool:
    return (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    )


def _keys(combo: Any) -> Any:
    """xdotool-style ``"ctrl+shift+t"`` -> ``["ctrl", "shift", "t"]`` (other values go to the parser)."""
    if not isinstance(combo, str) or not combo:
        return combo
    if combo.endswith("+"):  # the "+" key itself: "+" or "ctrl++"
        head = combo[:-1].rstrip("+")
        return [*(head.split("+") if head else []), "plus"]
    return combo.split("+")


def _notches(value: Any) -> bool:
    """A wheel-notch count as Anthropic's schema allows it: an integer >= 0."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def anthropic_refusal(tool_input: Mapping[str, Any]) -> str | None:
    """Why an Anthropic ``computer`` input breaks its schema where a rewrite would guess (else ``None``).

    The message is written for the model: a negative ``scroll_amount`` (the schema says
    >= 0; the direction is ``scroll_direction``'s).
    """
    amount = tool_input.get("scroll_amount")
    if tool_input.get("action") == "scroll" and isinstance(amount, int | float) and amount < 0:
        return (
            f"scroll_amount is a number of wheel notches >= 0, got {amount}; "
            "give the direction with scroll_direction (up, down, left, right)."
        )
    return None


def from_anthropic(tool_input: Mapping[str, Any]) -> dict[str, Any]:
    """One Anthropic ``computer`` tool input -> ``computer_use`` arguments (same pixel space).

    ``key`` ``text`` "ctrl+s" becomes ``keys`` ``["ctrl", "s"]``; a click's modifier ``text``
    becomes ``left_click``'s ``keys``; ``scroll`` ``scroll_direction``/``scroll_amount``
    (wheel notches, >= 0) becomes ``scroll``/``hscroll`` ``pixels``; ``wait`` ``duration``
    becomes ``time``; ``screenshot`` becomes ``wait`` 0. A scroll it cannot rewrite (a
    negative or non-integer amount, an unknown direction) keeps the provider's arguments,
    so the parser refuses it (:func:`anthropic_refusal` gives the precise reason).
    """
    args = dict(tool_input)
    action = args.pop("action", None)
    if action == "screenshot" and not args:
        return {"action": "wait", "time": 0}
    if action == "key" and "text" in args:
        args["keys"] = _keys(args.pop("text"))
        if args.get("repeat") == 1:
            del args["repeat"]
    elif action == "left_click" and "text" in args:
        args["keys"] = _keys(args.pop("text"))
    elif action == "wait" and "duration" in args:
        args["time"] = args.pop("duration")
    elif action == "scroll" and {"scroll_direction", "scroll_amount"} <= args.keys():
        direction, amount = args.pop("scroll_direction"), args.pop("scroll_amount")
        sign = {"up": 1, "down": -1, "right": 1, "left": -1}.get(direction)
        if sign is None or not _notches(amount):
            args.update(scroll_direction=direction, scroll_amount=amount)  # the parser names them
        else:
            action = "hscroll" if direction in ("left", "right") else "scroll"
            args["pixels"] = sign * amount * WHEEL_NOTCH_PIXELS
    return {"action": action, **args}


def from_openai(action: Mapping[str, Any]) -> dict[str, Any]:
    """One OpenAI ``computer_call`` action -> ``computer_use`` arguments (same pixel space).

    ``click`` picks the action by ``button`` (``wheel`` is the middle button); ``x``/``y``
    become ``coordinate``; ``keypress`` ``keys`` are lower-cased (``CTRL`` -> ``ctrl``,
    ``ARROWUP`` -> ``up``); ``scroll`` ``scroll_y`` (positive: down) becomes ``scroll``
    ``pixels`` (positive: up), ``scroll_x`` alone ``hscroll``; ``drag`` keeps the path's
    ends; ``wait`` waits 1 s (the parser's default) and ``screenshot`` 0 s.
    """
    args = dict(action)
    kind = args.pop("type", None)
    if {"x", "y"} <= args.keys():
        args["coordinate"] = [args.pop("x"), args.pop("y")]
    if "keys" in args:
        args["keys"] = _openai_keys(args["keys"])
        if not args["keys"] and kind != "keypress":
            del args["keys"]  # no modifier held
    if kind == "click" and args.get("button") in _OPENAI_BUTTONS:
        kind = _OPENAI_BUTTONS[args.pop("button")]
    elif kind == "keypress":
        kind = "key"
    elif kind == "move":
        kind = "mouse_move"
    elif kind == "screenshot" and not args:
        return {"action": "wait", "time": 0}
    elif kind == "wait" and not args:
        return {"action": "wait", "time": 1}
    elif kind == "drag":
        path = args.pop("path", None)
        ends = [path[0], path[-1]] if isinstance(path, list) and len(path) >= 2 else None
        if ends is None or not all(isinstance(p, Mapping) and {"x", "y"} <= p.keys() for p in ends):
            return {"action": "left_click_drag", **args, "path": path}  # the parser names it
        kind = "left_click_drag"
        args["start_coordinate"] = [ends[0]["x"], ends[0]["y"]]
        args["coordinate"] = [ends[1]["x"], ends[1]["y"]]
    elif kind == "scroll":
        scroll_x, scroll_y = args.pop("scroll_x", 0), args.pop("scroll_y", 0)
        if scroll_x and scroll_y:
            args.update(scroll_x=scroll_x)  # one axis per env action: the parser names the other
        if scroll_y or not scroll_x:
            args["pixels"] = -scroll_y if isinstance(scroll_y, (int, float)) else scroll_y
        else:
            kind = "hscroll"
            args["pixels"] = scroll_x
    return {"action": kind, **args}


def _openai_keys(keys: Any) -> Any:
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        return keys
    return [_OPENAI_KEYS.get(k.lower(), k.lower()) for k in keys]

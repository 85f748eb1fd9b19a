"""CogAgent (9B-20241220): ``Action:`` sentence, then ``Grounded Operation: OP(box=[[x1,y1,x2,y2]], ...)``.

Operations and what they become (``computer_use`` actions; boxes on the ``[0, 1000]``
grid, read as their centres):

==========================================  ======================================
``CLICK`` / ``DOUBLE_CLICK`` / ``RIGHT_CLICK``  ``left_click`` / ``double_click`` / ``right_click``
``HOVER``                                   ``mouse_move``
``TYPE(box=..., text='...')``               ``type`` at the focus (repair ``type_box_unused``:
                                            one call per step, so the box is not clicked)
``SCROLL_UP/DOWN/LEFT/RIGHT(step_count=n)`` ``scroll`` / ``hscroll`` by n notches (default 5)
``KEY_PRESS(key='Ctrl+S')``                 ``key``
``GESTURE(actions=[KEY_DOWN(key=m), ...,   one ``key`` combination ``[m, ..., k]``
KEY_PRESS(key=k), KEY_UP(key=m), ...])``
``WAIT()``                                  ``wait`` 5 s
``END()``                                   ``terminate(success)``
==========================================  ======================================

Key names are CogAgent's (its action-space document lists the Windows and macOS
names): ``Lcontrol``/``Rcontrol``, ``Lmenu``/``Rmenu`` (Alt), ``Lshift``/``Rshift``,
``Control``, ``Command``, ``Up Arrow`` ... become the env's ``ctrl``, ``alt``, ``shift``,
``cmd``, ``up`` ...; a combination is a ``GESTURE`` (its documented Ctrl+F is
``GESTURE(actions=[KEY_DOWN(key='Lcontrol'), KEY_PRESS(key='F'), KEY_UP(key='Lcontrol')])``).
A gesture is one env action only when it is one chord: the held keys go down, one key
is pressed, and exactly the held keys come up; any other sequence (two presses, a key
left down, a release of a key never pressed) is ``invalid_arguments``.

Operations with no desktop counterpart here (``LAUNCH``, ``QUOTE_TEXT``, ``LLM``) are
``unknown_gui_action``. A trailing sensitivity tag (``<<...>>``) is ignored. The family
drives the GUI only: no MCP tools are offered.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from hybrid_agent.adapters.base import ModelAdapter, register_adapter
from hybrid_agent.adapters.calls import (
    NOTCH_PIXELS,
    CodeCall,
    gui_action,
    parse_code_call,
    point_of,
    split_keys,
    with_think,
)
from hybrid_agent.coords import CoordinateConfig, CoordinatePolicy, Size
from hybrid_agent.parse import ParseError, ParseErrorCode, ParseResult, extract_action_line, split_think
from hybrid_agent.prompt import PromptConfig
from hybrid_agent.toolset import ToolSpec

_OPERATION = re.compile(r"^[ \t]*Grounded Operation:[ \t]*(.+?)[ \t]*$", re.MULTILINE)
_SENSITIVITY = re.compile(r"<<[^<>]*>>\s*$")
DEFAULT_STEPS = 5
WAIT_S = 5.0

_POINTED = {
    "CLICK": "left_click",
    "DOUBLE_CLICK": "double_click",
    "RIGHT_CLICK": "right_click",
    "HOVER": "mouse_move",
}
_SCROLLS = {"SCROLL_UP": ("scroll", 1), "SCROLL_DOWN": ("scroll", -1), "SCROLL_RIGHT": ("hscroll", 1)}
_SCROLLS["SCROLL_LEFT"] = ("hscroll", -1)


# CogAgent's documented key names (Windows and macOS columns) that the env spells otherwise.
_KEY_NAMES = {
    "lcontrol": "ctrl", "rcontrol": "rctrl", "control": "ctrl", "right control": "rctrl",
    "lmenu": "alt", "rmenu": "ralt", "lshift": "shift", "rshift": "rshift", "right shift": "rshift",
    "command": "cmd", "right command": "cmd",
    "up arrow": "up", "down arrow": "down", "left arrow": "left", "right arrow": "right",
}  # fmt: skip
_GESTURE_STEPS = ("KEY_DOWN", "KEY_PRESS", "KEY_UP")


def _key_name(value: Any) -> str | None:
    """One CogAgent key name in the env's spelling (``None`` when it is not a name)."""
    if not isinstance(value, str) or not value.strip():
        return None
    name = value.strip()
    return _KEY_NAMES.get(name.lower(), name)


def _key_press(value: Any) -> dict[str, Any] | ParseError:
    # A whole documented name ("Right Control") first; else a combination written "Ctrl+S".
    name = _key_name(value)
    if name is not None and name != str(value).strip():
        return {"action": "key", "keys": [name]}
    keys = split_keys(value)
    if isinstance(keys, ParseError):
        return keys
    return {"action": "key", "keys": [_KEY_NAMES.get(k.lower(), k) for k in keys]}


def _gesture(call: CodeCall) -> dict[str, Any] | ParseError:
    """``GESTURE(actions=[KEY_DOWN.., KEY_PRESS, KEY_UP..])`` as one ``key`` chord."""
    steps = call.kwargs.get("actions")
    if not isinstance(steps, list) or not steps:
        return ParseError(
            ParseErrorCode.MISSING_ARGUMENTS,
            "GESTURE needs actions=[KEY_DOWN(key=...), KEY_PRESS(key=...), KEY_UP(key=...)].",
        )
    held: list[str] = []
    pressed: list[str] = []
    released: list[str] = []
    for step in steps:
        name = _key_name(step.kwargs.get("key")) if isinstance(step, CodeCall) else None
        if not isinstance(step, CodeCall) or step.name not in _GESTURE_STEPS or name is None:
            shown = f"{step.name}(...)" if isinstance(step, CodeCall) else repr(step)
            return ParseError(
                ParseErrorCode.INVALID_ARGUMENTS,
                f"Each GESTURE action is KEY_DOWN, KEY_PRESS or KEY_UP with a key='...', got {shown}.",
            )
        if step.name == "KEY_DOWN" and not pressed and not released:
            held.append(name)
        elif step.name == "KEY_PRESS" and not pressed and not released:
            pressed.append(name)
        elif step.name == "KEY_UP" and pressed:
            released.append(name)
        else:
            return _not_a_chord()
    if not pressed or sorted(released) != sorted(held):
        return _not_a_chord()
    keys = split_keys([*held, *pressed])  # the env's spelling, as KEY_PRESS's keys
    return keys if isinstance(keys, ParseError) else {"action": "key", "keys": keys}


def _not_a_chord() -> ParseError:
    return ParseError(
        ParseErrorCode.INVALID_ARGUMENTS,
        "A GESTURE here is one key combination: KEY_DOWN each held key, one KEY_PRESS, then KEY_UP "
        "each held key, e.g. GESTURE(actions=[KEY_DOWN(key='Lcontrol'), KEY_PRESS(key='C'), "
        "KEY_UP(key='Lcontrol')]).",
    )


def _box(call: CodeCall) -> list[float] | ParseError:
    if "box" not in call.kwargs:
        return ParseError(ParseErrorCode.MISSING_ARGUMENTS, f"{call.name} needs box=[[x1,y1,x2,y2]].")
    return point_of(call.kwargs["box"], f"{call.name}'s box")


def to_arguments(call: CodeCall, repairs: list[str]) -> dict[str, Any] | ParseError:
    """The ``computer_use`` arguments of one CogAgent operation (model space)."""
    name = call.name
    if name in _POINTED:
        point = _box(call)
        return point if isinstance(point, ParseError) else {"action": _POINTED[name], "coordinate": point}
    if name == "TYPE":
        text = call.kwargs.get("text")
        if not isinstance(text, str):
            return ParseError(ParseErrorCode.MISSING_ARGUMENTS, "TYPE needs text='...'.")
        if "box" in call.kwargs:
            repairs.append("type_box_unused")
        return {"action": "type", "text": text}
    if name in _SCROLLS:
        action, sign = _SCROLLS[name]
        steps = call.kwargs.get("step_count", DEFAULT_STEPS)
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            return ParseError(
                ParseErrorCode.INVALID_ARGUMENTS, f"step_count must be an integer >= 1, got {steps!r}."
            )
        arguments: dict[str, Any] = {"action": action, "pixels": sign * steps * NOTCH_PIXELS}
        if "box" in call.kwargs:
            point = _box(call)
            if isinstance(point, ParseError):
                return point
            arguments["coordinate"] = point
        return arguments
    if name == "KEY_PRESS":
        return _key_press(call.kwargs.get("key", ""))
    if name == "GESTURE":
        return _gesture(call)
    if name == "WAIT":
        return {"action": "wait", "time": WAIT_S}
    if name == "END":
        return {"action": "terminate", "status": "success"}
    known = [*_POINTED, "TYPE", *_SCROLLS, "KEY_PRESS", "GESTURE", "WAIT", "END"]
    return ParseError(
        ParseErrorCode.UNKNOWN_GUI_ACTION, f"No operation {name!r} here. Valid: {', '.join(known)}."
    )


@register_adapter("cogagent")
class CogAgentAdapter(ModelAdapter):
    """CogAgent-9B: ``Grounded Operation: CLICK(box=[[x1,y1,x2,y2]], ...)`` on the ``[0, 1000]`` grid."""

    family = "CogAgent-9B-20241220"
    default_coordinates = CoordinateConfig(policy=CoordinatePolicy.RELATIVE_GRID, grid=1000)

    def system_prompt(self, tools: Sequence[ToolSpec], screen: Size, config: PromptConfig) -> str:
        """CogAgent's answer layout (its ``Action-Operation`` format) and its operations."""
        width, height = self.space(screen)
        return (
            f"{config.preamble}\n\n"
            "Answer with two lines:\nAction: one sentence saying what you do next.\n"
            "Grounded Operation: one operation, boxes as [[x1,y1,x2,y2]] on a "
            f"{width}x{height} grid over the screenshot.\n\n"
            "Operations: CLICK(box=..., element_type='...', element_info='...'), DOUBLE_CLICK(box=...), "
            "RIGHT_CLICK(box=...), HOVER(box=...), TYPE(box=..., text='...'), "
            "SCROLL_DOWN(box=..., step_count=n), SCROLL_UP(...), SCROLL_LEFT(...), SCROLL_RIGHT(...), "
            "KEY_PRESS(key='Return'), "
            "GESTURE(actions=[KEY_DOWN(key='Lcontrol'), KEY_PRESS(key='C'), KEY_UP(key='Lcontrol')]), "
            "WAIT(), END()."
        )

    def parse_text(self, text: str, tools: Sequence[ToolSpec]) -> ParseResult:
        """Reads the ``Grounded Operation:`` line; the ``Action:`` line is the step's summary."""
        think, rest = split_think(text)
        found = _OPERATION.search(rest)
        if found is None:
            return ParseError(
                ParseErrorCode.NO_TOOL_CALL, "Give one line 'Grounded Operation: OP(...)'.", think
            )
        call = parse_code_call(_SENSITIVITY.sub("", found.group(1)), nested=True)
        if isinstance(call, ParseError):
            return with_think(call, think)
        repairs: list[str] = []
        arguments = to_arguments(call, repairs)
        if isinstance(arguments, ParseError):
            return with_think(arguments, think)
        return gui_action(arguments, think, extract_action_line(rest), repairs)

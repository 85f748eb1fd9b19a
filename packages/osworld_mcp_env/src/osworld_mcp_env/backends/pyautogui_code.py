"""``computer_use`` input actions as the pyautogui code OSWorld's host sends to ``/execute``.

OSWorld's guest server has no input route: its controller runs
``python -c "import pyautogui; import time; pyautogui.FAILSAFE = False; <code>"``
through ``POST /execute`` for every GUI action. :func:`pyautogui_command` builds that
command for one validated action of :data:`~osworld_mcp_env.actions.COMPUTER_USE_ACTIONS`
(pixel coordinates), with the same meaning as the hybrid guest's XTest input
(``guest/xinput.py``): clicks with held modifier keys, one scroll notch per 50 pixels.

pyautogui drops what it cannot type without a word (a key name it does not know, a
character outside its keymap). Such input is refused here, before anything is sent,
as :class:`~osworld_mcp_env.errors.InputRejected`: the agent learns its action did
nothing instead of seeing an unchanged screen.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from osworld_mcp_env.actions import COMPUTER_USE_ACTIONS, Executor
from osworld_mcp_env.errors import InputRejected

# OSWorld's controller's prefix (``PythonController.pkgs_prefix``), so input behaves as there.
PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; "
ENDPOINT = "/execute"
# As the hybrid guest (guest/xinput.py): X has no pixel scrolling, one button press is a notch.
SCROLL_PIXELS_PER_NOTCH = 50
# pyautogui moves in steps over this time, so that toolkits see a drag, not a teleport.
DRAG_SECONDS = 0.5

# Model key names (the spellings guest/xinput.py accepts) -> pyautogui's X11 key names.
KEY_NAMES: Mapping[str, str] = {
    "ctrl": "ctrl", "control": "ctrl", "lctrl": "ctrlleft", "rctrl": "ctrlright",
    "alt": "alt", "lalt": "altleft", "ralt": "altright",
    "shift": "shift", "lshift": "shiftleft", "rshift": "shiftright",
    "super": "win", "win": "win", "meta": "win", "cmd": "win", "command": "win",
    "enter": "enter", "return": "enter", "esc": "esc", "escape": "esc", "tab": "tab",
    "backspace": "backspace", "delete": "delete", "del": "delete", "insert": "insert", "ins": "insert",
    "home": "home", "end": "end", "pageup": "pageup", "page_up": "pageup", "pgup": "pageup",
    "pagedown": "pagedown", "page_down": "pagedown", "pgdn": "pagedown", "up": "up", "down": "down",
    "left": "left", "right": "right", "space": "space", "capslock": "capslock", "menu": "apps",
    "printscreen": "printscreen", "print": "printscreen", "numlock": "numlock", "pause": "pause",
    "minus": "-", "plus": "+", "comma": ",", "period": ".", "slash": "/",
    "backslash": "\\", "semicolon": ";", "equal": "=",
}  # fmt: skip
FUNCTION_KEYS = frozenset(f"f{n}" for n in range(1, 25))
# What pyautogui's X11 keymap types: printable ASCII, newline and tab (the space is printable).
TYPABLE = frozenset(string.printable) - set("\r\x0b\x0c")
BUTTONS = ("left", "middle", "right")


def pyautogui_key(name: str) -> str:
    """The pyautogui name of one model key name (``ctrl``, ``Return``, ``a``, ``F5``).

    Raises:
        InputRejected: pyautogui has no such key (it would press nothing).
    """
    if len(name) == 1 and name in TYPABLE:
        return name
    lowered = name.lower()
    if lowered in KEY_NAMES:
        return KEY_NAMES[lowered]
    if lowered in FUNCTION_KEYS:
        return lowered
    raise _rejected(f"Unknown key name {name!r}: pyautogui has no such key.")


def pyautogui_command(action: str, arguments: Mapping[str, Any]) -> list[str]:
    """The ``/execute`` command that performs one ``computer_use`` input action.

    Args:
        action: An input action of :data:`COMPUTER_USE_ACTIONS` (not ``wait``,
            ``terminate`` or ``answer``, which the env handles).
        arguments: Its validated arguments (pixel coordinates).

    Raises:
        InputRejected: The action is no input action, or names a key or text
            pyautogui cannot produce; nothing was sent.
    """
    return ["python", "-c", PREFIX + pyautogui_code(action, arguments)]


def pyautogui_code(action: str, arguments: Mapping[str, Any]) -> str:
    """The pyautogui statements of one ``computer_use`` input action (``pyautogui`` imported by the caller).

    Positions are written as given: screen pixels for :func:`pyautogui_command`; a
    caller that runs the code under a coordinate grid (the bash channel's
    ``pyautogui_grid``) passes grid positions. ``hybrid_agent.rewrite`` writes
    recorded GUI steps this way, so both routes type and click the same.

    Raises:
        InputRejected: As :func:`pyautogui_command`.
    """
    build = _CODE.get(action)
    if build is None:
        raise _rejected(f"{action!r} is not an input action; known: {sorted(_CODE)}.")
    try:
        return build(arguments)
    except (KeyError, TypeError, ValueError) as exc:
        raise _rejected(f"Bad arguments for {action!r}: {exc!r}.") from exc


def _xy(coordinate: Sequence[Any]) -> str:
    x, y = coordinate
    return f"x={int(x)}, y={int(y)}"


def _keys(names: Sequence[str]) -> list[str]:
    if isinstance(names, str):
        raise TypeError("keys must be a list of key names")
    return [pyautogui_key(str(n)) for n in names]


def _held(keys: list[str], code: str) -> str:
    """``code`` run with ``keys`` held down, released (in reverse) even when it fails."""
    if not keys:
        return code
    down = "; ".join(f"pyautogui.keyDown({k!r})" for k in keys)
    up = "; ".join(f"pyautogui.keyUp({k!r})" for k in reversed(keys))
    return f"{down}\ntry:\n    {code}\nfinally:\n    {up}"


def _click(button: str, clicks: int) -> Callable[[Mapping[str, Any]], str]:
    def code(args: Mapping[str, Any]) -> str:
        at = _xy(args["coordinate"])
        click = f"pyautogui.click({at}, clicks={clicks}, interval=0.05, button={button!r})"
        return _held(_keys(args.get("keys", ())), click)

    return code


def _type(args: Mapping[str, Any]) -> str:
    text = args["text"]
    if not isinstance(text, str):
        raise TypeError("text must be a string")
    missing = sorted(set(text) - TYPABLE)
    if missing:
        raise _rejected(
            f"pyautogui types printable ASCII only; the text has {''.join(missing)[:20]!r}. "
            "Nothing was typed."
        )
    return f"pyautogui.write({text!r})"


def _drag(args: Mapping[str, Any]) -> str:
    start = args.get("start_coordinate")
    move = f"pyautogui.moveTo({_xy(start)}); " if start else ""
    return f"{move}pyautogui.dragTo({_xy(args['coordinate'])}, duration={DRAG_SECONDS}, button='left')"


def _scroll(function: str) -> Callable[[Mapping[str, Any]], str]:
    def code(args: Mapping[str, Any]) -> str:
        pixels = int(args["pixels"])
        notches = max(1, round(abs(pixels) / SCROLL_PIXELS_PER_NOTCH)) if pixels else 0
        at = f", {_xy(args['coordinate'])}" if "coordinate" in args else ""
        return f"pyautogui.{function}({notches if pixels >= 0 else -notches}{at})"

    return code


_NAMED: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "key": lambda args: f"pyautogui.hotkey(*{_keys(args['keys'])!r})",
    "type": _type,
    "mouse_move": lambda args: f"pyautogui.moveTo({_xy(args['coordinate'])})",
    "left_click_drag": _drag,
    # pyautogui on X11: positive scrolls up (button 4) and right (button 7), as the table says.
    "scroll": _scroll("scroll"),
    "hscroll": _scroll("hscroll"),
}


def _build_code_table() -> dict[str, Callable[[Mapping[str, Any]], str]]:
    """One builder per input action of the table: clicks from their ``Click``, the others by name.

    Raises:
        ValueError: The table and this module disagree (checked at import).
    """
    table = dict(_NAMED)
    for name, spec in COMPUTER_USE_ACTIONS.items():
        if spec.click is not None:
            if spec.click.button not in BUTTONS:
                raise ValueError(f"{name}: pyautogui has no {spec.click.button!r} button.")
            table[name] = _click(spec.click.button, spec.click.count)
    wanted = {n for n, s in COMPUTER_USE_ACTIONS.items() if s.executor is Executor.INPUT}
    if set(table) != wanted:
        raise ValueError(f"pyautogui code and the action table disagree: {sorted(set(table) ^ wanted)}.")
    return table


def _rejected(message: str) -> InputRejected:
    # 400: the status the hybrid guest's ``/gui`` refuses the same input with.
    return InputRejected(ENDPOINT, 400, message, {"input_events_emitted": False})


_CODE = _build_code_table()

"""GUI input through the XTest extension: one X request per event, no process spawns.

Performs the ``computer_use`` actions whose executor is ``input`` in
:data:`osworld_mcp_env.actions.COMPUTER_USE_ACTIONS`, with pixel coordinates
already validated by the host. :data:`HANDLERS` maps each of them to its method:
clicks to one handler driven by the table's :class:`~osworld_mcp_env.actions.Click`,
the others by name here; importing this module fails when the two disagree.
Characters missing from the keymap are typed by binding their keysym to a spare
keycode for the keystroke, as xdotool does.
"""

from __future__ import annotations

import functools
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from Xlib import XK, X
from Xlib.ext import xtest

from osworld_mcp_env.actions import COMPUTER_USE_ACTIONS, ActionSpec, Click, Executor
from osworld_mcp_env.guest.xdisplay import XConnection

# Model key names (Qwen3-VL, pyautogui, xdotool spellings) -> X keysym names.
KEY_ALIASES: Mapping[str, str] = {
    "ctrl": "Control_L", "control": "Control_L", "lctrl": "Control_L", "rctrl": "Control_R",
    "alt": "Alt_L", "lalt": "Alt_L", "ralt": "Alt_R", "altgr": "ISO_Level3_Shift",
    "shift": "Shift_L", "lshift": "Shift_L", "rshift": "Shift_R",
    "super": "Super_L", "win": "Super_L", "meta": "Super_L", "cmd": "Super_L", "command": "Super_L",
    "enter": "Return", "return": "Return", "esc": "Escape", "escape": "Escape", "tab": "Tab",
    "backspace": "BackSpace", "delete": "Delete", "del": "Delete", "insert": "Insert", "ins": "Insert",
    "home": "Home", "end": "End", "pageup": "Prior", "page_up": "Prior", "pgup": "Prior",
    "pagedown": "Next", "page_down": "Next", "pgdn": "Next", "up": "Up", "down": "Down",
    "left": "Left", "right": "Right", "space": "space", "capslock": "Caps_Lock", "menu": "Menu",
    "printscreen": "Print", "print": "Print", "numlock": "Num_Lock", "pause": "Pause",
    "minus": "minus", "plus": "plus", "comma": "comma", "period": "period", "slash": "slash",
    "backslash": "backslash", "semicolon": "semicolon", "equal": "equal",
}  # fmt: skip

# The table's button names (actions.ButtonName) -> X pointer buttons.
BUTTONS: Mapping[str, int] = {"left": 1, "middle": 2, "right": 3}
# X has no scroll events: buttons 4/5 scroll up/down, 6/7 left/right, one notch each.
SCROLL_PIXELS_PER_NOTCH = 50
# Characters typed per round trip: a deadline or a hang-up stops typing between batches.
# Writer consumes 256 keys in ~0.35 s here (~1.8 s on a loaded machine), so a stop lands
# that soon; 4,000 characters took 7.6-8.4 s in batches of 64, 5.5-6.8 s in 256-1024.
TYPE_BATCH = 256


class UnknownKey(ValueError):
    """A key name that maps to no X keysym."""


class InputCancelled(Exception):
    """Typing stopped part-way because the caller's deadline passed or the caller hung up.

    Attributes:
        done: Characters typed before the stop.
        total: Characters asked for.
    """

    def __init__(self, done: int, total: int) -> None:
        super().__init__(f"typing stopped after {done} of {total} characters")
        self.done = done
        self.total = total


def _never() -> bool:
    return False


def keysym_for_name(name: str) -> int:
    """Maps a model key name (``ctrl``, ``Return``, ``a``, ``F5``) to an X keysym."""
    lowered = name.lower()
    keysym_name = KEY_ALIASES.get(lowered)
    if keysym_name is None:
        if len(name) == 1:
            return keysym_for_char(name)
        keysym_name = f"F{int(lowered[1:])}" if lowered.startswith("f") and lowered[1:].isdigit() else name
    keysym = XK.string_to_keysym(keysym_name)
    if keysym == X.NoSymbol:
        keysym = XK.string_to_keysym(keysym_name.capitalize())
    if keysym == X.NoSymbol:
        raise UnknownKey(f"Unknown key name {name!r}.")
    return keysym


def keysym_for_char(char: str) -> int:
    """The keysym that types one character (Latin-1 keysyms equal the code point)."""
    if char == "\n":
        return XK.string_to_keysym("Return")
    if char == "\t":
        return XK.string_to_keysym("Tab")
    code = ord(char)
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code
    return 0x01000000 | code


class InputDevice:
    """Drives the pointer and the keyboard of one display."""

    def __init__(self, xconn: XConnection, *, pace: Callable[[], object] = _never) -> None:
        """Drives ``xconn``.

        Args:
            xconn: The display's connection.
            pace: Called between batches of typed characters; returns once the
                desktop has consumed what was sent (see :meth:`type_text`).
        """
        self._x = xconn
        self._pace = pace
        self._shift_keycode: int | None = None
        # Keycodes empty in the keymap when first needed -> the keysym bound to them, LRU first.
        self._spares: OrderedDict[int, int | None] | None = None

    def execute(
        self, action: str, args: Mapping[str, Any], *, cancelled: Callable[[], bool] = _never
    ) -> None:
        """Performs one validated input action (one of :data:`HANDLERS`).

        Args:
            action: The action name.
            args: Its arguments.
            cancelled: Polled between keystrokes of ``type``: once it returns True
                typing stops with :class:`InputCancelled`, so that no keystroke of
                an abandoned action lands during the next one.

        Raises:
            ValueError: ``action`` is not an input action (``wait``, ``terminate``
                and ``answer`` emit nothing).
        """
        handler = HANDLERS.get(action)
        if handler is None:
            raise ValueError(f"computer_use action {action!r} emits no input")
        handler(self, args, cancelled)

    def forget_spares(self) -> None:
        """Called once the keymap is back at its baseline: spare keycodes are looked up anew.

        The pool is what the keymap left empty when first needed; taken during an
        episode, a user's ``xmodmap`` could shrink it for every later episode.
        """
        self._spares = None

    def cursor_position(self) -> tuple[int, int]:
        """The pointer position in screen pixels."""
        with self._x.session() as d:
            pointer = d.screen().root.query_pointer()
            return pointer.root_x, pointer.root_y

    # --- actions (see HANDLERS) -----------------------------------------------
    def _do_mouse_move(self, args: Mapping[str, Any], cancelled: Callable[[], bool]) -> None:
        self._move(*args["coordinate"])

    def _do_click(self, args: Mapping[str, Any], cancelled: Callable[[], bool], *, click: Click) -> None:
        """Clicks ``click.count`` times at ``coordinate``, holding the modifier ``keys`` if given."""
        keys = [keysym_for_name(k) for k in args.get("keys", ())]
        with self._x.session() as d:
            codes = [self._keycode(d, k)[0] for k in keys]
            for code in codes:
                xtest.fake_input(d, X.KeyPress, code)
            self._click(d, args["coordinate"], BUTTONS[click.button], click.count)
            if codes:
                for code in reversed(codes):
                    xtest.fake_input(d, X.KeyRelease, code)
                d.sync()

    def _do_left_click_drag(self, args: Mapping[str, Any], cancelled: Callable[[], bool]) -> None:
        start = args.get("start_coordinate") or self.cursor_position()
        end = args["coordinate"]
        with self._x.session() as d:
            xtest.fake_input(d, X.MotionNotify, x=int(start[0]), y=int(start[1]))
            xtest.fake_input(d, X.ButtonPress, BUTTONS["left"])
            d.sync()
            steps = 8  # intermediate motion so toolkits see a drag, not a teleport
            for i in range(1, steps + 1):
                x = round(start[0] + (end[0] - start[0]) * i / steps)
                y = round(start[1] + (end[1] - start[1]) * i / steps)
                xtest.fake_input(d, X.MotionNotify, x=x, y=y)
                d.sync()
                time.sleep(0.005)
            xtest.fake_input(d, X.ButtonRelease, BUTTONS["left"])
            d.sync()

    def _do_scroll(self, args: Mapping[str, Any], cancelled: Callable[[], bool]) -> None:
        self._scroll(args, up_button=4, down_button=5)

    def _do_hscroll(self, args: Mapping[str, Any], cancelled: Callable[[], bool]) -> None:
        # Positive pixels scroll right (button 7), negative left (button 6).
        self._scroll(args, up_button=7, down_button=6)

    def _do_key(self, args: Mapping[str, Any], cancelled: Callable[[], bool]) -> None:
        self.press_keys(args["keys"])

    def _do_type(self, args: Mapping[str, Any], cancelled: Callable[[], bool]) -> None:
        self.type_text(args["text"], cancelled=cancelled)

    # --- primitives ----------------------------------------------------------
    def press_keys(self, names: Sequence[str]) -> None:
        """Presses the keys in order, then releases them in reverse (a chord)."""
        keysyms = [keysym_for_name(n) for n in names]
        with self._x.session() as d:
            pressed = []
            try:
                for keysym in keysyms:
                    code, needs_shift = self._keycode(d, keysym)
                    if needs_shift and self._shift_keycode:
                        xtest.fake_input(d, X.KeyPress, self._shift_keycode)
                        pressed.append(self._shift_keycode)
                    xtest.fake_input(d, X.KeyPress, code)
                    pressed.append(code)
                    d.sync()
            finally:
                for code in reversed(pressed):
                    xtest.fake_input(d, X.KeyRelease, code)
                d.sync()

    def type_text(self, text: str, *, cancelled: Callable[[], bool] = _never) -> None:
        """Types text as XTest key events, up to :data:`TYPE_BATCH` characters per round trip.

        The server queues every event in order and clients read them in order,
        so no pause between keystrokes is needed: measured with xev and Writer,
        no key at native speed is dropped, reordered or merged, repeated
        characters included. Shift is released in the batch that pressed it,
        even when a request fails. Between batches ``pace`` waits until the
        desktop has worked through the last one. That is what the old 4 ms pause
        per character did in effect: LibreOffice spends 1.3-7 ms per keystroke here,
        and without flow control thousands of keys would sit in its queue, still
        typing after a deadline stopped the action and into the next one. The
        wait also lets clients read a batch's keys before the next batch
        rebinds a spare keycode (:meth:`_next_batch`).

        Raises:
            InputCancelled: ``cancelled()`` turned True before the last character.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        done = 0
        while done < len(text):
            if done:
                self._pace()
            if cancelled():
                raise InputCancelled(done, len(text))
            with self._x.session() as d:
                batch = self._next_batch(d, text, done)
                strokes = self._strokes(d, batch)
                shift = self._shift_keycode
                shifted = False
                try:
                    for code, needs_shift in strokes:
                        if needs_shift != shifted:
                            xtest.fake_input(d, X.KeyPress if needs_shift else X.KeyRelease, shift)
                            shifted = needs_shift
                        xtest.fake_input(d, X.KeyPress, code)
                        xtest.fake_input(d, X.KeyRelease, code)
                finally:
                    if shifted:
                        xtest.fake_input(d, X.KeyRelease, shift)
                    d.sync()
            done += len(batch)

    def _next_batch(self, d, text: str, start: int) -> str:
        """Up to :data:`TYPE_BATCH` characters from ``start``, at most one per spare keycode lacking a key.

        A batch never rebinds a spare keycode it has used: the paced wait before
        the next batch lets clients read the keys before their keycodes change.
        """
        limit = len(self._spare_codes(d))
        unmapped: set[int] = set()
        end = start
        while end < len(text) and end - start < TYPE_BATCH:
            keysym = keysym_for_char(text[end])
            if keysym not in unmapped and not any(i in (0, 1) for _, i in d.keysym_to_keycodes(keysym)):
                if len(unmapped) == limit:
                    break
                unmapped.add(keysym)
            end += 1
        if end == start:
            raise UnknownKey(f"No spare keycode to type {text[start]!r}.")
        return text[start:end]

    def _move(self, x: int, y: int) -> None:
        with self._x.session() as d:
            xtest.fake_input(d, X.MotionNotify, x=int(x), y=int(y))
            d.sync()

    @staticmethod
    def _click(d, coordinate: Iterable[int], button: int, count: int) -> None:
        x, y = coordinate
        xtest.fake_input(d, X.MotionNotify, x=int(x), y=int(y))
        for _ in range(count):
            xtest.fake_input(d, X.ButtonPress, button)
            xtest.fake_input(d, X.ButtonRelease, button)
        d.sync()

    def _scroll(self, args: Mapping[str, Any], *, up_button: int, down_button: int) -> None:
        pixels = int(args["pixels"])
        notches = max(1, round(abs(pixels) / SCROLL_PIXELS_PER_NOTCH)) if pixels else 0
        button = up_button if pixels > 0 else down_button
        with self._x.session() as d:
            if "coordinate" in args:
                x, y = args["coordinate"]
                xtest.fake_input(d, X.MotionNotify, x=int(x), y=int(y))
            for _ in range(notches):
                xtest.fake_input(d, X.ButtonPress, button)
                xtest.fake_input(d, X.ButtonRelease, button)
            d.sync()

    def _keycode(self, d, keysym: int) -> tuple[int, bool]:
        """(keycode, needs_shift) for a keysym, binding a spare keycode when the map lacks it."""
        return self._strokes(d, [keysym])[0]

    def _strokes(self, d, chars: Iterable[str | int]) -> list[tuple[int, bool]]:
        """(keycode, needs_shift) per character (or keysym), spare keycodes bound for the rest.

        Keysyms the keymap lacks get spare keycodes (empty in the keymap when
        first needed), each its own, bound in one request each before any key
        is sent: the server sends MappingNotify ahead of the keys, and clients
        fetch the new mapping when they meet the key, so no pause follows the
        binding. Spare keycodes are rebound least recently used first.
        """
        if self._shift_keycode is None:
            self._shift_keycode = d.keysym_to_keycode(XK.string_to_keysym("Shift_L"))
        keysyms = [c if isinstance(c, int) else keysym_for_char(c) for c in chars]
        strokes: dict[int, tuple[int, bool]] = {}
        unmapped = []
        for keysym in dict.fromkeys(keysyms):
            found = [(code, index) for code, index in d.keysym_to_keycodes(keysym) if index in (0, 1)]
            if found:
                strokes[keysym] = (found[0][0], found[0][1] == 1)
            else:
                unmapped.append(keysym)
        if unmapped:
            for keysym, code in self._bind_spares(d, unmapped).items():
                strokes[keysym] = (code, False)
        return [strokes[k] for k in keysyms]

    def _spare_codes(self, d) -> OrderedDict[int, int | None]:
        """Keycodes empty in the keymap when first asked -> the keysym bound there, LRU first."""
        if self._spares is None:
            first = d.display.info.min_keycode
            mapping = d.get_keyboard_mapping(first, d.display.info.max_keycode - first + 1)
            self._spares = OrderedDict((first + i, None) for i, syms in enumerate(mapping) if not any(syms))
        return self._spares

    def _bind_spares(self, d, keysyms: list[int]) -> dict[int, int]:
        """Spare keycodes for ``keysyms`` (distinct), bound now unless the keymap still has them."""
        spares = self._spare_codes(d)
        if len(keysyms) > len(spares):
            raise UnknownKey(f"{len(keysyms)} characters lack a key, {len(spares)} spare keycodes exist.")
        first = d.display.info.min_keycode
        mapping = d.get_keyboard_mapping(first, d.display.info.max_keycode - first + 1)  # the server's own
        bound: dict[int, int] = {}
        for keysym in keysyms:
            code = next((c for c, k in spares.items() if k == keysym), None)
            if code is None:
                code = next(c for c in spares if c not in bound.values())  # least recently used
            if mapping[code - first][0] != keysym:  # not bound yet, or the reset's keymap undid it
                d.change_keyboard_mapping(code, [(keysym, keysym)])
                spares[code] = keysym
            spares.move_to_end(code)
            bound[keysym] = code
        return bound


Handler = Callable[[InputDevice, Mapping[str, Any], Callable[[], bool]], None]

# The input actions that are not clicks, by their table name.
_NAMED_HANDLERS: Mapping[str, Handler] = {
    "key": InputDevice._do_key,
    "type": InputDevice._do_type,
    "mouse_move": InputDevice._do_mouse_move,
    "left_click_drag": InputDevice._do_left_click_drag,
    "scroll": InputDevice._do_scroll,
    "hscroll": InputDevice._do_hscroll,
}


def build_handlers(table: Mapping[str, ActionSpec]) -> dict[str, Handler]:
    """One handler per input action of ``table``: clicks from their :class:`Click`, others by name.

    Raises:
        ValueError: An input action of ``table`` has no handler or two, a handler
            names no input action of ``table``, or a click names a button X lacks.
    """
    handlers: dict[str, Handler] = dict(_NAMED_HANDLERS)
    for name, spec in table.items():
        if spec.click is None:
            continue
        if name in _NAMED_HANDLERS or spec.click.button not in BUTTONS:
            raise ValueError(f"{name}: a click needs a known button {sorted(BUTTONS)} and no named handler.")
        handlers[name] = functools.partial(InputDevice._do_click, click=spec.click)
    wanted = {name for name, spec in table.items() if spec.executor is Executor.INPUT}
    if set(handlers) != wanted:
        raise ValueError(
            "The input device and the action table disagree: "
            f"input actions without a handler {sorted(wanted - set(handlers))}, "
            f"handlers of no input action {sorted(set(handlers) - wanted)}."
        )
    return handlers


# Built at import: a table entry without a handler stops the guest server from starting.
HANDLERS: Mapping[str, Handler] = build_handlers(COMPUTER_USE_ACTIONS)

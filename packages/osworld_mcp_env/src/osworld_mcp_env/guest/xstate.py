"""The X server's state that outlives X clients, put back at every episode start.

Killing the desktop user's processes closes their X connections, which frees
their windows, selections and grabs. Three things stay on the server: properties
on the root window (anyone can set them, ``xprop -root -f FOO 8s -set FOO bar``),
the keyboard mapping (``xmodmap``) and the pointer position. The baseline is
taken once the window manager is up and restored at every reset.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from Xlib import X

from osworld_mcp_env.guest.xdisplay import XConnection


@dataclass(frozen=True)
class XBaseline:
    """What the server looked like at session start."""

    root_properties: frozenset[int]
    keyboard_mapping: tuple[tuple[int, ...], ...]
    first_keycode: int
    pointer: tuple[int, int]


def wait_for_window_manager(xconn: XConnection, timeout: float = 10.0) -> None:
    """Waits until the WM has announced itself on the root window (EWMH), or ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with xconn.session() as d:
            check = d.get_atom("_NET_SUPPORTING_WM_CHECK")
            if d.screen().root.get_full_property(check, X.AnyPropertyType) is not None:
                return
        time.sleep(0.01)


def capture(xconn: XConnection) -> XBaseline:
    """The current root properties, keyboard mapping and pointer position."""
    with xconn.session() as d:
        root = d.screen().root
        first = d.display.info.min_keycode
        count = d.display.info.max_keycode - first + 1
        mapping = tuple(tuple(row) for row in d.get_keyboard_mapping(first, count))
        pointer = root.query_pointer()
        return XBaseline(
            root_properties=frozenset(root.list_properties()),
            keyboard_mapping=mapping,
            first_keycode=first,
            pointer=(pointer.root_x, pointer.root_y),
        )


def restore(xconn: XConnection, baseline: XBaseline) -> int:
    """Deletes root properties the baseline did not have, restores the keymap and pointer.

    Returns:
        How many root properties were deleted.
    """
    with xconn.session() as d:
        root = d.screen().root
        extra = [atom for atom in root.list_properties() if atom not in baseline.root_properties]
        for atom in extra:
            root.delete_property(atom)
        count = len(baseline.keyboard_mapping)
        current = tuple(tuple(row) for row in d.get_keyboard_mapping(baseline.first_keycode, count))
        if current != baseline.keyboard_mapping:
            d.change_keyboard_mapping(baseline.first_keycode, [list(r) for r in baseline.keyboard_mapping])
        root.warp_pointer(*baseline.pointer)
        d.sync()
        return len(extra)

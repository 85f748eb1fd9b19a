"""The focused window's description is cached, and a change to it is never missed.

A still desktop's focus query is one X request; any change to the title, the class, the
size, the position of the window or of a window it sits in (a window manager's frame)
shows in the very next query. The desktop here is a private Xvfb and a client that plays
both the app and the window manager (it sets ``_NET_ACTIVE_WINDOW`` itself).
"""

from __future__ import annotations

import shutil

import pytest
from osworld_mcp_env.guest.windows import WindowManager
from osworld_mcp_env.guest.xdisplay import XConnection
from Xlib import X, Xatom
from Xlib import display as xdisplay

pytestmark = pytest.mark.skipif(shutil.which("Xvfb") is None, reason="needs Xvfb")


class CountingWindowManager(WindowManager):
    """Counts how many windows were read from the server, not from the cache."""

    described = 0

    def _describe(self, d, wid):
        self.described += 1
        return super()._describe(d, wid)


@pytest.fixture
def app(xvfb):
    """A desktop client with one mapped, focused top-level window titled "one"."""
    client = xdisplay.Display(xvfb.args[-1])
    root = client.screen().root
    window = root.create_window(10, 20, 200, 100, 0, X.CopyFromParent)
    window.change_property(client.intern_atom("_NET_WM_NAME"), client.intern_atom("UTF8_STRING"), 8, b"one")
    window.set_wm_class("first", "First")
    window.map()
    root.change_property(client.intern_atom("_NET_ACTIVE_WINDOW"), Xatom.WINDOW, 32, [window.id])
    client.sync()
    try:
        yield client, window
    finally:
        client.close()


def _active(manager: WindowManager) -> tuple[str, str, int, int, int, int]:
    info = manager.active()
    assert info is not None
    return info.title, info.wm_class, info.x, info.y, info.width, info.height


def test_a_still_window_is_read_once_and_every_change_shows_at_once(xvfb, app):
    client, window = app
    manager = CountingWindowManager(XConnection(xvfb.args[-1]))
    assert _active(manager) == ("one", "first.First", 10, 20, 200, 100)
    for _ in range(5):
        assert _active(manager) == ("one", "first.First", 10, 20, 200, 100)
    assert manager.described == 1  # nothing changed: the cache answered

    window.change_property(client.intern_atom("_NET_WM_NAME"), client.intern_atom("UTF8_STRING"), 8, b"two")
    client.sync()
    assert _active(manager)[0] == "two"

    window.set_wm_class("second", "Second")
    client.sync()
    assert _active(manager)[1] == "second.Second"

    window.configure(x=30, y=40, width=120, height=80)
    client.sync()
    assert _active(manager)[2:] == (30, 40, 120, 80)


def test_moving_the_frame_a_window_sits_in_shows_at_once(xvfb, app):
    """A window manager's frame moves; the window inside gets no event of its own."""
    client, window = app
    root = client.screen().root
    frame = root.create_window(100, 50, 300, 200, 0, X.CopyFromParent)
    frame.map()
    window.reparent(frame, 10, 20)
    client.sync()
    manager = CountingWindowManager(XConnection(xvfb.args[-1]))
    assert _active(manager)[2:4] == (110, 70)
    frame.configure(x=150, y=60)
    client.sync()
    assert _active(manager)[2:4] == (160, 80)
    # Into a new frame: its moves show too.
    other = root.create_window(5, 5, 300, 200, 0, X.CopyFromParent)
    other.map()
    window.reparent(other, 1, 2)
    client.sync()
    assert _active(manager)[2:4] == (6, 7)
    other.configure(x=7, y=9)
    client.sync()
    assert _active(manager)[2:4] == (8, 11)


def test_a_new_focus_and_a_destroyed_window_are_read_afresh(xvfb, app):
    client, _window = app
    root = client.screen().root
    manager = CountingWindowManager(XConnection(xvfb.args[-1]))
    assert _active(manager)[0] == "one"
    second = root.create_window(0, 0, 50, 50, 0, X.CopyFromParent)
    second.change_property(client.intern_atom("_NET_WM_NAME"), client.intern_atom("UTF8_STRING"), 8, b"three")
    second.map()
    root.change_property(client.intern_atom("_NET_ACTIVE_WINDOW"), Xatom.WINDOW, 32, [second.id])
    client.sync()
    assert _active(manager)[0] == "three"
    second.destroy()
    client.sync()
    assert manager.active() is None  # the focus names a window that is gone

"""The stale-frame guard on the real desktop: menus count, unrelated moves do not.

Before the layout sample covered the root's viewable children, an open LibreOffice menu
(two override-redirect windows) left the layout hash unchanged: a click citing the frame
from before alt+f was admitted and landed on File > Templates.
"""

from __future__ import annotations

import pytest
from osworld_mcp_env.backends.osworld_guest_client import OSWorldGuestClient
from osworld_mcp_env.guest.layout import LayoutSample
from polling import wait_until

pytestmark = pytest.mark.desktop


def gui(action: str, frame_id: int | None = None, **arguments) -> dict:
    args = {"action": action, **arguments}
    if frame_id is not None:
        args["frame_id"] = frame_id
    return {"name": "computer_use", "arguments": args}


def popups(env) -> list:
    """The override-redirect windows on screen now (menus, tooltips), from the guest's sample."""
    return [w for w in env.unwrapped.desktop.client.layout().windows if w.override_redirect and w.width > 1]


@pytest.fixture
def calc(make_env):
    env = make_env(task="calc-sum-column", enable_mcp=False)  # the guard is on by default
    _obs, info = env.reset()
    return env, info["frame_id"]


def test_a_click_citing_the_frame_before_the_file_menu_opened_is_refused_with_no_input(calc):
    env, f1 = calc
    _o, _r, _t, _tr, info = env.step(gui("key", keys=["alt", "f"]))
    assert "error" not in info
    wait_until(lambda: len(popups(env)) >= 1, 10, "the File menu to open")
    # The step reported the menu it opened (when it drew within the settle wait, as it does).
    assert any(c["change"] == "opened" and "popup" in c["window"] for c in info["window_changes"])
    menus = popups(env)
    _o, _r, _t, _tr, info = env.step(gui("left_click", f1, coordinate=[60, 200]))
    error = info["error"]
    assert error["code"] == "stale_gui_frame" and error["input_events_emitted"] is False
    assert "[60, 200] was on 'numbers.xlsx - LibreOffice Calc'" in error["reasons"][0]
    assert "is now on popup" in error["reasons"][0]
    assert LayoutSample.from_dict(error["layout"]).window_at((60, 200)).override_redirect
    # No input: the menu is still open as it was (a click would have closed it or opened Templates).
    assert popups(env) == menus
    assert [w.title for w in env.unwrapped.desktop.windows()] == ["numbers.xlsx - LibreOffice Calc"]
    # The frame after the refusal shows the menu: citing it, the same click goes through.
    _o, _r, _t, _tr, info = env.step(gui("key", info["frame_id"], keys=["Escape"]))
    assert "error" not in info


def test_moving_an_unrelated_window_is_admitted_and_raising_one_over_the_point_is_not(calc):
    env, _ = calc
    desktop = env.unwrapped.desktop
    desktop.launch(["xfce4-terminal", "--disable-server", "--geometry=40x8+1300+650"])
    wait_until(lambda: len(desktop.windows()) == 2, 20, "the terminal to show")
    _o, _r, _t, _tr, info = env.step(gui("wait", time=0))
    frame = info["frame_id"]

    def terminal() -> tuple[int, int]:
        window = next(w for w in desktop.windows() if w.wm_class.startswith("xfce4-terminal"))
        return window.x, window.y

    before = terminal()
    desktop.execute("xdotool search --class xfce4-terminal windowmove %@ 1400 700", shell=True)
    wait_until(lambda: terminal() != before, 10, "the window manager to move the terminal")
    # (300, 400) is a Calc cell in both layouts: admitted though the layout changed.
    _o, _r, _t, _tr, info = env.step(gui("mouse_move", frame, coordinate=[300, 400]))
    assert "error" not in info, info.get("error")
    frame = info["frame_id"]
    moved = terminal()
    desktop.execute("xdotool search --class xfce4-terminal windowmove %@ 200 300", shell=True)
    wait_until(lambda: terminal() != moved, 10, "the terminal to move over the point")
    _o, _r, _t, _tr, info = env.step(gui("left_click", frame, coordinate=[300, 400]))
    assert info["error"]["code"] == "stale_gui_frame" and info["error"]["input_events_emitted"] is False


def test_osworlds_window_script_samples_the_layout_as_the_guest_does(calc):
    """The OSWorld client's script, run on the same desktop, gives the guest's fingerprint."""
    env, _ = calc
    desktop = env.unwrapped.desktop
    env.step(gui("key", keys=["alt", "f"]))
    wait_until(lambda: len(popups(env)) >= 1, 10, "the File menu to open")
    client = OSWorldGuestClient()
    client.execute = lambda command, **kw: desktop.execute(["python3", *command[1:]], **kw)  # type: ignore[method-assign]
    _windows, _active, sample = client._window_state()
    guest = desktop.client.layout()
    assert sample == guest and sample.fingerprint == desktop.client.focus(with_layout=True).layout_hash
    assert any(w.override_redirect and w.contains((60, 200)) for w in sample.windows)

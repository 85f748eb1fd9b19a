"""Every computer_use input action reaches the X server as the events it promises (read back with xev)."""

from __future__ import annotations

import re
import time

import pytest
from osworld_mcp_env.backends.local import LocalDesktop

pytestmark = pytest.mark.desktop

XEV_LOG = "/tmp/xev.log"


@pytest.fixture(scope="module")
def xev_desktop():
    desktop = LocalDesktop()
    desktop.launch(f"stdbuf -oL xev -geometry 600x400+100+100 > {XEV_LOG}", shell=True)
    deadline = time.monotonic() + 20
    while not any(w.title == "Event Tester" for w in desktop.windows()):
        assert time.monotonic() < deadline, "xev did not open"
        time.sleep(0.05)
    yield desktop
    desktop.close()


def events_after(desktop: LocalDesktop, action: dict) -> str:
    before = len(desktop.read_file(XEV_LOG) or b"")
    desktop.gui(action)
    time.sleep(0.2)  # xev writes after the server delivers; the settle wait watched the screen only
    return (desktop.read_file(XEV_LOG) or b"")[before:].decode()


def presses(log: str, kind: str) -> list[str]:
    """The detail line ('state ..., button N' / 'state ..., keycode N (keysym 0x.., Name)') of each event."""
    lines = log.splitlines()
    return [
        lines[i + 2].strip() for i, line in enumerate(lines) if line.startswith(kind) and i + 2 < len(lines)
    ]


def buttons(log: str) -> list[int]:
    return [int(d.split("button ")[1].split(",")[0]) for d in presses(log, "ButtonPress")]


@pytest.mark.parametrize(
    ("action", "expected_buttons"),
    [
        ({"action": "left_click", "arguments": {"coordinate": [300, 300]}}, [1]),
        ({"action": "right_click", "arguments": {"coordinate": [300, 300]}}, [3]),
        ({"action": "middle_click", "arguments": {"coordinate": [300, 300]}}, [2]),
        ({"action": "double_click", "arguments": {"coordinate": [300, 300]}}, [1, 1]),
        ({"action": "triple_click", "arguments": {"coordinate": [300, 300]}}, [1, 1, 1]),
        ({"action": "scroll", "arguments": {"pixels": 100, "coordinate": [300, 300]}}, [4, 4]),
        ({"action": "scroll", "arguments": {"pixels": -50, "coordinate": [300, 300]}}, [5]),
        ({"action": "hscroll", "arguments": {"pixels": 50, "coordinate": [300, 300]}}, [7]),
        ({"action": "hscroll", "arguments": {"pixels": -50, "coordinate": [300, 300]}}, [6]),
    ],
)
def test_pointer_actions_emit_their_buttons(xev_desktop, action, expected_buttons):
    assert buttons(events_after(xev_desktop, action)) == expected_buttons


def test_mouse_move_and_drag_end_where_asked(xev_desktop):
    xev_desktop.gui({"action": "mouse_move", "arguments": {"coordinate": [250, 260]}})
    assert xev_desktop.client.request("GET", "/cursor_position")[2] == b"[250, 260]"
    log = events_after(
        xev_desktop,
        {
            "action": "left_click_drag",
            "arguments": {"start_coordinate": [200, 200], "coordinate": [400, 350]},
        },
    )
    assert buttons(log) == [1]
    assert log.count("MotionNotify") >= 4  # a drag, not a teleport
    assert xev_desktop.client.request("GET", "/cursor_position")[2] == b"[400, 350]"


def test_key_chord_and_typing_reach_the_window(xev_desktop):
    xev_desktop.gui({"action": "left_click", "arguments": {"coordinate": [300, 300]}})
    log = events_after(xev_desktop, {"action": "key", "arguments": {"keys": ["ctrl", "shift", "t"]}})
    names = [re.search(r"keysym 0x[0-9a-f]+, (\w+)\)", d).group(1) for d in presses(log, "KeyPress")]
    assert names == ["Control_L", "Shift_L", "T"]
    log = events_after(xev_desktop, {"action": "type", "arguments": {"text": "aZ!é"}})
    typed = ""
    for block in log.split("\n\n"):
        if block.strip().startswith("KeyPress"):
            lookup = re.search(r'XLookupString gives \d+ bytes: (?:\([^)]*\) )?"(.*)"', block)
            typed += lookup.group(1) if lookup else ""
    assert typed == "aZ!é"

"""Every computer_use input action reaches the X server as the events it promises (read back with xev)."""

from __future__ import annotations

import itertools
import json
import re
import time

import pytest
from osworld_mcp_env.actions import COMPUTER_USE_ACTIONS, Executor
from osworld_mcp_env.backends.local.desktop import LocalDesktop
from polling import wait_until

pytestmark = pytest.mark.desktop

XEV_LOG = "/tmp/xev.log"


def start_xev(desktop: LocalDesktop) -> None:
    """Starts xev and waits until the window manager focused it.

    The tests type into it: with the focus checked first, a test that finds no keys
    in xev's log failed at typing, not at focusing.
    """
    desktop.launch(f"stdbuf -oL xev -geometry 600x400+100+100 > {XEV_LOG}", shell=True)
    wait_until(
        lambda: (active := desktop.active_window()) is not None and active.title == "Event Tester",
        20,
        "the window manager to focus xev",
    )


@pytest.fixture(scope="module")
def xev_desktop():
    desktop = LocalDesktop()
    start_xev(desktop)
    yield desktop
    desktop.close()


_marks = itertools.count()


def events_after(desktop: LocalDesktop, action: dict) -> str:
    """The xev log of ``action``, read up to a property change sent after it.

    xev writes after the server delivers, and the settle wait watched the screen
    only. The server delivers events in order, so once xev has logged the
    PropertyNotify of a property set on its window after the action, it has
    logged every event of the action.
    """
    before = len(desktop.read_file(XEV_LOG) or b"")
    desktop.gui(action)
    mark = f"_TEST_MARK_{next(_marks)}"
    xev = next(w.window_id for w in desktop.windows() if w.title == "Event Tester")
    assert desktop.execute(["xprop", "-id", str(xev), "-f", mark, "8s", "-set", mark, "1"]).ok
    deadline = time.monotonic() + 30
    while True:
        log = (desktop.read_file(XEV_LOG) or b"")[before:].decode()
        at = log.find(f"({mark})")
        if at >= 0:
            return log[: log.rfind("\n\n", 0, at) + 1]  # the blocks before the mark's event
        assert time.monotonic() < deadline, f"xev did not log {mark} within 30 s"
        time.sleep(0.05)  # polling interval


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


def typed_text(log: str) -> str:
    """What the key presses of an xev log type, from xev's UTF-8 lookup of each press."""
    typed = ""
    for block in log.split("\n\n"):
        if block.strip().startswith("KeyPress"):
            lookup = re.search(r'XmbLookupString gives \d+ bytes: (?:\([^)]*\) )?"(.*)"', block)
            typed += lookup.group(1) if lookup else ""
    return typed


PRINTABLE_ASCII = "".join(chr(c) for c in range(0x20, 0x7F))
# Latin-1 letters, letters of other scripts (spare keycodes), symbols, and runs of
# one character (each press a separate pair of events, none merged or dropped).
NON_ASCII = "äöüßéçñøÆŒœ€£¥©°±µ§«»–—‘’“”…αβγΩЖжш中文字→✓"
REPEATS = "aaaa    bbbb 1111 ....  AAAA ÄÄÄÄ ΩΩΩΩ"


@pytest.mark.parametrize("text", [PRINTABLE_ASCII, NON_ASCII, REPEATS], ids=["ascii", "non-ascii", "repeats"])
def test_typing_gives_exactly_the_text(xev_desktop, text):
    assert typed_text(events_after(xev_desktop, {"action": "type", "arguments": {"text": text}})) == text


def test_typing_leaves_no_modifier_pressed(xev_desktop):
    log = events_after(xev_desktop, {"action": "type", "arguments": {"text": "AB" * 40 + "é"}})
    shift = [d for d in presses(log, "KeyPress") if "Shift" in d]
    assert shift and len(shift) == len([d for d in presses(log, "KeyRelease") if "Shift" in d])
    log = events_after(xev_desktop, {"action": "type", "arguments": {"text": "a"}})
    assert presses(log, "KeyPress")[0].startswith("state 0x0,"), log  # no modifier held


def test_a_keymap_the_user_filled_does_not_outlive_the_episode():
    """The spare keycodes for characters without a key are looked up again after a reset."""
    desktop = LocalDesktop()
    try:
        keymap = desktop.execute(["xmodmap", "-pke"]).output
        empty = [line.split()[1] for line in keymap.splitlines() if line.strip().endswith("=")]
        assert empty, keymap
        fill = ["xmodmap"] + [arg for code in empty for arg in ("-e", f"keycode {code} = a")]
        assert desktop.execute(fill).ok
        status, _, body = desktop.client.request(
            "POST", "/gui", json_body={"action": "type", "arguments": {"text": "Ω"}}
        )
        assert status == 400 and b"spare keycode" in body, body  # no key left to bind
        desktop.restart()  # the keymap is back at its baseline
        start_xev(desktop)
        desktop.gui({"action": "left_click", "arguments": {"coordinate": [300, 300]}})
        log = events_after(desktop, {"action": "type", "arguments": {"text": NON_ASCII}})
        # Once (1 of ~2,000 tests in a full run) nothing was typed; the log tells focus from lookup.
        assert typed_text(log) == NON_ASCII, (desktop.active_window(), log[-4000:])
    finally:
        desktop.close()


# A valid value of each argument kind; coordinates inside the xev window, so no click reaches the root menu.
SAMPLE = {
    "coordinate": [300, 300],
    "int": 50,
    "number": 0.5,
    "text": "a",
    "keys": ["shift"],
    "status": "success",
}


@pytest.mark.parametrize("action", sorted(COMPUTER_USE_ACTIONS))
def test_guest_performs_exactly_the_tables_input_actions(xev_desktop, action):
    """/gui performs every action the table gives the input executor and refuses the others."""
    spec = COMPUTER_USE_ACTIONS[action]
    arguments = {arg: SAMPLE[kind] for arg, kind in spec.required.items()}
    status, _, body = xev_desktop.client.request(
        "POST", "/gui", json_body={"action": action, "arguments": arguments}
    )
    reply = json.loads(body)
    if spec.executor is Executor.INPUT:
        assert (status, reply["input_events_emitted"]) == (200, True), reply
    else:
        assert status == 400 and "is not an input action" in reply["message"], reply

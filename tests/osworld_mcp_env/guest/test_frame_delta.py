"""Frames sent as the rows changed since the client's copy: exact reconstruction, never a wrong base."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest
from osworld_mcp_env.backends.guest_client import bgra_to_rgb
from osworld_mcp_env.backends.local.framebuffer import QuietFrame
from osworld_mcp_env.guest.frame_delta import (
    MERGE_GAP_ROWS,
    FrameHistory,
    RowRun,
    apply_runs,
    changed_runs,
    format_runs,
    pack_runs,
    parse_runs,
)

WIDTH, HEIGHT = 64, 100
ROW = WIDTH * 4


def frame(seed: int) -> bytearray:
    return bytearray(random.Random(seed).randbytes(ROW * HEIGHT))


def touch(buffer: bytearray, row: int, column: int = 0) -> None:
    buffer[row * ROW + column * 4] ^= 0xFF


def test_equal_frames_have_no_runs_and_changed_rows_are_found_and_merged():
    base = frame(1)
    assert changed_runs(base, bytes(base), ROW) == []
    changed = bytearray(base)
    touch(changed, 5)
    touch(changed, 5 + MERGE_GAP_ROWS + 1, column=WIDTH - 1)  # a gap of MERGE_GAP_ROWS rows: merged
    touch(changed, 60)  # far away: its own run
    touch(changed, HEIGHT - 1)  # the last row of the last (short) band
    assert changed_runs(base, changed, ROW) == [
        RowRun(5, 5 + MERGE_GAP_ROWS + 2),
        RowRun(60, 61),
        RowRun(HEIGHT - 1, HEIGHT),
    ]
    with pytest.raises(ValueError, match="different sizes"):
        changed_runs(base, base[:-ROW], ROW)


def test_packed_runs_rebuild_the_new_frame_exactly():
    rng = random.Random(7)
    for trial in range(50):
        old = frame(trial)
        new = bytearray(old)
        for _ in range(rng.randrange(0, 12)):
            touch(new, rng.randrange(HEIGHT), rng.randrange(WIDTH))
        runs = changed_runs(old, new, ROW)
        payload = pack_runs(new, runs, ROW)
        assert len(payload) == sum(r.bottom - r.top for r in runs) * ROW < len(new) or runs == []
        patched = bytearray(old)
        apply_runs(patched, parse_runs(format_runs(runs)), payload, ROW)
        assert patched == new


def test_a_patch_that_does_not_fit_is_refused():
    base = frame(2)
    with pytest.raises(ValueError, match="outside a frame"):
        apply_runs(base, [RowRun(HEIGHT - 1, HEIGHT + 1)], bytes(2 * ROW), ROW)
    with pytest.raises(ValueError, match="the payload has"):
        apply_runs(base, [RowRun(0, 1)], bytes(2 * ROW), ROW)
    with pytest.raises(ValueError):
        parse_runs("3-x")


def test_history_sends_changes_only_against_the_frame_it_holds():
    history = FrameHistory()
    first, second = frame(3), frame(3)
    touch(second, 10)
    id1, runs = history.record(first, WIDTH, HEIGHT, since="")
    assert runs is None  # the client holds nothing: the whole frame
    id2, runs = history.record(second, WIDTH, HEIGHT, since=id1)
    assert runs == [RowRun(10, 11)] and id2 != id1
    assert history.record(second, WIDTH, HEIGHT, since=id1)[1] is None  # not the frame held (a lost reply)
    id4, _ = history.record(second, WIDTH, HEIGHT, since="")
    id5, runs = history.record(memoryview(second), WIDTH, HEIGHT, since=id4)  # the guest's capture type
    assert runs == []  # nothing changed: nothing to send
    third = bytearray(second)
    touch(third, 42)
    assert history.record(memoryview(third), WIDTH, HEIGHT, since=id5)[1] == [RowRun(42, 43)]
    last, _ = history.record(second, WIDTH, HEIGHT, since="")
    assert history.record(bytes(ROW * 50), WIDTH, 50, since=last)[1] is None  # the screen was resized


def test_history_says_unchanged_only_for_the_frame_held_and_the_same_change_count():
    history = FrameHistory()
    id1, _ = history.record(frame(4), WIDTH, HEIGHT, since="", changes=5)
    assert history.unchanged(id1, 6) is None  # drawn since the grab
    assert history.unchanged(id1, None) is None  # the count is unknown
    assert history.unchanged("", 5) is None
    id2, width, height = history.unchanged(id1, 5)
    assert (width, height) == (WIDTH, HEIGHT) and id2 != id1
    assert history.unchanged(id1, 5) is None  # the client now holds id2
    assert history.unchanged(id2, 5)
    id3, _ = history.record(frame(4), WIDTH, HEIGHT, since="")  # a grab without a count
    assert history.unchanged(id3, 5) is None


def test_a_quiet_frame_is_reused_only_at_the_same_count_of_the_same_sandbox_and_as_a_copy():
    held = QuietFrame()
    pixels = np.full((2, 3, 3), 7, np.uint8)
    assert held.put(1, 10, pixels) is pixels  # the caller's array, the held one a copy
    pixels[:] = 0  # a caller writes into its observation
    again = held.get(1, 10)
    assert again is not None and (again == 7).all()
    again[:] = 1
    assert (held.get(1, 10) == 7).all()
    assert held.get(1, 11) is None  # drawn since
    assert held.get(2, 10) is None  # another sandbox: counts start again
    assert held.get(1, None) is None
    held.put(1, None, pixels)  # read without a count: nothing to reuse it by
    assert held.get(1, 10) is None


@pytest.mark.desktop
def test_the_local_screenshot_reuses_a_quiet_frame_and_sees_a_change_at_once(desktop):
    """The screen file is read only when the X server drew since; a change asked for at once shows."""
    for colour in ("#123456", "#654321", "#abcdef"):
        assert desktop.execute(["xsetroot", "-solid", colour]).ok
        first = desktop.screenshot().pixels  # no settle: the change is drawn when xsetroot exits
        rgb = tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))
        assert (first[0, 0] == rgb).all()
        first[:] = 0  # the observation is the caller's to change
        assert (desktop.screenshot().pixels[0, 0] == rgb).all()


# A still green window over rows 400-600 (no caret, no pointer).
SMALL_WINDOW = """
import tkinter as tk
root = tk.Tk()
root.title("delta-rows")
root.geometry("300x200+100+400")
root.configure(background="#00ff00", cursor="none")
root.mainloop()
"""


@pytest.mark.desktop
def test_the_guest_sends_changed_rows_and_the_client_rebuilds_the_screen(desktop, monkeypatch):
    """Through the desktop's guest server: an unchanged screen costs no pixels; a patched copy is exact."""
    client = desktop.client

    def raw(since: str) -> tuple[dict[str, str], bytes]:
        status, headers, body = client.request("GET", f"/frame?since={since}")
        assert status == 200
        return headers, body

    headers, full = raw("")
    assert (
        "x-frame-base" not in headers and len(full) == int(headers["x-width"]) * int(headers["x-height"]) * 4
    )
    unchanged, body = raw(headers["x-frame-id"])
    assert (
        unchanged["x-frame-base"] == headers["x-frame-id"] and unchanged["x-frame-rows"] == "" and body == b""
    )

    replies: list[dict[str, str]] = []
    request = client.request

    def recorded(*args, **kwargs):
        reply = request(*args, **kwargs)
        replies.append(reply[1])
        return reply

    monkeypatch.setattr(client, "request", recorded)
    client.screenshot()  # the client now holds a frame
    assert desktop.execute(["xsetroot", "-solid", "#336699"]).ok
    desktop.settle()
    patched = client.screenshot().pixels
    assert replies[-1]["x-frame-base"] and replies[-1]["x-frame-rows"] == f"0-{patched.shape[0]}"
    assert (patched[0, 0] == (0x33, 0x66, 0x99)).all()  # the root window's new colour came through a patch
    _headers, whole = client.request("GET", "/frame")[1:]  # a whole frame, no history involved
    assert np.array_equal(patched, bgra_to_rgb(whole, patched.shape[1], patched.shape[0]))
    assert np.array_equal(client.screenshot().pixels, patched)  # no change: the held copy, unpatched
    assert replies[-1]["x-frame-rows"] == ""
    # Drawn, and asked for at once, no settle in between: the frame held is not the screen any more.
    assert desktop.execute(["xsetroot", "-solid", "#996633"]).ok
    assert (client.screenshot().pixels[0, 0] == (0x99, 0x66, 0x33)).all()
    # A window over some rows only: those rows are patched and converted again, the rest kept.
    desktop.launch(["python3", "-c", SMALL_WINDOW])
    try:
        deadline = time.monotonic() + 30
        while not any(w.title == "delta-rows" for w in desktop.windows()):
            assert time.monotonic() < deadline, "the window did not show"
            time.sleep(0.05)
        desktop.settle()
        patched = client.screenshot().pixels
        runs = parse_runs(replies[-1]["x-frame-rows"])
        assert runs and sum(run.bottom - run.top for run in runs) < patched.shape[0] // 2
        assert (patched[runs[0].top - 1, 0] == (0x99, 0x66, 0x33)).all()  # a row above, kept
        _headers, whole = client.request("GET", "/frame")[1:]
        assert np.array_equal(patched, bgra_to_rgb(whole, patched.shape[1], patched.shape[0]))
    finally:
        desktop.close_window("delta-rows", strict=True)

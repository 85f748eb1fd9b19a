"""The settle wait ignores repaints that change no pixel, and waits for one that changes a single pixel.

LibreOffice repaints its toolbars with identical pixels about every 300 ms after a
document loaded; counted as changes, each would extend a reset's settle wait by
another horizon. The wait counts only a change whose pixels differ from
the screen as it was (:class:`~osworld_mcp_env.guest.screen_copy.ScreenCopy`).

The copy's rules run on a scripted screen; the wait's on a real Xvfb, with a painter
client (python-xlib) and a CPU witness that reports a still desktop, so only the
damage witness decides.
"""

from __future__ import annotations

import shutil
import threading
import time

import pytest
from osworld_mcp_env.guest.damage import DamageWatch
from osworld_mcp_env.guest.screen import Box, RawFrame
from osworld_mcp_env.guest.screen_copy import MAX_GRABS, ScreenCopy
from osworld_mcp_env.guest.settle import CpuSample, SettleConfig, Settler
from Xlib import display as xdisplay

WIDTH, HEIGHT = 8, 4


class ScriptedScreen:
    """A screen of one byte value per pixel, and the boxes each grab read."""

    def __init__(self) -> None:
        self.pixels = [[0] * WIDTH for _ in range(HEIGHT)]
        self.grabs: list[Box] = []

    def grab(self, box: Box) -> RawFrame:
        self.grabs.append(box)
        rows = (self.pixels[y][box.x : box.x + box.width] for y in range(box.y, box.y + box.height))
        data = bytes(value for row in rows for value in row for _ in range(4))
        return RawFrame(memoryview(data), box.width, box.height)


def test_the_copy_counts_only_pixels_that_differ_from_the_screen_as_it_is_now():
    screen = ScriptedScreen()
    copy = ScreenCopy(screen.grab, WIDTH, HEIGHT)
    assert not copy.update([Box(0, 0, WIDTH, HEIGHT)])  # repainted as it was
    screen.pixels[2][5] = 7
    assert not copy.update([Box(0, 0, 4, 4)])  # a box that does not hold the change
    assert copy.update([Box(4, 1, 2, 2)])
    assert not copy.update([Box(4, 1, 2, 2)])  # the copy took it
    screen.pixels[2][5] = 0  # back to the state the copy started from: a change now
    assert copy.update([Box(5, 2, 1, 1)])
    screen.pixels[3][0] = 9
    assert copy.update([Box(0, 0, WIDTH, HEIGHT)])  # whole rows, compared at once
    assert not copy.update([Box(0, 3, WIDTH, 1), Box(1, 0, 1, 1)])


def test_the_copy_takes_every_box_even_after_the_first_that_changed():
    screen = ScriptedScreen()
    copy = ScreenCopy(screen.grab, WIDTH, HEIGHT)
    screen.pixels[0][0] = screen.pixels[3][7] = 1
    assert copy.update([Box(0, 0, 1, 1), Box(7, 3, 1, 1)])
    assert not copy.update([Box(7, 3, 1, 1)])


def test_the_copy_reads_only_the_damaged_boxes_or_their_bounding_box_past_max_grabs():
    screen = ScriptedScreen()
    copy = ScreenCopy(screen.grab, WIDTH, HEIGHT)
    screen.grabs.clear()
    copy.update([Box(1, 1, 2, 1), Box(6, 2, 1, 2), Box(0, 0, 0, 5)])  # an empty box reads nothing
    assert screen.grabs == [Box(1, 1, 2, 1), Box(6, 2, 1, 2)]
    screen.grabs.clear()
    many = [Box(x % WIDTH, x // WIDTH, 1, 1) for x in range(MAX_GRABS + 1)]
    screen.pixels[2][0] = 3  # in the last box only
    assert copy.update(many)
    assert screen.grabs == [Box(0, 0, WIDTH, 3)]


def test_a_box_past_the_screen_counts_as_changed():
    copy = ScreenCopy(ScriptedScreen().grab, WIDTH, HEIGHT)
    assert copy.update([Box(6, 0, 3, 1)])
    assert copy.update([Box(-1, 0, 2, 1)])


class StillCpu:
    """The CPU witness of a desktop that never computes: the damage witness alone decides."""

    def sample(self) -> CpuSample:
        return CpuSample(time.monotonic(), 0.0, 0, {}, {})


xvfb_only = pytest.mark.skipif(shutil.which("Xvfb") is None, reason="needs Xvfb")


@xvfb_only
def test_identical_repaints_every_100_ms_do_not_keep_the_wait_open(xvfb):
    # 150 ms of quiet, a repaint every 100 ms: counted as changes, they would hold the
    # wait to its 60 s cap; the wait must end while the painter goes on.
    name = xvfb.args[-1]
    settler = Settler(DamageWatch(name), StillCpu())
    painter = xdisplay.Display(name)
    root = painter.screen().root
    gc = root.create_gc(foreground=0x336699)
    root.fill_rectangle(gc, 10, 10, 200, 100)
    painter.sync()
    config = SettleConfig(first_change_ms=150.0, quiet_ms=150.0, max_ms=60_000.0)
    done = threading.Event()
    waited: list[float] = []
    threading.Thread(target=lambda: (waited.append(settler.wait(config, settler.mark())), done.set())).start()
    repaints = 0
    try:
        while not done.wait(0.1) and repaints < 100:  # 10 s of repaints at most
            root.fill_rectangle(gc, 10, 10, 200, 100)
            painter.sync()
            repaints += 1
    finally:
        painter.close()
    assert done.is_set(), f"the wait was still open after {repaints} identical repaints"
    assert waited[0] < config.max_ms


@xvfb_only
def test_a_one_pixel_change_among_identical_repaints_keeps_the_wait_open(xvfb):
    name = xvfb.args[-1]
    watch = DamageWatch(name)
    settler = Settler(watch, StillCpu())
    painter = xdisplay.Display(name)
    root = painter.screen().root
    gc, dot = root.create_gc(foreground=0x336699), root.create_gc(foreground=0x336698)
    root.fill_rectangle(gc, 10, 10, 200, 100)
    painter.sync()
    # Unseen, the change would end the wait 20 ms after the mark; seen, 600 ms after it.
    config = SettleConfig(first_change_ms=20.0, quiet_ms=600.0, max_ms=60_000.0)
    # A round trip through the watch: the fill above is judged before the count is read,
    # so it cannot land after the mark and be counted with the one-pixel change.
    assert watch.count_now() is not None
    visible = watch.latest()[0]
    mark = settler.mark()
    done = threading.Event()
    ended: list[float] = []

    def wait() -> None:
        settler.wait(config, mark)
        ended.append(time.monotonic())
        done.set()

    changing = time.monotonic()  # before the change is drawn: the watch times it later
    root.fill_rectangle(dot, 100, 50, 1, 1)  # one pixel, off by one in blue
    painter.sync()
    threading.Thread(target=wait).start()
    repaints = 0
    try:
        while not done.wait(0.1) and repaints < 100:  # identical repaints of the area around it go on
            root.fill_rectangle(gc, 10, 10, 80, 100)
            painter.sync()
            repaints += 1
    finally:
        painter.close()
    assert done.is_set(), f"the wait was still open after {repaints} identical repaints"
    assert watch.latest()[0] == visible + 1  # the one pixel, not the repaints
    assert ended[0] >= changing + config.quiet_ms / 1000, "the wait returned before the change had been quiet"


@xvfb_only
def test_a_screen_that_changes_every_50_ms_ends_the_wait_at_its_cap(xvfb):
    name = xvfb.args[-1]
    settler = Settler(DamageWatch(name), StillCpu())
    painter = xdisplay.Display(name)
    root = painter.screen().root
    gcs = [root.create_gc(foreground=colour) for colour in (0x000001, 0x000002)]
    config = SettleConfig(first_change_ms=150.0, quiet_ms=150.0, max_ms=500.0)
    done = threading.Event()
    waited: list[float] = []
    threading.Thread(target=lambda: (waited.append(settler.wait(config, settler.mark())), done.set())).start()
    frames = 0
    try:
        while not done.wait(0.05) and frames < 400:  # 20 s at most
            root.fill_rectangle(gcs[frames % 2], 0, 0, 1, 1)
            painter.sync()
            frames += 1
    finally:
        painter.close()
    assert done.is_set() and waited[0] >= config.max_ms

"""The screen's changes as the X server reports them (the DAMAGE extension on the root window).

Polling pixels costs a grab and a compare per poll and sees a change only at the
next poll; the server knows the instant it draws. A damage object on the root
window covers every window drawn into the framebuffer (Xvfb composites nothing
off-screen). It reports at the ``NonEmpty`` level: one event when the damaged
region goes from empty to non-empty, re-armed by subtracting the region, so a
repaint of thousands of drawing requests costs one event, not thousands.

:meth:`DamageWatch.count_now` is exact at the instant of the call: the watch's thread
first makes a round trip to the server, behind which every change the server drew
earlier has been reported. A frame taken after an unchanged count is then still the
screen, and a VM skips the grab and compare (~28 ms under TCG) for a quiet step.

A drawing request that leaves every pixel as it was (LibreOffice repaints its
toolbars with identical pixels about every 300 ms after a document loaded) is damage
too. The watch takes each event's damaged boxes from the server (an XFIXES region)
and compares their pixels with its copy of the screen
(:class:`~osworld_mcp_env.guest.screen_copy.ScreenCopy`): :meth:`DamageWatch.latest`,
which the settle wait reads, counts only changes that altered a pixel, while
:meth:`DamageWatch.count_now` counts every report, so a frame held is reused only
while nothing at all was drawn (a change and its undoing between two reads would
leave the copy unchanged, not a frame grabbed in between).

The one thing Xvfb draws into its framebuffer without a report is the pointer's
sprite, so the watch hides it (XFIXES) for as long as it runs. Frames then show no
pointer on either backend: a VM's grab (``GetImage``) never had it.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time

from mss.exception import ScreenShotError
from Xlib import display as xdisplay
from Xlib.error import ConnectionClosedError
from Xlib.ext import damage

from osworld_mcp_env.guest.screen import Box, Screen
from osworld_mcp_env.guest.screen_copy import ScreenCopy
from osworld_mcp_env.guest.xfixes_region import create_region, fetch_region


class DamageUnavailable(RuntimeError):
    """The X server has no DAMAGE extension."""


class DamageWatch:
    """Counts the screen's changes from a thread of its own, on a connection of its own.

    The connection is not :class:`~osworld_mcp_env.guest.xdisplay.XConnection`:
    a thread blocked on X events must not hold the lock that input needs.
    """

    def __init__(self, name: str | None = None) -> None:
        self._display = xdisplay.Display(name)
        if not self._display.has_extension("DAMAGE"):
            self._display.close()
            raise DamageUnavailable("The X server lacks the DAMAGE extension; the settle wait needs it.")
        self._display.damage_query_version()
        screen = self._display.screen()
        root = screen.root
        self._damage = root.damage_create(damage.DamageReportNonEmpty)
        self._region = 0  # where DamageSubtract puts the damaged boxes; 0: XFIXES is missing
        self._copy: ScreenCopy | None = None  # without one, every change counts as visible
        if self._display.has_extension("XFIXES"):
            # Xvfb draws the pointer's sprite into its framebuffer with no damage report,
            # and puts it back after an app drew over it later, from its idle handler: a
            # frame could lack or misplace it with nothing counted. Hidden while this
            # connection lasts; a client can unhide only what it hid itself.
            self._display.xfixes_query_version()
            root.xfixes_hide_cursor()
            self._region = create_region(self._display)
        self._display.sync()
        if self._region:  # read after the damage object exists: a later change is reported
            self._copy = ScreenCopy(Screen(name).grab, screen.width_in_pixels, screen.height_in_pixels)
        self._lock = threading.Condition()
        self._count = 0
        # Reports taken off the queue, and those whose pixels were compared: latest() waits
        # for the comparison under way when it is called (a grab and compare, 2.4 ms at most
        # locally), so a settle wait never takes a change still being compared for none.
        self._judging = self._judged = 0
        self._visible = 0  # changes that altered a pixel, and the time of the latest
        self._visible_last = time.monotonic()
        self._asked = self._answered = 0  # count_now's calls, and those its round trip covered
        self._alive = True
        self._wake_read, self._wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        threading.Thread(target=self._run, name="damage", daemon=True).start()

    def latest(self) -> tuple[int, float]:
        """How many changes that altered a pixel were seen so far, and the monotonic time of the latest.

        A change the watch's thread is comparing is waited for: that one only, so a screen
        that never rests delays the answer by one grab and compare at most.
        """
        with self._lock:
            under_way = self._judging
            self._lock.wait_for(lambda: self._judged >= under_way or not self._alive)
            return self._visible, self._visible_last

    def count_now(self, timeout_s: float = 1.0) -> int | None:
        """How many changes the server drew up to this call; None if the watch could not tell in time.

        The watch's thread makes a round trip to the server and counts the changes it
        reported before the reply, so no change drawn before the call is still in flight.
        """
        with self._lock:
            if not self._alive:
                return None
            self._asked += 1
            ticket = self._asked
            with contextlib.suppress(BlockingIOError):  # a full pipe: a wake-up is pending anyway
                os.write(self._wake_write, b"\0")
            if not self._lock.wait_for(lambda: self._answered >= ticket or not self._alive, timeout_s):
                return None
            return self._count if self._answered >= ticket else None

    def _run(self) -> None:
        fd = self._display.fileno()
        try:
            while True:
                with self._lock:
                    asked = self._asked > self._answered
                if asked:  # before more events: a screen that never rests must not starve the caller
                    self._answer()
                    continue
                # Events that arrived with the last round trip's reply are already
                # read off the socket, where select would not see them.
                events = self._display.pending_events()
                if not events:
                    readable, _, _ = select.select([fd, self._wake_read], [], [])
                    if self._wake_read in readable:  # the call itself is seen above, under the lock
                        with contextlib.suppress(BlockingIOError):
                            os.read(self._wake_read, 4096)
                    continue
                self._consume(events)
        except (ConnectionClosedError, OSError):
            with self._lock:
                self._alive = False  # the X server is gone, and with it the session
                self._lock.notify_all()

    def _answer(self) -> None:
        """Answers the ``count_now`` calls made so far, after a round trip and the changes before it."""
        with self._lock:
            covered = self._asked
        self._display.sync()  # reads every event the server sent before its reply
        if events := self._display.pending_events():
            self._consume(events)
        with self._lock:
            self._answered = covered
            self._lock.notify_all()

    def _consume(self, events: int) -> None:
        """Counts ``events`` queued reports as one change, re-arms the report, compares the pixels drawn."""
        with self._lock:
            self._judging += 1
        visible, now = False, 0.0  # the connection failed: no change, and latest() stops waiting
        try:
            visible, now = self._judge(events)
        finally:
            with self._lock:
                self._judged = self._judging
                if visible:
                    self._visible += 1
                    self._visible_last = now
                self._lock.notify_all()

    def _judge(self, events: int) -> tuple[bool, float]:
        """Takes ``events`` reports off the queue; whether they changed a pixel, and when they were taken."""
        for _ in range(events):
            self._display.next_event()
        # Subtracting re-arms the report; the round trip orders it after the
        # drawing that caused the event, so the change time below is not early.
        # Drawing after it is reported again, so the pixels are read after it.
        self._display.damage_subtract(self._damage, 0, self._region)
        if self._region:
            boxes = fetch_region(self._display, self._region)
        else:
            self._display.sync()
            boxes = []
        now = time.monotonic()
        with self._lock:
            self._count += 1
        return self._visible_change(boxes), now

    def _visible_change(self, boxes: list[Box]) -> bool:
        """Whether the pixels of ``boxes`` differ from the copy (True when there is no copy to tell)."""
        if self._copy is None:
            return True
        try:
            return self._copy.update(boxes)
        except ScreenShotError:  # the screen could not be read: a change it may have been
            return True

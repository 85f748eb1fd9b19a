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

from Xlib import display as xdisplay
from Xlib.error import ConnectionClosedError
from Xlib.ext import damage


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
        root = self._display.screen().root
        self._damage = root.damage_create(damage.DamageReportNonEmpty)
        if self._display.has_extension("XFIXES"):
            # Xvfb draws the pointer's sprite into its framebuffer with no damage report,
            # and puts it back after an app drew over it later, from its idle handler: a
            # frame could lack or misplace it with nothing counted. Hidden while this
            # connection lasts; a client can unhide only what it hid itself.
            self._display.xfixes_query_version()
            root.xfixes_hide_cursor()
        self._display.sync()
        self._lock = threading.Condition()
        self._count = 0
        self._last = time.monotonic()
        self._asked = self._answered = 0  # count_now's calls, and those its round trip covered
        self._alive = True
        self._wake_read, self._wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        threading.Thread(target=self._run, name="damage", daemon=True).start()

    def latest(self) -> tuple[int, float]:
        """How many changes were seen so far, and the monotonic time of the latest one."""
        with self._lock:
            return self._count, self._last

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
        """Counts ``events`` queued reports as one change and re-arms the report."""
        for _ in range(events):
            self._display.next_event()
        # Subtracting re-arms the report; the round trip orders it after the
        # drawing that caused the event, so the change time below is not early.
        self._display.damage_subtract(self._damage, 0, 0)
        self._display.sync()
        with self._lock:
            self._count += 1
            self._last = time.monotonic()

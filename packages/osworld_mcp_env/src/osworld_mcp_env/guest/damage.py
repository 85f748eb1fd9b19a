"""The screen's changes as the X server reports them (the DAMAGE extension on the root window).

Polling pixels costs a grab and a compare per poll and sees a change only at the
next poll; the server knows the instant it draws. A damage object on the root
window covers every window drawn into the framebuffer (Xvfb composites nothing
off-screen). It reports at the ``NonEmpty`` level: one event when the damaged
region goes from empty to non-empty, re-armed by subtracting the region, so a
repaint of thousands of drawing requests costs one event, not thousands.
"""

from __future__ import annotations

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
        self._damage = self._display.screen().root.damage_create(damage.DamageReportNonEmpty)
        self._display.sync()
        self._lock = threading.Lock()
        self._count = 0
        self._last = time.monotonic()
        threading.Thread(target=self._run, name="damage", daemon=True).start()

    def latest(self) -> tuple[int, float]:
        """How many changes were seen so far, and the monotonic time of the latest one."""
        with self._lock:
            return self._count, self._last

    def _run(self) -> None:
        fd = self._display.fileno()
        try:
            while True:
                # Events that arrived with the last round trip's reply are already
                # read off the socket, where select would not see them.
                events = self._display.pending_events()
                if not events:
                    select.select([fd], [], [])
                    continue
                for _ in range(events):
                    self._display.next_event()
                # Subtracting re-arms the report; the round trip orders it after the
                # drawing that caused the event, so the change time below is not early.
                self._display.damage_subtract(self._damage, 0, 0)
                self._display.sync()
                with self._lock:
                    self._count += 1
                    self._last = time.monotonic()
        except (ConnectionClosedError, OSError):
            return  # the X server is gone, and with it the session

"""Screen capture through MIT-SHM and the settle detector that replaces fixed sleeps.

A grab of a 1920x1080 screen costs ~0.6 ms with mss's XShm backend; converting
to RGB costs ~13 ms inside mss, so frames leave the guest as BGRA bytes and the
host converts them with numpy. PNG is produced only for OSWorld's ``/screenshot``.
"""

from __future__ import annotations

import io
import threading
import time
from dataclasses import dataclass

import mss
import numpy as np
from PIL import Image


@dataclass(frozen=True)
class RawFrame:
    """A BGRA capture with its monotonic id."""

    bgra: memoryview
    width: int
    height: int
    frame_id: int


@dataclass(frozen=True)
class SettleConfig:
    """How long to watch the screen after an input.

    The screen counts as settled once it stayed unchanged for ``quiet_ms``; when
    nothing changes within ``first_change_ms`` the action had no visible effect
    and waiting longer buys nothing. ``max_ms`` caps the wait for animations and
    blinking carets.
    """

    first_change_ms: float = 80.0
    quiet_ms: float = 50.0
    max_ms: float = 1500.0
    poll_ms: float = 10.0


class Screen:
    """Thread-safe screen grabber of one X display."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._local = threading.local()
        self._frame_id = 0

    def _grabber(self) -> mss.base.MSSBase:
        # mss handles are per thread: the server answers each request in its own thread.
        sct = getattr(self._local, "sct", None)
        if sct is None:
            sct = mss.MSS()
            self._local.sct = sct
        return sct

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the whole screen."""
        monitor = self._grabber().monitors[0]
        return monitor["width"], monitor["height"]

    def grab(self) -> RawFrame:
        """Captures the whole screen as BGRA and gives it the next frame id."""
        sct = self._grabber()
        shot = sct.grab(sct.monitors[0])
        with self._lock:
            self._frame_id += 1
            frame_id = self._frame_id
        # No copy: the buffer is this thread's and is reused only by its next grab.
        return RawFrame(memoryview(shot.raw).cast("B"), shot.width, shot.height, frame_id)

    def png(self) -> bytes:
        """Captures the screen as PNG (the OSWorld ``/screenshot`` contract)."""
        frame = self.grab()
        image = Image.frombuffer("RGB", (frame.width, frame.height), frame.bgra, "raw", "BGRX", 0, 1)
        out = io.BytesIO()
        image.save(out, format="PNG", compress_level=1)
        return out.getvalue()

    def _signature(self) -> bytes:
        sct = self._grabber()
        shot = sct.grab(sct.monitors[0])
        pixels = np.frombuffer(shot.raw, dtype=np.uint32).reshape(shot.height, shot.width)
        # Every 2nd row and column: a caret or a one-character edit still shows.
        return pixels[::2, ::2].tobytes()

    def wait_until_settled(self, config: SettleConfig, baseline: bytes | None = None) -> float:
        """Blocks until the screen stops changing; returns the milliseconds waited.

        Args:
            config: The thresholds.
            baseline: The signature taken before the input; without it the first
                poll is the baseline.
        """
        start = time.perf_counter()
        previous = baseline if baseline is not None else self._signature()
        changed = False
        last_change = start
        while True:
            time.sleep(config.poll_ms / 1000)
            now = time.perf_counter()
            current = self._signature()
            if current != previous:
                changed, last_change, previous = True, now, current
            elapsed = (now - start) * 1000
            if elapsed >= config.max_ms:
                break
            if not changed and elapsed >= config.first_change_ms:
                break
            if changed and (now - last_change) * 1000 >= config.quiet_ms:
                break
        return (time.perf_counter() - start) * 1000

    def signature(self) -> bytes:
        """A cheap fingerprint of the current screen for :meth:`wait_until_settled`."""
        return self._signature()

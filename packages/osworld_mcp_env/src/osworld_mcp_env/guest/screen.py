"""Screen capture through MIT-SHM and the settle detector that replaces fixed sleeps.

A grab of a 1920x1080 screen costs ~0.6 ms with mss's XShm backend; converting
to RGB costs ~13 ms inside mss, so frames leave the guest as BGRA bytes and the
host converts them with numpy. PNG is produced only for OSWorld's ``/screenshot``.
"""

from __future__ import annotations

import io
import os
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
    """How long to watch the desktop after an input.

    The desktop counts as settled once the screen stayed unchanged for
    ``quiet_ms`` *and* its processes used less than ``busy_fraction`` of one core
    over that window: a document that is still loading behind a frozen progress
    bar burns CPU without changing a pixel. When nothing changes and nothing
    works within ``first_change_ms`` the action had no visible effect. ``max_ms``
    caps the wait for animations, playing media and blinking carets.
    """

    first_change_ms: float = 50.0
    quiet_ms: float = 50.0
    max_ms: float = 1500.0
    poll_ms: float = 10.0
    busy_fraction: float = 0.3


class CpuMeter:
    """Total CPU time of the processes in this PID namespace, except the caller."""

    def __init__(self) -> None:
        self._tick_s = 1.0 / os.sysconf("SC_CLK_TCK")
        self._self = os.getpid()

    def seconds(self) -> float:
        """Sum of user + system time of every other process, in seconds."""
        total = 0
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == self._self:
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
            except (OSError, IndexError, ValueError):
                continue
        return total * self._tick_s


class Screen:
    """Thread-safe screen grabber of one X display."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._local = threading.local()
        self._frame_id = 0
        self._cpu = CpuMeter()

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
        """Blocks until the desktop is still (no pixel change, no CPU work); returns milliseconds waited.

        Args:
            config: The thresholds.
            baseline: The signature taken before the input; without it the first
                poll is the baseline.
        """
        start = time.perf_counter()
        previous = baseline if baseline is not None else self._signature()
        samples = [(start, self._cpu.seconds())]  # (time, cpu seconds) per poll
        changed = False
        last_change = start
        while True:
            time.sleep(config.poll_ms / 1000)
            now = time.perf_counter()
            current = self._signature()
            samples.append((now, self._cpu.seconds()))
            if current != previous:
                changed, last_change, previous = True, now, current
            elapsed = (now - start) * 1000
            if elapsed >= config.max_ms:
                break
            window = config.quiet_ms if changed else config.first_change_ms
            if (now - last_change) * 1000 < window:
                continue
            if _busy(samples, now - window / 1000) < config.busy_fraction:
                break
        return (time.perf_counter() - start) * 1000

    def signature(self) -> bytes:
        """A cheap fingerprint of the current screen for :meth:`wait_until_settled`."""
        return self._signature()


def _busy(samples: list[tuple[float, float]], since: float) -> float:
    """Fraction of one core used by the desktop between ``since`` and the last sample."""
    first = next((s for s in samples if s[0] >= since), samples[0])
    last = samples[-1]
    span = last[0] - first[0]
    return (last[1] - first[1]) / span if span > 0 else 0.0

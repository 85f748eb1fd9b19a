"""A one-line progress bar with an ETA, on stderr (no dependency)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def format_duration(seconds: float) -> str:
    """``75`` -> ``"1m15s"``; ``3725`` -> ``"1h02m"``."""
    seconds = max(0, int(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


class Progress:
    """Episodes done out of a total; the ETA extrapolates from episodes finished in this process."""

    def __init__(self, total: int, done: int = 0, stream: TextIO | None = None, width: int = 24) -> None:
        """Starts the clock; ``done`` counts episodes already finished by an earlier (resumed) run."""
        self.total, self.done, self._skipped = total, done, done
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.started = time.monotonic()
        self.errors = 0

    def eta_s(self) -> float | None:
        """Seconds left at the rate of this process, or ``None`` before the first episode ends."""
        finished_here = self.done - self._skipped
        if finished_here <= 0:
            return None
        rate = (time.monotonic() - self.started) / finished_here
        return rate * (self.total - self.done)

    def line(self) -> str:
        """The bar as text: ``[#####-----] 3/9 episodes, 1 error, ETA 1m20s``."""
        filled = round(self.width * self.done / self.total) if self.total else self.width
        eta = self.eta_s()
        errors = f", {self.errors} error{'s' * (self.errors != 1)}" if self.errors else ""
        tail = "ETA --" if eta is None else f"ETA {format_duration(eta)}"
        return (
            f"[{'#' * filled}{'-' * (self.width - filled)}] {self.done}/{self.total} episodes{errors}, {tail}"
        )

    def advance(self, error: bool = False) -> None:
        """Counts one finished episode and redraws."""
        self.done += 1
        self.errors += int(error)
        self.draw()

    def draw(self) -> None:
        """Redraws the line in place."""
        self.stream.write("\r" + self.line())
        self.stream.flush()

    def close(self) -> None:
        """Ends the line."""
        self.stream.write("\n")
        self.stream.flush()

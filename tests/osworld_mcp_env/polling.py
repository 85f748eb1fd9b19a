"""The desktop tests' one wait: poll a condition under a deadline, never a guessed sleep."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float = 60.0, what: str = "the condition") -> T:
    """Polls ``predicate`` until it returns a true value and returns that value.

    Raises:
        TimeoutError: ``predicate`` stayed false for ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}")

"""One python-xlib connection shared by input and window queries, behind a lock.

python-xlib's ``Display`` is not thread-safe and the server answers requests in
threads; every use goes through :meth:`XConnection.session`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from Xlib import display as xdisplay


class XConnection:
    """A lazily opened, lock-guarded connection to ``$DISPLAY``."""

    def __init__(self, name: str | None = None) -> None:
        self._name = name
        self._display: xdisplay.Display | None = None
        self._lock = threading.RLock()

    @contextlib.contextmanager
    def session(self) -> Iterator[xdisplay.Display]:
        """Yields the display with the lock held."""
        with self._lock:
            if self._display is None:
                self._display = xdisplay.Display(self._name)
            yield self._display

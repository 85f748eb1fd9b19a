"""A deadline that every desktop request of one ``env.step`` inherits.

``env.step`` promises to return within ``step_timeout_s``, but the work is spread
over many requests (the action, the settle wait, the frame, the focused window,
the tool list, the evaluator's reads), each with its own default timeout. Rather
than threading a budget through every ``Desktop`` method, the env opens a
:func:`deadline` scope and the guest client clamps each request to what is left
of it, as ``anyio.fail_after`` does for a task. The scope is a context variable:
threads and other envs do not see it.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("osworld_deadline", default=None)


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[float]:
    """Bounds every request made inside the block to ``seconds`` from now.

    A nested scope can only shorten the outer one. Yields the absolute deadline
    (``time.monotonic()`` clock).
    """
    outer = _DEADLINE.get()
    absolute = time.monotonic() + seconds
    if outer is not None:
        absolute = min(absolute, outer)
    token = _DEADLINE.set(absolute)
    try:
        yield absolute
    finally:
        _DEADLINE.reset(token)


def budget(timeout: float) -> float:
    """``timeout`` capped at the seconds left in the current scope (``timeout`` outside any scope).

    The result is zero or negative once the deadline has passed; callers refuse
    to start work then.
    """
    absolute = _DEADLINE.get()
    return timeout if absolute is None else min(timeout, absolute - time.monotonic())

"""Bounded text: the one way this stack cuts a string that is too long.

Observations, tool results, bash output and the agent's relayed results all
carry text whose length the agent controls. Each field declares a bound; text
past it is cut here, and the cut is visible (a marker saying how much went), so
a model never mistakes a truncated result for a complete one. The result,
marker included, never exceeds the bound: a space that declares ``max_length``
must hold what the env returns.
"""

from __future__ import annotations

TRUNCATION_MARKER = "\n[... truncated {dropped} characters ...]"


def truncate(text: str, limit: int) -> str:
    """Cuts ``text`` to at most ``limit`` characters, the marker included.

    The marker names how many characters of ``text`` were dropped. A ``limit``
    too small to hold the marker cuts bare (no marker) so the bound still holds.

    Raises:
        ValueError: ``limit`` is negative.
    """
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}.")
    if len(text) <= limit:
        return text
    # The count printed is at most len(text): reserving its width keeps the bound exact.
    kept = limit - len(TRUNCATION_MARKER.format(dropped=len(text)))
    if kept < 0:
        return text[:limit]
    return text[:kept] + TRUNCATION_MARKER.format(dropped=len(text) - kept)


__all__ = ["TRUNCATION_MARKER", "truncate"]

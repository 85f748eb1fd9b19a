"""Types that cross the guest HTTP boundary, shared by the guest and the host client.

Dependency-free on purpose: the guest (in a VM image) and the host both import it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class WindowInfo:
    """One managed top-level window as the window manager reports it."""

    window_id: int
    title: str
    wm_class: str
    x: int
    y: int
    width: int
    height: int

    def to_dict(self) -> dict[str, object]:
        """JSON form."""
        return asdict(self)


def layout_hash(windows: Sequence[WindowInfo], active: WindowInfo | None) -> str:
    """Fingerprint of ids, geometry, stacking (``windows``, bottom first) and focus.

    Equal fingerprints mean old coordinates still hold. Both guest APIs compute it the
    same way: this project's guest from X, OSWorld's client from its window script.
    """
    parts = [f"{w.window_id}:{w.x},{w.y},{w.width},{w.height}" for w in windows]
    parts.append(f"active={active.window_id if active else 0}")
    return hashlib.blake2b("|".join(parts).encode(), digest_size=8).hexdigest()

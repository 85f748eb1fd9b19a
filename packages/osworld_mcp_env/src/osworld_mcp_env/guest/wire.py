"""Types that cross the guest HTTP boundary, shared by the guest and the host client.

Dependency-free on purpose: the guest (in a VM image) and the host both import it.
"""

from __future__ import annotations

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

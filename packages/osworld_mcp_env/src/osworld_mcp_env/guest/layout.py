"""The layout sample behind the stale-frame guard, and the rule that admits a changed frame.

Coordinates hold only for the layout of the frame they were read from. The sample is
what Hybrid Computer Use keys its guard on: the desktop bounds, every viewable
top-level window (the root's mapped children: a window manager's frames *and* the
override-redirect menus, tooltips and dropdowns no window manager sees) in stacking
order, and the active window. A frame whose sample differs is still admitted when every
point the action cites lands in the same window with the same geometry, with nothing new
above it (:func:`stale_reasons`); an action that cites no point (keys, typing, a scroll
at the pointer) goes where the focus is, so it is admitted while the active window and
the popups are unchanged.

Dependency-free on purpose: the guest (in a VM image) and the host both import it.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

Point = tuple[int, int]


@dataclass(frozen=True)
class TopWindow:
    """One viewable top-level window: a window manager's frame or an override-redirect popup.

    Attributes:
        window_id: The X window (a child of the root; a managed window's frame, not its client).
        x: Left edge on the screen.
        y: Top edge on the screen.
        width: Width in pixels.
        height: Height in pixels.
        override_redirect: Placed by its app, past the window manager (menus, tooltips, dropdowns).
        title: The managed window's title inside the frame ("" for a popup); evidence only,
            no part of the fingerprint: a renamed window does not move a pixel.
    """

    window_id: int
    x: int
    y: int
    width: int
    height: int
    override_redirect: bool = False
    title: str = ""

    def contains(self, point: Point) -> bool:
        """True when ``point`` lies inside the window."""
        px, py = point
        return self.x <= px < self.x + self.width and self.y <= py < self.y + self.height

    @property
    def placement(self) -> tuple[int, int, int, int, int, bool]:
        """What a cited point depends on: identity and geometry."""
        return (self.window_id, self.x, self.y, self.width, self.height, self.override_redirect)

    def describe(self) -> str:
        """One line of evidence: what the window is and where."""
        what = "popup (menu, tooltip or dropdown)" if self.override_redirect else repr(self.title or "window")
        return f"{what} 0x{self.window_id:x} at ({self.x}, {self.y}) {self.width}x{self.height}"


@dataclass(frozen=True)
class LayoutSample:
    """The window layout at one instant.

    Attributes:
        screen: Desktop bounds ``(width, height)``.
        windows: The viewable top-level windows, bottom of the stacking order first.
        active: The active (focused) client window's id, 0 for none.
    """

    screen: tuple[int, int]
    windows: tuple[TopWindow, ...]
    active: int = 0

    @property
    def fingerprint(self) -> str:
        """Hash of bounds, placements in stacking order and focus: equal means old coordinates hold."""
        parts = [f"screen={self.screen[0]}x{self.screen[1]}", f"active={self.active}"]
        parts += [",".join(map(str, w.placement)) for w in self.windows]
        return hashlib.blake2b("|".join(parts).encode(), digest_size=8).hexdigest()

    def window_at(self, point: Point) -> TopWindow | None:
        """The topmost window under ``point`` (the one its input goes to), None for the bare root."""
        return next((w for w in reversed(self.windows) if w.contains(point)), None)

    @property
    def popups(self) -> frozenset[tuple[int, int, int, int, int, bool]]:
        """The override-redirect windows' placements (an open menu may grab the keyboard)."""
        return frozenset(w.placement for w in self.windows if w.override_redirect)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        windows = [asdict(w) for w in self.windows]
        return {"screen": list(self.screen), "windows": windows, "active": self.active}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LayoutSample:
        """Reads :meth:`to_dict`'s form; raises ``KeyError``/``TypeError``/``ValueError`` on another shape."""
        width, height = data["screen"]
        windows = tuple(
            TopWindow(
                window_id=int(w["window_id"]),
                x=int(w["x"]),
                y=int(w["y"]),
                width=int(w["width"]),
                height=int(w["height"]),
                override_redirect=bool(w.get("override_redirect", False)),
                title=str(w.get("title", "")),
            )
            for w in data["windows"]
        )
        return cls(screen=(int(width), int(height)), windows=windows, active=int(data.get("active", 0)))


def stale_reasons(cited: LayoutSample, current: LayoutSample, points: Sequence[Point]) -> list[str]:
    """Why coordinates read under ``cited`` would not land the same way now; empty: admit.

    A point holds when the topmost window under it is the same window with the same
    geometry in both samples (or the bare desktop in both): a window raised over it, a
    popup opened over it, the window moved or resized under it all break it, a change
    elsewhere on the screen does not. With no cited point, the active window and the
    popups must be unchanged.
    """
    if cited.fingerprint == current.fingerprint:
        return []
    if cited.screen != current.screen:
        return [f"the desktop bounds changed from {_size(cited.screen)} to {_size(current.screen)}"]
    reasons = []
    for point in points:
        before, after = cited.window_at(point), current.window_at(point)
        if (before and before.placement) != (after and after.placement):
            reasons.append(f"{list(point)} was on {_name(before)} and is now on {_name(after)}")
    if not points:
        if cited.active != current.active:
            reasons.append(f"the active window changed from 0x{cited.active:x} to 0x{current.active:x}")
        if cited.popups != current.popups:
            reasons.append("a popup (menu, tooltip or dropdown) opened or closed")
    return reasons


def _name(window: TopWindow | None) -> str:
    return window.describe() if window is not None else "the bare desktop"


def _size(screen: tuple[int, int]) -> str:
    return f"{screen[0]}x{screen[1]}"


class LayoutMemory:
    """The samples recently reported, by fingerprint: the guard compares a cited frame's sample.

    Frames cite a fingerprint; a guard that only had the fingerprint could tell "changed"
    but not "changed where". Bounded: a fingerprint older than ``size`` reports is
    forgotten, and a frame citing it is refused (fail closed).
    """

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._samples: OrderedDict[str, LayoutSample] = OrderedDict()

    def remember(self, sample: LayoutSample) -> str:
        """Keeps ``sample``; returns its fingerprint."""
        key = sample.fingerprint
        self._samples[key] = sample
        self._samples.move_to_end(key)
        while len(self._samples) > self._size:
            self._samples.popitem(last=False)
        return key

    def recall(self, fingerprint: str) -> LayoutSample | None:
        """The sample reported under ``fingerprint``, if still kept."""
        return self._samples.get(fingerprint)


def check_cited_frame(
    memory: LayoutMemory, fingerprint: str, current: LayoutSample, points: Iterable[Point]
) -> dict[str, Any] | None:
    """The guard's verdict on an action citing the frame of ``fingerprint``: None admits it.

    Otherwise the refusal's evidence: ``reasons``, the current ``layout_hash`` and
    ``layout`` (so the caller sees what is on screen now), ``input_events_emitted: False``.
    """
    if current.fingerprint == fingerprint:
        return None
    cited = memory.recall(fingerprint)
    memory.remember(current)
    if cited is None:
        reasons = ["the cited frame's layout is no longer known"]
    else:
        reasons = stale_reasons(cited, current, list(points))
        if not reasons:
            return None
    return {
        "reasons": reasons,
        "layout_hash": current.fingerprint,
        "layout": current.to_dict(),
        "input_events_emitted": False,
    }


def window_changes(before: LayoutSample, after: LayoutSample) -> list[dict[str, Any]]:
    """What a GUI action did to the windows: each top-level opened, closed or moved, and a new focus.

    Each change is ``{"change": "opened" | "closed" | "moved" | "activated", "window": line}``,
    the line as :meth:`TopWindow.describe` writes it (the active window by its id).
    Popups count: an opened menu is a window opened.
    """
    old = {w.window_id: w for w in before.windows}
    new = {w.window_id: w for w in after.windows}
    changes = [{"change": "opened", "window": w.describe()} for i, w in new.items() if i not in old]
    changes += [{"change": "closed", "window": w.describe()} for i, w in old.items() if i not in new]
    changes += [
        {"change": "moved", "window": w.describe()}
        for i, w in new.items()
        if i in old and w.placement != old[i].placement
    ]
    if before.active != after.active:
        changes.append({"change": "activated", "window": f"0x{after.active:x}"})
    return changes

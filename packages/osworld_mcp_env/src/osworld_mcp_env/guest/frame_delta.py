"""Frames as changes against the last one the client holds: the rows that differ, nothing else.

A 1920x1080 BGRA frame is 8 MB. Inside a VM it crosses QEMU's user-mode network,
which moves a few MB/s under TCG, so a raw frame costs most of a second while a
step changes a few rows (a cell cursor, a status bar) or none. The guest keeps the
last frame it sent and, when the client names it (its id) in the next request,
sends only the runs of changed rows; the client patches its copy. An id the guest
does not hold (a lost reply, a reverted VM, another client) gets a whole frame,
so the client's copy is never patched against the wrong base: ids are random.
The guest also notes how many changes the X server had reported before each grab
(:class:`~osworld_mcp_env.guest.damage.DamageWatch`); while that count stands, the
frame held is still the screen, and no grab or compare is needed to say so.

Pure Python on bytes (the guest's interpreter may lack numpy): equal buffers are
found by one ``memcmp`` (``bytearray ==``), changed rows by comparing bands of rows,
then the rows of the bands that differ.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass

# Rows compared at once before looking at single rows: most of a frame is unchanged.
BAND_ROWS = 32
# Changed runs this close are sent as one (fewer, larger pieces; a few rows more).
MERGE_GAP_ROWS = 8


@dataclass(frozen=True)
class RowRun:
    """Rows ``[top, bottom)`` of a frame."""

    top: int
    bottom: int


def changed_runs(
    previous: bytes | bytearray, current: bytes | bytearray | memoryview, row_bytes: int
) -> list[RowRun]:
    """The runs of rows where ``current`` differs from ``previous`` (same size), merged across small gaps.

    ``previous`` stays on the left of each comparison: a ``bytearray`` there compares with
    any buffer (the guest's ``memoryview`` capture) by ``memcmp``; a ``memoryview`` on the
    left would compare byte by byte.
    """
    if len(previous) != len(current) or row_bytes <= 0 or len(current) % row_bytes:
        raise ValueError("frames of different sizes, or a row size that does not divide the frame")
    if previous == current:
        return []
    height = len(current) // row_bytes
    rows: list[int] = []
    for band_top in range(0, height, BAND_ROWS):
        band_bottom = min(height, band_top + BAND_ROWS)
        start, end = band_top * row_bytes, band_bottom * row_bytes
        if previous[start:end] == current[start:end]:
            continue
        rows += [
            y
            for y in range(band_top, band_bottom)
            if previous[y * row_bytes : (y + 1) * row_bytes] != current[y * row_bytes : (y + 1) * row_bytes]
        ]
    runs: list[RowRun] = []
    for y in rows:
        if runs and y - runs[-1].bottom <= MERGE_GAP_ROWS:
            runs[-1] = RowRun(runs[-1].top, y + 1)
        else:
            runs.append(RowRun(y, y + 1))
    return runs


def pack_runs(current: bytes | bytearray | memoryview, runs: list[RowRun], row_bytes: int) -> bytes:
    """The bytes of ``runs`` of ``current``, in order."""
    view = memoryview(current)
    return b"".join(view[run.top * row_bytes : run.bottom * row_bytes] for run in runs)


def apply_runs(base: bytearray, runs: list[RowRun], payload: bytes | memoryview, row_bytes: int) -> None:
    """Patches ``base`` in place with ``payload`` (what :func:`pack_runs` made against it).

    Raises:
        ValueError: The runs do not fit the frame or do not add up to the payload.
    """
    height = len(base) // row_bytes
    offset = 0
    for run in runs:
        if not 0 <= run.top < run.bottom <= height:
            raise ValueError(f"rows {run.top}-{run.bottom} are outside a frame of {height} rows")
        size = (run.bottom - run.top) * row_bytes
        base[run.top * row_bytes : run.bottom * row_bytes] = payload[offset : offset + size]
        offset += size
    if offset != len(payload):
        raise ValueError(f"the runs cover {offset} bytes, the payload has {len(payload)}")


def format_runs(runs: list[RowRun]) -> str:
    """``"top-bottom,top-bottom"`` (a header value; empty for no change)."""
    return ",".join(f"{run.top}-{run.bottom}" for run in runs)


def parse_runs(text: str) -> list[RowRun]:
    """Inverse of :func:`format_runs`.

    Raises:
        ValueError: A malformed value.
    """
    runs = []
    for part in filter(None, text.split(",")):
        top, _, bottom = part.partition("-")
        runs.append(RowRun(int(top), int(bottom)))
    return runs


class FrameHistory:
    """The last frame the guest sent, under a random id (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._id = ""
        self._frame = bytearray()
        self._size = (0, 0)
        self._changes: int | None = None

    def record(
        self,
        bgra: bytes | bytearray | memoryview,
        width: int,
        height: int,
        since: str | None,
        changes: int | None = None,
    ) -> tuple[str, list[RowRun] | None]:
        """Remembers ``bgra`` as the last frame; returns its new id and the runs against ``since``.

        The runs are None (send the whole frame) unless ``since`` is the id of the
        frame held, of the same size. ``changes`` is the screen's change count read
        before the grab (None: unknown).
        """
        with self._lock:
            self._changes = changes
            runs = None
            if since and since == self._id and self._size == (width, height):
                runs = changed_runs(self._frame, bgra, width * 4)
            if runs != []:  # an unchanged frame keeps its copy: 8 MB less to copy per quiet step
                self._frame = bytearray(bgra)
            self._id, self._size = secrets.token_hex(8), (width, height)
            return self._id, runs

    def unchanged(self, since: str, changes: int | None) -> tuple[str, int, int] | None:
        """(new id, width, height) of the frame held, when ``since`` names it and nothing was drawn since.

        ``changes`` is the screen's change count now, exact at this instant
        (:meth:`~osworld_mcp_env.guest.damage.DamageWatch.count_now`); equal to the count
        read before the held frame's grab, nothing was drawn after that grab. None: grab.
        """
        with self._lock:
            if not since or since != self._id or changes is None or changes != self._changes:
                return None
            self._id = secrets.token_hex(8)
            return self._id, *self._size

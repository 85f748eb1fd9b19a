"""The screen's pixels as last read, to tell a change that drew new pixels from a repaint of the same ones.

The X server reports every drawing request as damage, whether or not it changed a
pixel. LibreOffice repaints its toolbars with identical pixels some 300 ms apart
long after a document is drawn (state refreshes); counted as changes, each one
would extend a wait without input by another timer horizon. A repaint that leaves
every pixel as it was carries nothing an agent could see, so the damage watch
compares the pixels of each damaged box with this copy and counts only a change
that differs (:meth:`ScreenCopy.update`).

The copy is the screen *now*, not as it was when a wait started: every box is read
after the watch took it from the damage region, and the copy takes the pixels read.
A later repaint that restores an earlier, different state differs from the copy and
counts. A change drawn between the watch taking the region and reading the box is
read (and counted) early, and reported again by the next damage event, whose read
then finds it in the copy.

Cost: the damaged boxes only, each read by one MIT-SHM grab (~0.1 ms for a
toolbar-sized box, 2 ms for the whole 1920x1080 screen) and compared row by row
(a full-width box in one ``memcmp``). The server's damage region is a list of
disjoint boxes, so the pixels read per event never exceed the screen's; past
:data:`MAX_GRABS` boxes, their bounding box is read in one grab instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from osworld_mcp_env.guest.screen import Box, RawFrame

# Boxes read one grab each; more are read as their bounding box (each grab is a round trip).
MAX_GRABS = 16


class ScreenCopy:
    """A BGRA copy of the whole screen, kept equal to it box by box.

    Args:
        grab: Reads a box of the screen now (:meth:`~osworld_mcp_env.guest.screen.Screen.grab`).
        width: The screen's width.
        height: The screen's height.
    """

    def __init__(self, grab: Callable[[Box], RawFrame], width: int, height: int) -> None:
        self._grab = grab
        self._width, self._height = width, height
        self._pixels = bytearray(grab(Box(0, 0, width, height)).bgra)

    def update(self, boxes: Sequence[Box]) -> bool:
        """Reads ``boxes`` of the screen into the copy; True when any pixel differed from it.

        A box that reaches past the screen (it was resized) counts as changed: the copy
        cannot say what was there.
        """
        inside = [box for box in boxes if box.width > 0 and box.height > 0]
        if any(not self._contains(box) for box in inside):
            return True
        if len(inside) <= MAX_GRABS:
            # A list, not a generator: every box is taken into the copy, not only up to the first change.
            return any([self._take(box, self._grab(box), box) for box in inside])
        bounds = _bounding_box(inside)
        frame = self._grab(bounds)
        return any([self._take(box, frame, bounds) for box in inside])

    def _contains(self, box: Box) -> bool:
        return 0 <= box.x <= self._width - box.width and 0 <= box.y <= self._height - box.height

    def _take(self, box: Box, frame: RawFrame, origin: Box) -> bool:
        """Copies ``box`` from ``frame`` (a grab of ``origin``) into the copy; True when it differed."""
        stride, row = self._width * 4, box.width * 4
        pixels, read = self._pixels, frame.bgra
        if box == origin and box.width == self._width:  # whole rows: one compare
            start, end = box.y * stride, (box.y + box.height) * stride
            if pixels[start:end] == read:
                return False
            pixels[start:end] = read
            return True
        changed = False
        read_stride = origin.width * 4
        read_offset = (box.y - origin.y) * read_stride + (box.x - origin.x) * 4
        offset = box.y * stride + box.x * 4
        for _ in range(box.height):
            if pixels[offset : offset + row] != read[read_offset : read_offset + row]:
                pixels[offset : offset + row] = read[read_offset : read_offset + row]
                changed = True
            offset += stride
            read_offset += read_stride
        return changed


def _bounding_box(boxes: Sequence[Box]) -> Box:
    left = min(box.x for box in boxes)
    top = min(box.y for box in boxes)
    right = max(box.x + box.width for box in boxes)
    bottom = max(box.y + box.height for box in boxes)
    return Box(left, top, right - left, bottom - top)

"""Frames straight from Xvfb's screen file (``Xvfb -fbdir``).

Xvfb can keep its screen in a file in XWD format. With that file in a host
tmpfs bound into the sandbox, the host copies a frame without asking the guest
to grab and send 8 MB over a socket. The file is *read* (``preadv`` into a
reused buffer), never memory-mapped: a mapped file that someone truncates kills
the reader with SIGBUS, while a short read is just a missing frame. The file
must belong to the sandbox's infrastructure uid (the X server), which the
desktop user cannot impersonate. Nothing synchronises the copy with drawing,
exactly as with an MIT-SHM grab.
"""

from __future__ import annotations

import os
import stat
import struct
from pathlib import Path

import numpy as np

from osworld_mcp_env.backends.guest_client import bgra_to_rgb

XWD_HEADER = struct.Struct(">25I")
SCREEN_FILE = "Xvfb_screen0"


class XvfbFramebuffer:
    """An open Xvfb screen file and a buffer to read frames into."""

    def __init__(self, path: Path, owner_uid: int) -> None:
        self._fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            info = os.fstat(self._fd)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != owner_uid:
                raise ValueError(f"{path} is not a regular file of uid {owner_uid}.")
            header = os.pread(self._fd, XWD_HEADER.size, 0)
            if len(header) < XWD_HEADER.size:
                raise ValueError("The Xvfb screen file has no header yet.")
            fields = XWD_HEADER.unpack(header)
            header_size, bits_per_pixel, bytes_per_line = fields[0], fields[11], fields[12]
            byte_order, ncolors = fields[7], fields[19]
            self.width, self.height = fields[4], fields[5]
            if bits_per_pixel != 32 or byte_order != 0:
                raise ValueError(f"Unsupported Xvfb screen format: {bits_per_pixel} bpp, order {byte_order}.")
            self._offset = header_size + 12 * ncolors
            self._stride = bytes_per_line
            if self._stride < self.width * 4 or self._offset + self._stride * self.height > info.st_size:
                raise ValueError("The Xvfb screen file is shorter than its header says.")
        except BaseException:
            os.close(self._fd)
            raise
        self._buffer = np.empty((self.height, self._stride), np.uint8)

    def rgb(self) -> np.ndarray | None:
        """The current screen as an (H, W, 3) RGB array (a copy), or None on a short read."""
        try:
            # ``.data``, the array's own memoryview: numpy types ndarray as a Buffer only for Python >= 3.12.
            read = os.preadv(self._fd, [self._buffer.data], self._offset)
        except OSError:
            return None
        if read != self._buffer.nbytes:
            return None
        bgra = self._buffer[:, : self.width * 4]
        return bgra_to_rgb(np.ascontiguousarray(bgra), self.width, self.height)

    def close(self) -> None:
        """Closes the file."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def open_framebuffer(directory: Path, owner_uid: int) -> XvfbFramebuffer | None:
    """Opens the screen file in ``directory``, or None while Xvfb has not written it."""
    try:
        return XvfbFramebuffer(directory / SCREEN_FILE, owner_uid)
    except (OSError, ValueError):
        return None


class QuietFrame:
    """The last frame read, reused while the X server has drawn nothing since.

    Keyed by the change count the guest reported just *before* the read
    (:meth:`~osworld_mcp_env.backends.guest_client.GuestClient.focus`): the same count
    later means no change was drawn after that instant, so the pixels read after it
    are still the screen. Reading and converting a frame costs ~5 ms, a copy ~1 ms.
    """

    def __init__(self) -> None:
        self._key: tuple[int, int] | None = None
        self._pixels: np.ndarray | None = None

    def get(self, generation: int, changes: int | None) -> np.ndarray | None:
        """A copy of the held frame if it was read at ``changes`` of the same sandbox, else None."""
        if changes is None or self._pixels is None or self._key != (generation, changes):
            return None
        return self._pixels.copy()

    def put(self, generation: int, changes: int | None, pixels: np.ndarray) -> np.ndarray:
        """Holds a copy of ``pixels``, read after the reply that counted ``changes``; returns ``pixels``."""
        if changes is None:
            self._key, self._pixels = None, None
        else:
            self._key, self._pixels = (generation, changes), pixels.copy()
        return pixels

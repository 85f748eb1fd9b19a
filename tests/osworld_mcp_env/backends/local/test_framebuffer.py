"""The host's reader of Xvfb's screen file, on files made here."""

from __future__ import annotations

import os

from osworld_mcp_env.backends.local.framebuffer import SCREEN_FILE, XWD_HEADER, open_framebuffer


def test_a_shrunken_screen_file_is_a_missing_frame_not_a_crash(tmp_path):
    """The host reads the screen file with preadv; a mapped file would SIGBUS the host here."""
    width, height, ncolors = 4, 2, 0
    fields = [100, 7, 2, 24, width, height, 0, 0, 32, 0, 32, 32, width * 4, *([0] * 6), ncolors, *([0] * 5)]
    header = XWD_HEADER.pack(*fields)
    screen = tmp_path / SCREEN_FILE
    screen.write_bytes(header + bytes(range(32)))
    framebuffer = open_framebuffer(tmp_path, os.getuid())
    assert framebuffer is not None and framebuffer.rgb().shape == (2, 4, 3)
    os.truncate(screen, 50)
    assert framebuffer.rgb() is None
    framebuffer.close()
    assert open_framebuffer(tmp_path, os.getuid() + 1) is None  # a file of another uid is refused

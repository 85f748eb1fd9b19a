"""XFIXES regions, which python-xlib (0.33) does not wrap: just what the damage watch needs.

``DamageSubtract`` can hand the region it empties to the client as an XFIXES region;
reading that region's rectangles (``FetchRegion``) tells which pixels a change drew,
so the watch compares those pixels only (:mod:`osworld_mcp_env.guest.screen_copy`).
The requests follow the XFIXES protocol 2.0 (``xfixesproto``): ``CreateRegion`` is
minor opcode 5, ``FetchRegion`` 19. python-xlib's ``xfixes_query_version`` asks for
version 4, which the server then speaks.
"""

from __future__ import annotations

from typing import Any

from Xlib.ext import xfixes
from Xlib.protocol import rq, structs

from osworld_mcp_env.guest.screen import Box


class _CreateRegion(rq.Request):
    _request = rq.Struct(
        rq.Card8("opcode"),
        rq.Opcode(5),
        rq.RequestLength(),
        rq.Card32("region"),
        rq.List("rectangles", structs.Rectangle),
    )


class _FetchRegion(rq.ReplyRequest):
    _request = rq.Struct(
        rq.Card8("opcode"),
        rq.Opcode(19),
        rq.RequestLength(),
        rq.Card32("region"),
    )
    _reply = rq.Struct(
        rq.ReplyCode(),
        rq.Pad(1),
        rq.Card16("sequence_number"),
        rq.ReplyLength(),
        rq.Object("extents", structs.Rectangle),
        rq.Pad(16),
        rq.List("rectangles", structs.Rectangle),  # to the reply's end: its length counts them
    )


def create_region(display: Any) -> int:
    """A new, empty region of ``display`` (an ``Xlib.display.Display``); returns its id."""
    region = display.display.allocate_resource_id()
    opcode = display.display.get_extension_major(xfixes.extname)
    _CreateRegion(display=display.display, opcode=opcode, region=region, rectangles=[])
    return int(region)


def fetch_region(display: Any, region: int) -> list[Box]:
    """The rectangles of ``region``: a round trip, ordered after every request sent before it."""
    opcode = display.display.get_extension_major(xfixes.extname)
    reply = _FetchRegion(display=display.display, opcode=opcode, region=region)
    return [Box(r.x, r.y, r.width, r.height) for r in reply.rectangles]

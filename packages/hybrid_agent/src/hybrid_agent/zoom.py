"""Coordinates read on a zoomed screenshot, put back on the screen: the harness side of the zoom.

After a ``zoom`` the env's observation is an enlarged crop of the screen
(``info["zoom"]``, :class:`osworld_mcp_env.zoom.ZoomView`). The model adapter maps the
reply's coordinates to pixels of the image the model saw, as for any screenshot; this
module maps those on to the screen pixels they show, and the agent loop sends the call
citing the zoom's parent frame, so that the env's layout guard checks the points
against the layout the crop was taken from (a menu opened since is refused as it is
for a whole frame).

How long a zoom counts: it is the reference for the reply to the observation it is, and
for no other. The env's next observation, after whatever that reply makes the env do
(a click, a tool call, a malformed reply's refused step), is the whole screen again, so a
coordinate is never mapped through a zoom the model is no longer looking at.
"""

from __future__ import annotations

from osworld_mcp_env.zoom import ZoomView

from hybrid_agent.coords import POINT_ARGUMENTS, REGION_ARGUMENT
from hybrid_agent.trajectory import Call


def unzoom_call(call: Call, view: ZoomView) -> Call | str:
    """``call`` with every point (and a zoom's region corners) moved from the zoomed image to the screen.

    Args:
        call: A GUI call whose points are pixels of the zoomed image (the adapter's mapping done).
        view: What the zoomed image shows.

    Returns:
        The call in screen pixels; a text call or one without points unchanged; or, for a
        point on the image's black margin (outside the enlarged region), the error message.
    """
    if not call.is_gui:
        return call
    arguments = dict(call.arguments)
    for key in (*POINT_ARGUMENTS, REGION_ARGUMENT):
        if key not in arguments:
            continue
        values = [round(float(v)) for v in arguments[key]]
        mapped: list[int] = []
        for i in range(0, len(values), 2):
            pixel = view.to_screen((values[i], values[i + 1]))
            if pixel is None:
                width, height = view.size
                return (
                    f"{key} {list(call.arguments[key])} is outside the zoomed region: the enlarged part "
                    f"is the top-left {width}x{height} pixels of the screenshot, the rest is black."
                )
            mapped.extend(pixel)
        arguments[key] = mapped
    return Call(call.name, arguments)

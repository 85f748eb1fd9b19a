"""What the hybrid env needs beyond OSWorld's contract: raw frames, GUI input, settling, fast reset.

New paths only; the OSWorld endpoints keep their shapes.
"""

from __future__ import annotations

import json

from osworld_mcp_env.guest.screen import SettleConfig
from osworld_mcp_env.guest.state import INPUT_ACTIONS, Guest
from osworld_mcp_env.guest.transport import Request, RequestError, Response, route
from osworld_mcp_env.guest.xinput import UnknownKey


@route("/frame", "GET")
def frame(guest: Guest, request: Request) -> Response:
    """A raw BGRA capture: no PNG cost; id and size (and layout hash with ``?layout=1``) in headers."""
    shot = guest.screen.grab()
    headers = {"X-Frame-Id": str(shot.frame_id), "X-Width": str(shot.width), "X-Height": str(shot.height)}
    if request.query.get("layout") == "1":
        headers["X-Layout-Hash"] = guest.windows.layout_hash()
    # The focused window rides along: one round trip per observation instead of two.
    active = guest.windows.active()
    headers["X-Active-Window"] = json.dumps(active.to_dict() if active else None, ensure_ascii=True)
    return Response(shot.bgra, content_type="application/octet-stream", headers=headers)


@route("/windows", "GET")
def windows(guest: Guest, request: Request) -> Response:
    """Managed windows (bottom to top), the active one and the layout hash."""
    active = guest.windows.active()
    return Response(
        {
            "windows": [w.to_dict() for w in guest.windows.list()],
            "active": active.to_dict() if active else None,
            "layout_hash": guest.windows.layout_hash(),
        }
    )


@route("/active_window", "GET")
def active_window(guest: Guest, request: Request) -> Response:
    """The focused window only."""
    active = guest.windows.active()
    return Response({"active": active.to_dict() if active else None})


@route("/gui", "POST")
def gui(guest: Guest, request: Request) -> Response:
    """Executes one ``computer_use`` action, then waits for the screen to settle.

    Body: ``{"action", "arguments", "settle": true, "expected_layout": hash?}``. With
    ``expected_layout`` the action is refused before any input (409,
    ``stale_gui_frame``) when the window layout changed since that hash.
    """
    payload = request.json()
    action = payload.get("action")
    arguments = payload.get("arguments") or {}
    if action not in INPUT_ACTIONS:
        raise RequestError(400, f"{action!r} is not an input action; known: {sorted(INPUT_ACTIONS)}.")
    with guest._gui_lock:  # one input sequence at a time: interleaved keystrokes garble both
        expected = payload.get("expected_layout")
        if expected:
            current = guest.windows.layout_hash()
            if current != expected:
                raise RequestError(
                    409,
                    "The window layout changed since the cited frame; no input was sent.",
                    code="stale_gui_frame",
                    input_events_emitted=False,
                    layout_hash=current,
                )
        baseline = guest.screen.signature() if payload.get("settle", True) else None
        try:
            guest.input.execute(action, arguments)
        except (UnknownKey, KeyError, TypeError, ValueError) as exc:
            raise RequestError(400, str(exc), code="invalid_arguments", input_events_emitted=False) from exc
        settle_ms = guest.screen.wait_until_settled(guest.settle, baseline) if baseline is not None else 0.0
    return Response({"input_events_emitted": True, "settle_ms": settle_ms})


@route("/settle", "POST")
def settle(guest: Guest, request: Request) -> Response:
    """Waits until the screen stops changing (after a ``wait`` or a tool call)."""
    payload = request.json()
    config = SettleConfig(
        first_change_ms=float(payload.get("first_change_ms", guest.settle.first_change_ms)),
        quiet_ms=float(payload.get("quiet_ms", guest.settle.quiet_ms)),
        max_ms=float(payload.get("max_ms", guest.settle.max_ms)),
    )
    return Response({"settle_ms": guest.screen.wait_until_settled(config)})

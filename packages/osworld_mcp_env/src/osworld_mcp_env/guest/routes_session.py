"""``POST /session/reset``: the fast episode reset, done inside the sandbox by the infrastructure."""

from __future__ import annotations

import os

from osworld_mcp_env.guest.state import Guest
from osworld_mcp_env.guest.transport import Request, RequestError, Response, route


@route("/session/reset", "POST")
def reset_session(guest: Guest, request: Request) -> Response:
    """Starts a clean episode while X, the window manager and the servers keep running.

    Every process of the desktop user dies, the user's tmpfs places are replaced,
    the home comes back from the read-only template and a new session bus starts
    (:meth:`Guest.begin_episode`). Refused (503) when a core process is stopped or
    dead: the host then replaces the whole sandbox.
    """
    if os.getpid() == 1 or not os.path.exists("/proc/1/comm"):
        raise RequestError(400, "No PID namespace to reset.")
    unhealthy = guest.unhealthy_core()
    if unhealthy:
        raise RequestError(503, f"The session needs a full restart: {'; '.join(unhealthy)}.")
    return Response({"status": "success", **guest.begin_episode()})

"""Recorded ``computer_use`` steps in HybridCUA's grammar: one bash call of pyautogui on the 0-999 grid.

A recorded GUI action is in screen pixels (the env's boundary). HybridCUA's model writes
the same action as a ``python3`` heredoc whose pyautogui positions lie on the grid
``0..GRID`` (:data:`hybrid_agent.adapters.hybridcua.GRID`), which the env's bash channel
(``pyautogui_grid``) scales back with ``round(v * W / GRID)`` inside the desktop. The
pyautogui statements themselves come from the env's own builder
(:func:`osworld_mcp_env.backends.pyautogui_code.pyautogui_code`, the code OSWorld-style
guests run for the same action), fed grid positions instead of pixels, so a converted
click, drag, scroll, key or text does what the recorded one did. Control actions (wait,
terminate, answer) are HybridCUA's own actions.

Pixels to grid and back go through :mod:`hybrid_agent.coords` (round half up both ways).
With the odd grid 999 no value falls on a half (``v * W / 999 = n + 1/2`` would need
``2vW = 999 (2n + 1)``, even = odd), so the guest's ``round`` and the half-up rounding
agree; a pixel comes back exactly when some grid value lands on it (999 of a 1920-pixel
row), else on its neighbour: the grid is coarser than the screen.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from osworld_mcp_env.backends.pyautogui_code import pyautogui_code
from osworld_mcp_env.errors import InputRejected

from hybrid_agent.adapters.hybridcua import GRID
from hybrid_agent.coords import (
    POINT_ARGUMENTS,
    CoordinateConfig,
    CoordinatePolicy,
    Point,
    Size,
    to_model,
    to_screen,
)
from hybrid_agent.rewrite.errors import RewriteError, RewriteReason
from hybrid_agent.trajectory import GUI_TOOL_NAME, Call

GRID_SPACE = CoordinateConfig(policy=CoordinatePolicy.RELATIVE_GRID, grid=GRID)
"""HybridCUA's coordinate space: the inclusive grid 0..999 on both axes."""


def pixel_to_grid(pixel: Point, screen: Size) -> tuple[int, int]:
    """The grid point whose pixel (:func:`grid_to_pixel`) is nearest ``pixel``, per axis.

    ``round(p * 999 / W)`` (half up, clamped: :func:`hybrid_agent.coords.to_model`) is
    the nearest everywhere but at the far edge, where the clamp of 999 onto the last
    pixel (``round(999 * W / 999) = W``, one past it) makes 999 the exact one; a
    neighbour of the first guess that lands nearer wins.
    """
    guess = to_model(pixel, screen, GRID_SPACE)
    best = []
    for axis in (0, 1):

        def miss(v: int, axis: int = axis) -> float:
            point = (v, 0) if axis == 0 else (0, v)
            return abs(grid_to_pixel(point, screen)[axis] - pixel[axis])

        candidates = [v for v in (guess[axis], guess[axis] - 1, guess[axis] + 1) if 0 <= v <= GRID]
        best.append(min(candidates, key=miss))  # min keeps the first of equals: the guess
    return best[0], best[1]


def grid_to_pixel(point: Point, screen: Size) -> tuple[int, int]:
    """The pixel a grid point lands on (``round(v * W / 999)``, clamped to the screen)."""
    return to_screen(point, screen, GRID_SPACE)


def heredoc(code: str) -> str:
    """``code`` as HybridCUA's GUI command: a quoted ``python3`` heredoc that imports pyautogui."""
    return f"python3 <<'PY'\nimport pyautogui\n{code}\nPY"


def _seconds(value: Any) -> str:
    return f"{float(value):g}"


def grid_call(call: Call, screen: Size) -> Call:
    """A recorded ``computer_use`` call with its positions on the grid (the guard's ``frame_id`` dropped)."""
    arguments: dict[str, Any] = {k: v for k, v in call.arguments.items() if k != "frame_id"}
    for key in POINT_ARGUMENTS:
        if key in arguments:
            arguments[key] = list(pixel_to_grid(tuple(arguments[key]), screen))
    return Call(call.name, arguments)


def gui_parameters(call: Call, screen: Size) -> dict[str, str]:
    """One recorded ``computer_use`` call (screen pixels) as HybridCUA's call parameters (raw strings).

    Input actions become ``{"action": "bash", "command": <pyautogui heredoc on the grid>}``;
    ``wait``, ``terminate`` and ``answer`` stay HybridCUA's control actions.

    Raises:
        RewriteError: The call is no ``computer_use`` action, or pyautogui cannot do what it
            did (a key it has no name for, text outside its keymap): ``unconvertible``.
    """
    if call.name != GUI_TOOL_NAME:
        raise RewriteError(RewriteReason.UNCONVERTIBLE, f"{call.name!r} is no computer_use action.")
    arguments = dict(grid_call(call, screen).arguments)
    action = str(arguments.pop("action", None))
    if action == "wait":
        return {"action": "wait", "time": _seconds(arguments.get("time", 1))}
    if action == "terminate":
        return {"action": "terminate", "status": str(arguments.get("status", "success"))}
    if action == "answer":
        return {"action": "answer", "text": str(arguments.get("text", ""))}
    try:
        code = pyautogui_code(action, arguments)
    except InputRejected as exc:
        raise RewriteError(RewriteReason.UNCONVERTIBLE, f"{action}: {exc}") from exc
    return {"action": "bash", "command": heredoc(code)}


def bash_parameters(arguments: Mapping[str, Any]) -> dict[str, str]:
    """A recorded ``bash`` call (already HybridCUA's channel) as its call parameters."""
    parameters = {"action": "bash", "command": str(arguments["command"])}
    if "timeout" in arguments:
        parameters["timeout"] = _seconds(arguments["timeout"])
    return parameters

"""What the hybrid env needs beyond OSWorld's contract: raw frames, GUI input, settling, fast reset.

New paths only; the OSWorld endpoints keep their shapes.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import struct
import time
from typing import Any

from osworld_mcp_env.actions import INPUT_ACTIONS, cited_points
from osworld_mcp_env.guest.frame_delta import format_runs, pack_runs
from osworld_mcp_env.guest.layout import check_cited_frame, window_changes
from osworld_mcp_env.guest.settle import MAX_TIMER_HORIZON_MS, SettleConfig
from osworld_mcp_env.guest.state import Guest
from osworld_mcp_env.guest.transport import Request, RequestError, Response, route
from osworld_mcp_env.guest.xinput import InputCancelled, UnknownKey
from osworld_mcp_env.mcp_host.apps import app_from_wm_class

log = logging.getLogger(__name__)


@route("/frame", "GET")
def frame(guest: Guest, request: Request) -> Response:
    """A raw BGRA capture: no PNG cost; size (and layout hash with ``?layout=1``) in headers.

    With ``?since=ID`` (empty for none) the frame gets an id (``X-Frame-Id``) and, when
    ``ID`` is the last frame sent, only its changed rows go out: ``X-Frame-Base: ID``
    and ``X-Frame-Rows: top-bottom,...``, the body their bytes (``guest.frame_delta``).
    """
    body, headers = _frame(guest, request.query.get("since"), layout=request.query.get("layout") == "1")
    return Response(body, content_type="application/octet-stream", headers=headers)


def _frame(guest: Guest, since: str | None, *, layout: bool) -> tuple[bytes | memoryview, dict[str, str]]:
    """The body and headers of a ``/frame`` reply (:func:`frame`)."""
    # Exact before the grab: the held frame's count, and the key of the frame grabbed next.
    changes = guest.damage.count_now() if since is not None else None
    held = guest.frames.unchanged(since, changes) if since else None
    if held is not None:  # nothing drawn since the frame the client holds: no grab, no compare
        frame_id, width, height = held
        headers = {"X-Width": str(width), "X-Height": str(height), "X-Frame-Id": frame_id}
        headers |= {"X-Frame-Base": str(since), "X-Frame-Rows": ""}
        body: bytes | memoryview = b""
    else:
        shot = guest.screen.grab()
        headers = {"X-Width": str(shot.width), "X-Height": str(shot.height)}
        body = shot.bgra
        if since is not None:
            frame_id, runs = guest.frames.record(shot.bgra, shot.width, shot.height, since, changes)
            headers["X-Frame-Id"] = frame_id
            if runs is not None:
                headers["X-Frame-Base"] = since
                headers["X-Frame-Rows"] = format_runs(runs)
                body = pack_runs(shot.bgra, runs, shot.width * 4)
    # The focused window rides along: one round trip per observation instead of two.
    active = guest.windows.active()
    if layout:
        headers["X-Layout-Hash"] = guest.windows.layout().fingerprint
    headers["X-Active-Window"] = json.dumps(active.to_dict() if active else None, ensure_ascii=True)
    return body, headers


@route("/windows", "GET")
def windows(guest: Guest, request: Request) -> Response:
    """Managed windows (bottom first), the focus, the layout sample and hash (``?changes=1``: ``_focus``)."""
    listed = guest.windows.list()
    focus = _focus(guest, layout=True, changes=request.query.get("changes") == "1")
    layout = guest.windows.layout()  # cached: the sample the fingerprint above was taken from
    return Response({"windows": [w.to_dict() for w in listed], **focus, "layout": layout.to_dict()})


@route("/active_window", "GET")
def active_window(guest: Guest, request: Request) -> Response:
    """The focused window only (``?changes=1``: :func:`_focus`)."""
    return Response(_focus(guest, layout=False, changes=request.query.get("changes") == "1"))


def _focus(guest: Guest, *, layout: bool, changes: bool = True) -> dict[str, Any]:
    """The focused window, the layout sample's fingerprint with ``layout``, the change count with ``changes``.

    The count is exact when the reply leaves (null: unknown). A host that reads the
    screen itself (the local backend's screen file) reads it after this reply: an
    equal count in a later reply means the pixels it holds are still the screen.
    """
    active = guest.windows.active()
    focus: dict[str, Any] = {"active": active.to_dict() if active else None}
    if layout:
        focus["layout_hash"] = guest.windows.layout().fingerprint
    if changes:
        focus["changes"] = guest.damage.count_now()
    return focus


@route("/gui", "POST")
def gui(guest: Guest, request: Request) -> Response:
    """Executes one ``computer_use`` input action, then waits for the screen to settle.

    The accepted actions are the table's (``actions.INPUT_ACTIONS``); ``wait`` and
    the actions that end the episode never reach the guest.

    Body: ``{"action", "arguments", "settle": true, "expected_layout": hash?, "deadline_s": s?,
    "timer_horizon_ms": ms?, "app_timer_horizon_ms": {app: ms}?, "observe": "frame" | "focus"?,
    "since": id?, "layout": bool?}``. The wait's timer horizon is that of the app focused
    when the input is sent (``apps`` keys): the request's ``app_timer_horizon_ms`` entry
    for it, else the request's ``timer_horizon_ms`` (one horizon for every app), else the
    guest's :meth:`SettleConfig.for_app` (LibreOffice 800 ms, the rest 400 ms), each
    :data:`MAX_TIMER_HORIZON_MS` at most: longer waits for app timers due later after
    the input, such as Calc's toolbar refreshes 0.5-0.8 s after a click.
    With ``expected_layout`` (the fingerprint of the cited frame's layout sample) the
    action is refused before any input (409, ``stale_gui_frame``) unless every point it
    cites still lands in the same window with the same geometry
    (:func:`~osworld_mcp_env.guest.layout.check_cited_frame`); the refusal carries the
    reasons and the current layout. With
    ``deadline_s`` the action ends by then: typing stops between keystrokes and
    the settle wait is cut (504, ``timeout``, saying how many characters went out).
    Typing also stops as soon as the client hangs up, so an abandoned action
    never types into the next one.

    The result lists the top-level windows the action opened, closed or moved and a new
    focus (``window_changes``, :func:`~osworld_mcp_env.guest.layout.window_changes`).

    With ``observe`` the reply also carries what an observation right after would
    ask for, taken once the wait ended: one round trip per step instead of two (a
    VM's cost ~15 ms each). ``"frame"``: the body and headers of ``/frame?since=``
    (``layout`` as ``?layout=1``), the action's result in ``X-Gui-Result``.
    ``"focus"``: the JSON result gains ``focus``, as ``/active_window?changes=1``
    (``/windows?changes=1``'s layout hash with ``layout``) for a host that reads the
    screen itself. An observation that fails leaves it out; the input's result still comes.
    """
    payload = request.json()
    action = payload.get("action")
    arguments = payload.get("arguments") or {}
    if not isinstance(action, str) or action not in INPUT_ACTIONS:
        raise RequestError(400, f"{action!r} is not an input action; known: {sorted(INPUT_ACTIONS)}.")
    if not isinstance(arguments, dict):
        raise RequestError(400, "'arguments' must be an object.", code="invalid_arguments")
    deadline = _deadline(payload)
    settle_config = _gui_settle(guest.settle, payload)

    def cancelled() -> bool:
        return time.monotonic() >= deadline or request.client_gone()

    # One input sequence at a time: interleaved keystrokes garble both. A sequence
    # stuck on a hung X server must not queue this one past its deadline.
    if not guest._gui_lock.acquire(timeout=_seconds_left(deadline)):
        raise _timeout("The previous action still holds the input; no input was sent.", emitted=False)
    try:
        active = guest.windows.active()
        settle_config = settle_config.for_app(app_from_wm_class(active.wm_class) if active else "")
        before = guest.windows.layout()
        expected = payload.get("expected_layout")
        if expected:
            refusal = check_cited_frame(
                guest.windows.memory, str(expected), before, cited_points(action, arguments)
            )
            if refusal is not None:
                reasons = "; ".join(refusal["reasons"])
                raise RequestError(
                    409,
                    f"The layout changed where the action points since the cited frame: {reasons}.",
                    code="stale_gui_frame",
                    **refusal,
                )
        if cancelled():
            raise _timeout("No time was left for the action; no input was sent.", emitted=False)
        mark = guest.settler.mark() if payload.get("settle", True) else None
        try:
            guest.input.execute(action, arguments, cancelled=cancelled)
        except InputCancelled as exc:
            raise _timeout(
                f"Typing stopped at the deadline after {exc.done} of {exc.total} characters.",
                emitted=exc.done > 0,
                typed=exc.done,
            ) from exc
        except (UnknownKey, KeyError, TypeError, ValueError, OverflowError, struct.error) as exc:
            raise RequestError(400, str(exc), code="invalid_arguments", input_events_emitted=False) from exc
        settle_ms = 0.0
        if mark is not None:
            settle_ms = guest.settler.wait(_within(settle_config, deadline), mark)
        try:
            changes: list[dict[str, Any]] | None = window_changes(before, guest.windows.layout())
        except Exception:  # the input happened: its result must reach the host
            log.exception("the window changes after a GUI action could not be read")
            changes = None
    finally:
        guest._gui_lock.release()
    result = {"input_events_emitted": True, "settle_ms": settle_ms, "window_changes": changes}
    return _with_observation(guest, result, payload)


def _with_observation(guest: Guest, result: dict[str, Any], payload: dict[str, Any]) -> Response:
    """``/gui``'s reply: its result, with the observation ``payload`` asks for where it can be taken."""
    observe, layout = payload.get("observe"), payload.get("layout") is True
    since = payload.get("since")
    try:
        if observe == "frame" and isinstance(since, str):
            body, headers = _frame(guest, since, layout=layout)
            headers["X-Gui-Result"] = json.dumps(result)
            return Response(body, content_type="application/octet-stream", headers=headers)
        if observe == "focus":
            return Response({**result, "focus": _focus(guest, layout=layout)})
    except Exception:  # the input happened: its result must reach the host
        log.exception("the observation after a GUI action failed; the host takes its own")
    return Response(result)


@route("/settle", "POST")
def settle(guest: Guest, request: Request) -> Response:
    """Waits until the screen stops changing (after a ``wait`` or a tool call), at most to ``deadline_s``."""
    payload = request.json()
    config = _wait_settle(guest.settle, payload)
    return Response({"settle_ms": guest.settler.wait(_within(config, _deadline(payload)))})


def _wait_settle(default: SettleConfig, payload: dict[str, Any]) -> SettleConfig:
    """A wait's thresholds: the request's where it gives them, the guest's elsewhere (400 on bad ones)."""
    try:
        config = SettleConfig(
            first_change_ms=float(payload.get("first_change_ms", default.first_change_ms)),
            quiet_ms=float(payload.get("quiet_ms", default.quiet_ms)),
            max_ms=float(payload.get("max_ms", default.max_ms)),
            prior_change_ms=float(payload.get("prior_change_ms", 0.0)),
            work_ms=float(payload.get("work_ms", 0.0)),
        )
    except (TypeError, ValueError) as exc:
        raise RequestError(400, f"Settle thresholds must be numbers of milliseconds: {exc}.") from exc
    for name in ("prior_change_ms", "work_ms"):
        value = getattr(config, name)
        if not 0 <= value <= MAX_TIMER_HORIZON_MS:  # NaN fails too
            raise RequestError(400, f"{name!r} must be ms in [0, {MAX_TIMER_HORIZON_MS:g}], got {value!r}.")
    return config


def _gui_settle(default: SettleConfig, payload: dict[str, Any]) -> SettleConfig:
    """The guest's thresholds with the request's horizons (``timer_horizon_ms``, then per app)."""
    horizon = payload.get("timer_horizon_ms")
    per_app = payload.get("app_timer_horizon_ms") or {}
    if not isinstance(per_app, dict) or not all(isinstance(app, str) for app in per_app):
        raise _bad_horizon("'app_timer_horizon_ms' must map app names to milliseconds", per_app)
    for value in (horizon, *per_app.values()):
        number = not isinstance(value, bool) and isinstance(value, int | float)
        if value is not None and (not number or not 0 <= value <= MAX_TIMER_HORIZON_MS):  # NaN fails too
            raise _bad_horizon(f"A timer horizon must be ms in [0, {MAX_TIMER_HORIZON_MS:g}]", value)
    if horizon is None:  # the guest's table, with the request's entries over it
        base = default
        table = {**default.app_timer_horizon_ms}
    else:  # one horizon for every app, but for the request's own entries
        base = dataclasses.replace(default, timer_horizon_ms=float(horizon))
        table = {}
    table.update({app: float(ms) for app, ms in per_app.items() if ms is not None})
    return dataclasses.replace(base, app_timer_horizon_ms=table)


def _bad_horizon(what: str, value: Any) -> RequestError:
    return RequestError(400, f"{what}, got {value!r}.", code="invalid_arguments", input_events_emitted=False)


def _deadline(payload: dict[str, Any]) -> float:
    """The request's ``deadline_s`` as a monotonic instant (without one: never)."""
    seconds = payload.get("deadline_s")
    if seconds is None:
        return float("inf")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise RequestError(400, f"'deadline_s' must be a number of seconds, got {seconds!r}.")
    return time.monotonic() + seconds


def _seconds_left(deadline: float) -> float:
    """For ``Lock.acquire``: -1 waits forever, 0 does not wait."""
    return -1 if deadline == float("inf") else max(0.0, deadline - time.monotonic())


def _within(config: SettleConfig, deadline: float) -> SettleConfig:
    """``config`` with its longest wait cut to the time left before ``deadline``."""
    left_ms = max(0.0, (deadline - time.monotonic()) * 1000)
    return dataclasses.replace(config, max_ms=min(config.max_ms, left_ms))


def _timeout(message: str, *, emitted: bool, **extra: Any) -> RequestError:
    return RequestError(504, message, code="timeout", input_events_emitted=emitted, **extra)

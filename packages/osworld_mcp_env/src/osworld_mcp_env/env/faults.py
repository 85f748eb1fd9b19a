"""``desktop_fault``: a desktop failure as the agent's error value, decided by its type."""

from __future__ import annotations

from typing import Any

from osworld_mcp_env.errors import (
    ActionError,
    DesktopError,
    ErrorCode,
    GuestTimeout,
    InputRejected,
    StaleFrameError,
)


def desktop_fault(exc: DesktopError) -> ActionError:
    """The one place a desktop failure becomes an error code, by the failure's type.

    ``timeout`` only when time ran out (:class:`GuestTimeout`: no answer in time,
    or the guest stopped at the deadline); the guest's refusals of a GUI action
    are the agent's (:class:`StaleFrameError`: a stale frame, :class:`InputRejected`:
    input it cannot produce, such as an unknown key name); a refused, reset or
    missing connection and any other failure is ``desktop_error``.
    """
    if isinstance(exc, GuestTimeout):
        progress: dict[str, Any] = {
            k: exc.fields[k] for k in ("input_events_emitted", "typed") if k in exc.fields
        }
        return ActionError(ErrorCode.TIMEOUT, f"The desktop did not finish in time: {exc.detail}", progress)
    if isinstance(exc, StaleFrameError):
        reasons = exc.fields.get("reasons")
        said = "; ".join(map(str, reasons)) if isinstance(reasons, list) and reasons else "the window layout"
        evidence: dict[str, Any] = {
            k: exc.fields[k] for k in ("reasons", "layout", "layout_hash") if k in exc.fields
        }
        return ActionError(
            ErrorCode.STALE_GUI_FRAME,
            f"The screen changed where the action points since the cited frame ({said}). "
            "Read the coordinates again from the new screenshot; do not repeat the old ones.",
            {"input_events_emitted": False, **evidence},
        )
    if isinstance(exc, InputRejected):
        return ActionError(ErrorCode.INVALID_ARGUMENTS, exc.detail, {"input_events_emitted": False})
    return ActionError(ErrorCode.DESKTOP_ERROR, str(exc))


__all__ = ["desktop_fault"]

"""Every exception the env package raises, under one base class.

Two planes, as in BrowserGym: *agent mistakes* (a malformed action, an unknown
tool) are never raised out of ``env.step``; they become an :class:`ActionError`
value whose ``code`` and ``message`` land in ``obs["tool_result"]`` and
``info["error"]``. *Wiring mistakes* (a task that names an unknown metric, a
backend that cannot start) raise one of the classes below at construction or
reset, with a message that says what was expected and how to fix it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class OSWorldMCPError(Exception):
    """Base class of every error raised by ``osworld_mcp_env``."""


class DesktopError(OSWorldMCPError):
    """The desktop (sandbox, guest server, app) failed or is unreachable."""


class DesktopStartError(DesktopError):
    """A desktop could not be started (missing binaries, sandbox refused, timeout)."""


class GuestRequestError(DesktopError):
    """The guest server answered an HTTP error (``status``) or an unreadable reply.

    The subclasses say why no usable answer came: :class:`GuestTimeout` (none in
    time), :class:`GuestUnreachable` (the connection failed), :class:`StaleFrameError`
    and :class:`InputRejected` (the guest refused a GUI action before any input).
    The env maps each type to an :class:`ErrorCode` in one place
    (``env.desktop_fault``), so no HTTP status reaches it.
    """

    def __init__(
        self, endpoint: str, status: int | None, detail: str, fields: dict[str, Any] | None = None
    ) -> None:
        super().__init__(f"{endpoint}: {'no answer' if status is None else f'HTTP {status}'}: {detail}")
        self.endpoint = endpoint
        self.status = status
        self.detail = detail
        self.fields = fields or {}  # the error reply's other fields (``input_events_emitted``, ``typed``)


class GuestTimeout(GuestRequestError):
    """The request ran out of time: no answer before the deadline, or the guest stopped at it (504)."""


class GuestUnreachable(GuestRequestError):
    """No connection: the socket is missing, refused, reset or closed mid-answer (a dead guest)."""


class StaleFrameError(GuestRequestError):
    """The guest refused a GUI action: the window layout changed since the cited frame; no input was sent."""


class InputRejected(GuestRequestError):
    """The guest refused a GUI action it cannot produce (an unknown key name); no input was sent."""


class TaskError(OSWorldMCPError):
    """A task config is invalid or one of its setup steps failed."""


class TaskNotFound(TaskError):
    """No task with that id, path or name exists."""


class SetupStepError(TaskError):
    """A setup step of a task failed (for example a file missing from the cache)."""


class FetchError(OSWorldMCPError):
    """A cache file could not be fetched (HTTP error, timeout, short body, size limit, checksum)."""


class EvaluationError(OSWorldMCPError):
    """An evaluator could not run; reports keep this apart from a score of 0."""


class RegistryError(OSWorldMCPError):
    """A registry lookup or registration failed (unknown or duplicate name)."""


class ErrorCode(StrEnum):
    """The ``code`` of every :class:`ActionError` the env returns (``info["error"]["code"]``)."""

    INVALID_JSON = "invalid_json"
    INVALID_ACTION = "invalid_action"
    INVALID_ARGUMENTS = "invalid_arguments"
    UNKNOWN_ACTION = "unknown_action"
    UNKNOWN_TOOL = "unknown_tool"
    OUT_OF_SCREEN = "out_of_screen"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    STALE_GUI_FRAME = "stale_gui_frame"
    EPISODE_OVER = "episode_over"
    TOOL_ERROR = "tool_error"
    TIMEOUT = "timeout"
    DESKTOP_ERROR = "desktop_error"
    # The semantic channel's (``ax.act``): a precondition failed before any input, or a wait ended.
    STALE_ELEMENT_REF = "stale_element_ref"
    AMBIGUOUS_TARGET = "ambiguous_target"
    UNSUPPORTED_OPERATION = "unsupported_operation"
    WAIT_TIMEOUT = "wait_timeout"
    WAIT_BUDGET_EXHAUSTED = "wait_budget_exhausted"


@dataclass(frozen=True)
class ActionError:
    """An agent mistake, returned as a value at the env boundary.

    Attributes:
        code: A stable machine-readable code, one of :class:`ErrorCode` (the MCP
            client's ``ToolErrorCode`` values are among them).
        message: A human-readable explanation that says what was expected.
        details: Extra structured fields (the offending name, the limit, ...).
    """

    code: str
    message: str
    details: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Returns the JSON-able form used in ``info["error"]``."""
        out: dict[str, Any] = {"code": str(self.code), "message": self.message}
        if self.details:
            out.update(self.details)
        return out

    def render(self) -> str:
        """Returns the text shown to the agent in ``obs["tool_result"]``.

        Where the error knows whether input reached the desktop (``input_events_emitted``
        in ``details``), the text says so, so the agent need not read ``info`` to tell a
        refusal it may simply redo from an action that may already have had an effect.
        """
        emitted = (self.details or {}).get("input_events_emitted")
        said = ""
        if emitted is False:
            said = " (no input was sent)"
        elif emitted is True:
            said = " (input was sent)"
        return f"Error [{self.code}]{said}: {self.message}"

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
from typing import Any


class OSWorldMCPError(Exception):
    """Base class of every error raised by ``osworld_mcp_env``."""


class DesktopError(OSWorldMCPError):
    """The desktop (sandbox, guest server, app) failed or is unreachable."""


class DesktopStartError(DesktopError):
    """A desktop could not be started (missing binaries, sandbox refused, timeout)."""


class GuestRequestError(DesktopError):
    """The guest server answered an HTTP error or did not answer in time."""

    def __init__(self, endpoint: str, status: int | None, detail: str) -> None:
        super().__init__(f"{endpoint}: {'no answer' if status is None else f'HTTP {status}'}: {detail}")
        self.endpoint = endpoint
        self.status = status
        self.detail = detail


class TaskError(OSWorldMCPError):
    """A task config is invalid or one of its setup steps failed."""


class TaskNotFound(TaskError):
    """No task with that id, path or name exists."""


class SetupStepError(TaskError):
    """A setup step of a task failed (for example a file missing from the cache)."""


class EvaluationError(OSWorldMCPError):
    """An evaluator could not run; reports keep this apart from a score of 0."""


class RegistryError(OSWorldMCPError):
    """A registry lookup or registration failed (unknown or duplicate name)."""


@dataclass(frozen=True)
class ActionError:
    """An agent mistake, returned as a value at the env boundary.

    Attributes:
        code: A stable machine-readable code (``invalid_json``, ``unknown_action``,
            ``invalid_arguments``, ``out_of_screen``, ``payload_too_large``,
            ``unknown_tool``, ``timeout``, ``stale_gui_frame``, ``desktop_error``, ...).
        message: A human-readable explanation that says what was expected.
        details: Extra structured fields (the offending name, the limit, ...).
    """

    code: str
    message: str
    details: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Returns the JSON-able form used in ``info["error"]``."""
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            out.update(self.details)
        return out

    def render(self) -> str:
        """Returns the text shown to the agent in ``obs["tool_result"]``."""
        return f"Error [{self.code}]: {self.message}"

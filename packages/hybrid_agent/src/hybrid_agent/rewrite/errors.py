"""Why an episode could not be rewritten or was not kept: one code per reason, for the report."""

from __future__ import annotations

from enum import StrEnum

from hybrid_agent.errors import HybridAgentError


class RewriteReason(StrEnum):
    """Why a recorded episode gives no kept rewrite.

    Before replay: ``source_failed`` (the recording did not score 1), ``no_terminal_typing``
    (interleaved mode, nothing to rewrite), ``unconvertible`` (a step has no HybridCUA form:
    an MCP tool call, a key pyautogui cannot press), ``unreconstructable`` (terminal typing
    whose command cannot be read back: history, completion, cursor keys, text never
    submitted). After replay: ``score`` (the evaluator scored it below the bar),
    ``env_error`` (the desktop, the env or the evaluator failed; no score).
    """

    SOURCE_FAILED = "source_failed"
    NO_TERMINAL_TYPING = "no_terminal_typing"
    UNCONVERTIBLE = "unconvertible"
    UNRECONSTRUCTABLE = "unreconstructable"
    SCORE = "score"
    ENV_ERROR = "env_error"


class RewriteError(HybridAgentError):
    """A recorded episode cannot be written in HybridCUA's grammar; ``reason`` says which way."""

    def __init__(self, reason: RewriteReason, message: str) -> None:
        """Keeps the reason code beside the message."""
        super().__init__(message)
        self.reason = reason

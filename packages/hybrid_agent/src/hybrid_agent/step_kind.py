"""HybridCUA's step classifier and CLI failure rule, in one place.

"Learning to Orchestrate GUI and CLI for Computer-Use Agents" (HybridCUA, Appendix B)
splits the steps of a GUI+CLI trajectory three ways: a control action (wait, terminate,
answer) is neither interface; a shell command that drives the screen through pyautogui
is a GUI step; any other shell command is a CLI step. The trainer's rewards (the
interface preference and the execution term), the metrics (CLI step share, CLI error
rate) and the interface labels all read a step's kind and a CLI step's failure from
here, so the three never disagree.

Where the env's own tools go:

* ``computer_use``: control for wait / terminate / answer, GUI for every other action.
* ``bash`` (the env's shell channel, ``enable_bash``): GUI when the command mentions
  ``pyautogui``, else CLI.
* HybridCUA's own function (``computer_use`` or ``cli`` with ``action`` in bash / wait /
  terminate / answer, before the adapter maps it to the env's calls): bash by its command,
  the rest control.
* An MCP tool ``<namespace>.<tool>``, the ``os`` server's tools (``os.search_files``,
  ``os.rename_directory`` ...) included: TOOL. They are typed tools with a schema and a
  structured result, not a free command line, and HybridCUA has no such channel; the
  study's MCP metrics already count them as tool use. Counting them as CLI would make a
  tool call satisfy a CLI label and take the execution term on an MCP error, neither of
  which HybridCUA's rule does.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

GUI_FUNCTION = "computer_use"
BASH_CHANNEL = "bash"
HYBRIDCUA_FUNCTIONS = frozenset({GUI_FUNCTION, "cli"})
CONTROL_ACTIONS = frozenset({"wait", "terminate", "answer"})
GUI_MARKER = "pyautogui"

# HybridCUA exempts failures of its own execution layer, which the sandbox reports
# in stderr rather than raising; a guest of OSWorld's contract can return the same.
INFRA_ERROR_MARKERS = ("retry limit reached", "failed to execute command")


class StepKind(StrEnum):
    """What one executed call was, in HybridCUA's terms (plus MCP tools, which it has not)."""

    CONTROL = "control"
    GUI = "gui"
    CLI = "cli"
    TOOL = "tool"


def command_kind(command: str) -> StepKind:
    """A shell command's kind: GUI when it mentions pyautogui, else CLI (HybridCUA's test)."""
    return StepKind.GUI if GUI_MARKER in command else StepKind.CLI


def classify_step(name: str, arguments: Mapping[str, Any]) -> StepKind:
    """The kind of one call, by its name and arguments (see the module docstring).

    Args:
        name: The call's name: ``computer_use``, ``cli``, ``bash`` or ``<namespace>.<tool>``.
        arguments: Its arguments; ``action`` and ``command`` are read where they apply.

    Returns:
        The step's kind. Total: any name that is neither HybridCUA's function nor the
        shell channel is a tool call (an unknown name too: it was a call of a tool).
    """
    if name == BASH_CHANNEL:
        return command_kind(_text(arguments.get("command")))
    if name in HYBRIDCUA_FUNCTIONS:
        action = arguments.get("action")
        if action in CONTROL_ACTIONS:
            return StepKind.CONTROL
        if action == BASH_CHANNEL:
            return command_kind(_text(arguments.get("command")))
        return StepKind.GUI
    return StepKind.TOOL


def cli_step_failed(exit_code: int | None, stderr: str, timed_out: bool, infra_error: bool = False) -> bool:
    """HybridCUA's ``exec_failed``: did a CLI step fail?

    A command failed when it timed out, or exited non-zero, except exit 1 with nothing on
    stderr (``grep`` without a match, ``diff`` of different files, ``test`` false: a
    semantic answer, not an error). An infrastructure error (the desktop, not the
    command, failed; or stderr carries the execution layer's own failure marker) is
    exempt. A command with no exit code that did not time out is not known to have failed.

    Args:
        exit_code: The command's exit status; ``None`` when it has none.
        stderr: What it wrote to stderr (whitespace alone counts as empty).
        timed_out: It was killed at its timeout.
        infra_error: The execution layer failed, not the command.
    """
    err = stderr.strip()
    if infra_error or any(marker in err.lower() for marker in INFRA_ERROR_MARKERS):
        return False
    if timed_out:
        return True
    if exit_code is None or exit_code == 0:
        return False
    return not (exit_code == 1 and not err)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


__all__ = [
    "CONTROL_ACTIONS",
    "INFRA_ERROR_MARKERS",
    "StepKind",
    "classify_step",
    "cli_step_failed",
    "command_kind",
]

"""One recorded episode rewritten into HybridCUA's grammar: GUI-only, or interleaved with direct commands.

Modes (:class:`RewriteMode`):

* ``gui``: every step converted (:mod:`hybrid_agent.rewrite.convert`): HybridCUA's
  GUI-only trajectory, pyautogui through bash on the 0-999 grid;
* ``interleaved``: each run of terminal typing (:mod:`hybrid_agent.rewrite.terminal`)
  becomes one direct command, every other step converted; an episode without terminal
  typing gives nothing (``no_terminal_typing``): its GUI-only form is ``gui``'s;
* ``auto``: ``interleaved`` where the episode typed into a terminal and the commands
  can be read back, else ``gui``.

A recorded step that executed nothing (a malformed reply, an input the env refused)
is left out; a reply's further calls (``then``) are steps of their own. Already
HybridCUA-shaped calls (``bash``) stay as they are; an MCP tool call has no form in
the grammar (``unconvertible``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from PIL import Image

from hybrid_agent.adapters.hybridcua import render_reply
from hybrid_agent.context import call_summary
from hybrid_agent.coords import Size
from hybrid_agent.recorder import EPISODES, EpisodeRecord
from hybrid_agent.rewrite.convert import bash_parameters, grid_call, gui_parameters
from hybrid_agent.rewrite.errors import RewriteError, RewriteReason
from hybrid_agent.rewrite.terminal import SourceStep, TerminalRun, terminal_runs
from hybrid_agent.step_kind import BASH_CHANNEL, StepKind, classify_step
from hybrid_agent.trajectory import GUI_TOOL_NAME, Call

DEFAULT_SCREEN: Size = (1920, 1080)
"""The env's default screen, for a record without screenshots."""
_COMMAND_IN_LINE = 72  # characters of a command quoted in its Action line


class RewriteMode(StrEnum):
    """What a rewrite makes of an episode (see the module docstring)."""

    GUI = "gui"
    INTERLEAVED = "interleaved"
    AUTO = "auto"


@dataclass(frozen=True)
class RewrittenStep:
    """One step of a rewritten episode: a HybridCUA call and its ``Action:`` sentence.

    Attributes:
        parameters: The call's parameters as raw strings, ``action`` first.
        action_line: The sentence the reply opens with.
        sources: Indices of the source steps it stands for (a terminal run: several).
    """

    parameters: dict[str, str]
    action_line: str
    sources: tuple[int, ...]

    @property
    def kind(self) -> StepKind:
        """The step's kind by HybridCUA's classifier (GUI, CLI or control)."""
        return classify_step(GUI_TOOL_NAME, self.parameters)

    def reply(self) -> str:
        """The reply a HybridCUA model writes for this step."""
        return render_reply(self.action_line, [self.parameters])


@dataclass(frozen=True)
class Rewrite:
    """A recorded episode rewritten.

    Attributes:
        task_id: The episode's task.
        run: Its run index (the seed of its reset: the replay uses it again).
        source: The record it was read from.
        mode: ``gui`` or ``interleaved``: what was made (``auto`` resolved).
        steps: The rewritten steps, in order.
        source_steps: Executed steps of the recording.
        note: Why ``auto`` fell back to ``gui`` (empty otherwise).
    """

    task_id: str
    run: int
    source: Path
    mode: RewriteMode
    steps: tuple[RewrittenStep, ...]
    source_steps: int
    note: str = ""

    @property
    def commands(self) -> int:
        """Direct commands reconstructed from terminal typing."""
        return sum(1 for step in self.steps if step.kind is StepKind.CLI)

    def replies(self) -> list[str]:
        """The replies a replay feeds the agent loop, one per step."""
        return [step.reply() for step in self.steps]


def source_steps(record: EpisodeRecord) -> list[SourceStep]:
    """The executed calls of a record, each with its step's focus evidence."""
    steps = []
    for line in record.steps:
        parse = line.get("parse") or {}
        if not parse.get("ok") or line.get("action") is None:
            continue
        follows = [t for t in line.get("then") or () if t.get("executed")]
        for entry in [line, *follows]:
            action = entry["action"]
            # The stale-frame guard's citation is the env's, not part of the action.
            arguments = {k: v for k, v in action["arguments"].items() if k != "frame_id"}
            call = Call(action["name"], arguments)
            if entry.get("env_error") and call.name == GUI_TOOL_NAME:
                continue  # refused before any input: it did nothing
            steps.append(SourceStep(call, line.get("app"), line.get("window"), parse.get("action_line")))
    return steps


def record_screen(record: EpisodeRecord) -> Size:
    """The screen size of a record, read from its first screenshot (the env default without one)."""
    for line in record.steps:
        if line.get("screenshot"):
            path = record.path.parent / line["screenshot"]
            if path.exists() or (path := record.path.parents[1] / EPISODES / line["screenshot"]).exists():
                with Image.open(path) as image:
                    return image.size
    return DEFAULT_SCREEN


def _converted(step: SourceStep, index: int, screen: Size) -> RewrittenStep:
    if step.call.name == BASH_CHANNEL:
        parameters = bash_parameters(step.call.arguments)
    elif step.call.name == GUI_TOOL_NAME:
        parameters = gui_parameters(step.call, screen)
    else:
        raise RewriteError(
            RewriteReason.UNCONVERTIBLE,
            f"Step {index} calls the tool {step.call.name!r}: HybridCUA has none.",
        )
    return RewrittenStep(parameters, _action_line(step, screen), (index,))


def _action_line(step: SourceStep, screen: Size) -> str:
    """The model's sentence; a summary synthesised from a pixel call is written again on the grid."""
    if step.action_line and step.action_line != call_summary(step.call):
        return step.action_line
    return call_summary(grid_call(step.call, screen) if step.call.name == GUI_TOOL_NAME else step.call)


def command_step(run: TerminalRun) -> RewrittenStep:
    """The direct command that stands for a terminal run."""
    first = run.command.splitlines()[0]
    shown = first if len(first) <= _COMMAND_IN_LINE else first[: _COMMAND_IN_LINE - 3] + "..."
    more = " (and the lines after it)" if "\n" in run.command else ""
    return RewrittenStep(
        {"action": "bash", "command": run.command},
        f"Run `{shown}`{more} in the shell.",
        tuple(range(run.start, run.end)),
    )


def rewrite_steps(
    steps: Sequence[SourceStep], screen: Size, runs: Sequence[TerminalRun] = ()
) -> tuple[RewrittenStep, ...]:
    """``steps`` in HybridCUA's grammar: each run as its command, every other step converted.

    Raises:
        RewriteError: A step has no HybridCUA form (``unconvertible``).
    """
    starts = {run.start: run for run in runs}
    out: list[RewrittenStep] = []
    i = 0
    while i < len(steps):
        if i in starts:
            out.append(command_step(starts[i]))
            i = starts[i].end
        else:
            out.append(_converted(steps[i], i, screen))
            i += 1
    return tuple(out)


def rewrite_episode(record: EpisodeRecord, mode: RewriteMode, screen: Size | None = None) -> Rewrite:
    """One recorded episode rewritten in ``mode``.

    Args:
        record: The recorded episode (its score is not checked here).
        mode: What to make of it.
        screen: The screen its pixels refer to (default: its screenshots' size).

    Raises:
        RewriteError: Nothing can be made of it in ``mode`` (the reason says why).
    """
    steps = source_steps(record)
    size = screen or record_screen(record)
    made, runs, note = RewriteMode.GUI, [], ""
    if mode is not RewriteMode.GUI:
        try:
            runs = terminal_runs(steps)
        except RewriteError as exc:
            if mode is RewriteMode.INTERLEAVED:
                raise
            note = f"{exc.reason}: {exc}"
        if runs:
            made = RewriteMode.INTERLEAVED
        elif mode is RewriteMode.INTERLEAVED:
            raise RewriteError(RewriteReason.NO_TERMINAL_TYPING, "The episode typed nothing into a terminal.")
    rewritten = rewrite_steps(steps, size, runs)
    return Rewrite(record.task_id, record.run, record.path, made, rewritten, len(steps), note)


def describe(rewrite: Rewrite) -> dict[str, Any]:
    """A rewrite's counts for the report."""
    kinds = [str(step.kind) for step in rewrite.steps]
    return {
        "mode": str(rewrite.mode),
        "source_steps": rewrite.source_steps,
        "steps": len(rewrite.steps),
        "gui_steps": kinds.count(str(StepKind.GUI)),
        "cli_steps": kinds.count(str(StepKind.CLI)),
        "note": rewrite.note,
    }

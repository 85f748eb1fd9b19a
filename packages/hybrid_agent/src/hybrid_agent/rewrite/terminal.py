"""Terminal typing in a recorded GUI episode, read back as the command lines it submitted.

HybridCUA builds interleaved trajectories by rewriting GUI episodes: a run of terminal
typing (the step that opens or focuses a terminal, the typed fragments, the Enter)
becomes one direct command, reconstructed from the fragments; genuine GUI steps and
ordinary typing stay. The paper gives no rule for telling the two apart; this is ours,
from what a record holds (each step's focused window title ``window`` and app ``app``,
and the action sequence):

1. **In a terminal.** A step acts in a terminal when the window focused when it was
   decided is one: its title names a terminal (``Terminal - ...``, ``xterm``, a shell's
   ``user@host:`` title). A record without titles (before they were kept) falls back to
   the app: ``os``, the terminal's app group (weaker: a file manager shares it; the
   replay is the check).
2. **Typing.** ``type`` actions and ``key`` actions in a terminal. Enter (or a newline in
   typed text) submits the line typed so far; BackSpace deletes its last character;
   Ctrl+U and Ctrl+C drop it. Any other key (Tab completion, history, cursor moves) makes
   the command unknowable from the record: the episode is ``unreconstructable``.
3. **Opening.** The step right before the typing (waits aside) goes with it when it
   opened or focused the terminal: the desktop's terminal shortcut Ctrl+Alt+T, or a click
   after which the typing starts in a terminal. Waits between the opening and the last
   submission go too (they waited for the terminal or between keystrokes).
4. **A run** ends at the last submitted line before the first step that is not terminal
   typing. Its submitted lines, joined by newlines, are one command (a ``cd`` in a line
   carries to the next, as in the terminal). Text typed and never submitted makes the
   episode ``unreconstructable``: it would run in the terminal but not as a command.

Steps after a run (a wait for the command to finish, ``terminate``) stay. What the rule
cannot see (a line that starts an interactive program, whose next lines are its input,
not the shell's) the replay rejects: only rewrites the evaluator still scores 1 are kept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from hybrid_agent.rewrite.errors import RewriteError, RewriteReason
from hybrid_agent.trajectory import GUI_TOOL_NAME, Call

TERMINAL_TITLE = re.compile(r"^(Terminal|xterm|XTerm)\b|\bTerminal$|^[\w.-]+@[\w.-]+:")
"""Titles of terminal windows: xfce4-terminal's ``Terminal - ...``, gnome-terminal's ``... - Terminal``,
xterm, and the ``user@host: dir`` a shell sets."""
TERMINAL_APP = "os"
"""The app group a terminal's window maps to (:func:`osworld_mcp_env.mcp_host.apps.app_from_wm_class`)."""
TERMINAL_SHORTCUT = frozenset({"ctrl", "alt", "t"})
SUBMIT_KEYS = frozenset({"return", "enter", "kp_enter"})
ERASE_KEYS = frozenset({"backspace"})
DROP_LINE_KEYS = (frozenset({"ctrl", "u"}), frozenset({"ctrl", "c"}))
OPENING_CLICKS = frozenset({"left_click", "double_click", "triple_click", "middle_click"})


@dataclass(frozen=True)
class SourceStep:
    """One executed call of a recorded episode, with the focus its step was decided in.

    Attributes:
        call: The call as the env executed it (GUI positions in screen pixels).
        app: The focused app (``app`` of the step record).
        window: The focused window's title (``window`` of the step record), ``None`` if not recorded.
        action_line: The model's ``Action:`` sentence for the step, if it wrote one.
    """

    call: Call
    app: str | None = None
    window: str | None = None
    action_line: str | None = None

    @property
    def action(self) -> str | None:
        """The ``computer_use`` action, ``None`` for any other call."""
        return str(self.call.arguments.get("action")) if self.call.name == GUI_TOOL_NAME else None

    @property
    def keys(self) -> frozenset[str]:
        """A ``key`` action's keys, lower-cased."""
        return frozenset(str(k).lower() for k in self.call.arguments.get("keys") or ())


@dataclass(frozen=True)
class TerminalRun:
    """Steps ``start .. end - 1`` of an episode, typed into a terminal, and the command they submitted."""

    start: int
    end: int
    command: str


def in_terminal(step: SourceStep) -> bool:
    """Whether the step was decided with a terminal focused (rule 1)."""
    if step.window is not None:
        return TERMINAL_TITLE.search(step.window.strip()) is not None
    return step.app == TERMINAL_APP


def is_terminal_typing(step: SourceStep) -> bool:
    """A ``type`` or ``key`` action in a terminal (rule 2); the terminal shortcut opens, it does not type."""
    return step.action in ("type", "key") and in_terminal(step) and step.keys != TERMINAL_SHORTCUT


def _after_waits(steps: Sequence[SourceStep], i: int) -> int:
    while i < len(steps) and steps[i].action == "wait":
        i += 1
    return i


def opens_terminal(steps: Sequence[SourceStep], i: int) -> bool:
    """Whether step ``i`` opened or focused the terminal the typing after it goes to (rule 3)."""
    step = steps[i]
    opening = (step.action == "key" and step.keys == TERMINAL_SHORTCUT) or step.action in OPENING_CLICKS
    following = _after_waits(steps, i + 1)
    return opening and following < len(steps) and is_terminal_typing(steps[following])


class _Line:
    """The shell's input line as the keystrokes of a run left it, and the lines submitted."""

    def __init__(self) -> None:
        self.text = ""
        self.submitted: list[str] = []

    def submit(self) -> None:
        if self.text.strip():
            self.submitted.append(self.text)
        self.text = ""

    def type(self, text: str) -> None:
        for char in text:
            if char == "\n":
                self.submit()
            elif char == "\t":
                raise RewriteError(RewriteReason.UNRECONSTRUCTABLE, "Tab typed in a terminal (completion).")
            else:
                self.text += char

    def key(self, keys: frozenset[str]) -> None:
        if len(keys) == 1 and keys <= SUBMIT_KEYS:
            self.submit()
        elif len(keys) == 1 and keys <= ERASE_KEYS:
            self.text = self.text[:-1]
        elif keys in DROP_LINE_KEYS:
            self.text = ""
        else:
            raise RewriteError(
                RewriteReason.UNRECONSTRUCTABLE,
                f"Key {'+'.join(sorted(keys))} in a terminal: the command line cannot be read back.",
            )


def _run_from(steps: Sequence[SourceStep], start: int, first_typing: int) -> TerminalRun:
    line = _Line()
    end = first_typing
    i = first_typing
    while i < len(steps):
        step = steps[i]
        if step.action == "wait":
            i += 1
            continue
        if not is_terminal_typing(step):
            break
        if step.action == "type":
            line.type(str(step.call.arguments.get("text", "")))
        else:
            line.key(step.keys)
        i += 1
        if not line.text and line.submitted:
            end = i
    if line.text or not line.submitted:
        typed = line.text or "".join(str(s.call.arguments.get("text", "")) for s in steps[first_typing:i])
        raise RewriteError(
            RewriteReason.UNRECONSTRUCTABLE,
            f"Text typed into a terminal and never submitted: {typed[:80]!r}.",
        )
    return TerminalRun(start, end, "\n".join(line.submitted))


def terminal_runs(steps: Sequence[SourceStep]) -> list[TerminalRun]:
    """Every run of terminal typing in an episode, in order, with its reconstructed command.

    Raises:
        RewriteError: A run's command cannot be read back (``unreconstructable``).
    """
    runs = []
    i = 0
    while i < len(steps):
        if opens_terminal(steps, i):
            run = _run_from(steps, i, _after_waits(steps, i + 1))
        elif is_terminal_typing(steps[i]):
            run = _run_from(steps, i, i)
        else:
            i += 1
            continue
        runs.append(run)
        i = run.end
    return runs

"""Interface-restricted episodes: GUI steps only, CLI steps only, or both (HybridCUA's three modes).

HybridCUA labels a task by rolling it out in each mode (:mod:`hybrid_agent.labels`). A mode
is an agent setting (``AgentConfig.interface``): every call of a reply is classified by
:func:`hybrid_agent.step_kind.classify_step`, and a call of a kind the mode does not accept
is refused before it reaches the env, as a typed parse error (``interface_refused``) the
model reads in its next turn; the reply executes nothing and counts as a step, as any
malformed reply does. Control actions (wait, terminate, answer) are accepted in every mode.

* ``gui``: GUI steps: ``computer_use`` actions, or bash commands that drive pyautogui;
* ``cli``: CLI steps: bash commands without pyautogui;
* ``hybrid``: both, and MCP tool calls (nothing refused).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hybrid_agent.parse import ParseError, ParseErrorCode
from hybrid_agent.step_kind import StepKind, classify_step
from hybrid_agent.trajectory import Call

INTERFACE_MODES = ("hybrid", "gui", "cli")
_ACCEPTED: Mapping[str, frozenset[StepKind]] = {
    "gui": frozenset({StepKind.GUI, StepKind.CONTROL}),
    "cli": frozenset({StepKind.CLI, StepKind.CONTROL}),
    "hybrid": frozenset(StepKind),
}
_WHAT = {
    "gui": "GUI steps (computer_use actions, or pyautogui inside a bash command)",
    "cli": "CLI steps (shell commands without pyautogui)",
}


def refused_calls(mode: str, calls: Sequence[Call]) -> ParseError | None:
    """The error for a reply with a call ``mode`` does not accept; ``None`` when every call is accepted."""
    accepted = _ACCEPTED[mode]
    kinds = [classify_step(call.name, call.arguments) for call in calls]
    refused = [kind for kind in kinds if kind not in accepted]
    if not refused:
        return None
    return ParseError(
        ParseErrorCode.INTERFACE_REFUSED,
        f"This episode accepts only {_WHAT[mode]} and control actions; your reply made a {refused[0]} "
        "step, so nothing was executed. Do the step with the allowed interface.",
    )

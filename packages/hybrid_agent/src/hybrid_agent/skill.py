"""The skill text: a system-prompt section that teaches the hybrid interface, for the ``hcu`` setting.

Hybrid Computer Use reports that a text teaching its interface cut malformed
accessibility/graphical calls from 17.37 % to 1.36 % and task runs with consecutive
schema failures from 44.69 % to 0.37 %. This is our own text for our interface (the
``ax`` tools of the env option ``ax_tools``, the stale-frame guard, the app's MCP tools):
which channel to use, what a ref is and how long it lives, what to do after a refusal,
how to batch, how to prove a change, and how to write a call that parses. It is off in
the study's settings and on in ``hcu`` (:mod:`hybrid_agent.settings`), so the ablation
is one switch (``AgentConfig.skill_text``).
"""

from __future__ import annotations

from hybrid_agent.prompt import RESPONSE_FORMAT_HEADING

SKILL_HEADING = "# Using the interface well"

SKILL_TEXT = f"""{SKILL_HEADING}

Channels. Prefer a listed app tool (for example libreoffice_calc.*) when one does the step: it is exact \
and reports what changed. Next, the accessibility tools: ax.observe shows the focused window as lines \
with refs such as [e17], ax.find(role, name, text) finds elements the view left out, and ax.act(steps=[...]) \
acts on refs. Use computer_use (clicks, keys) when neither reaches the target.

Refs. A ref names one live element of the view it came from. It stays valid while that element \
exists; a closed dialog, a rebuilt menu or a reloaded document ends it. Never guess a ref or reuse one \
from an old view of a window that has since changed.

Refusals. Error [stale_element_ref] or Error [stale_gui_frame] means nothing was sent: the target moved, \
closed or was covered since you looked. Observe again (ax.observe, or read the new screenshot) and \
choose the target anew; never resend the same call. Error texts say whether input was sent: after \
"(input was sent)" check the result before trying again.

Batches. Put the steps of one intention in one ax.act call, in order (at most 64). After a step that \
changes the interface (opens a dialog, a menu, a new window), add a wait step for what must appear \
(a window, a ref, a text) before acting on it. A batch stops at its first failure and says where; \
continue from there after observing, not from the start.

Proof. "invoked" means an action was delivered, not that anything changed. Before you terminate with \
success, prove the result: read the saved file or the cell back with a tool, or look at the state \
after a save, rather than trusting that a button was pressed.

Calls. One call per reply, valid JSON, only the arguments its schema lists, with their types: \
coordinates as [x, y] numbers, refs as strings like "e17", keys as a list of names. If a call was \
refused for its arguments, fix the arguments the error names; do not send it unchanged."""

ZOOM_SKILL = """Zoom. When text or a control is too small to aim at, call computer_use with action=zoom and \
region=[x1, y1, x2, y2] around it: nothing is clicked, and the next screenshot shows that part enlarged. \
Read your next coordinates on the enlarged screenshot; they count for that one action, and the guard \
checks them against the screen the zoom was taken from. Zoom on a small region (a few cells or one \
toolbar), not half the screen."""
"""The paragraph added where the model is offered ``zoom`` (the ``hcu`` setting)."""


def with_skill_text(system: str, zoom: bool = False) -> str:
    """``system`` with the skill section before its response format rules (appended without them).

    Before them, so that a policy that swaps the rules for native tool calling
    (:func:`hybrid_agent.prompt.native_calls_prompt`) keeps the section. ``zoom``: the
    model is offered the zoom, and the section says how to use it (:data:`ZOOM_SKILL`).
    """
    head, sep, rules = system.partition(f"\n\n{RESPONSE_FORMAT_HEADING}")
    section = f"{SKILL_TEXT}\n\n{ZOOM_SKILL}" if zoom else SKILL_TEXT
    return f"{head}\n\n{section}{sep}{rules}"

"""``scripted``: the bundled suite's scripted solutions, emitted as model text.

``scripted`` (= ``scripted:oracle``) plays each task's GUI oracle, ``scripted:wrong`` its
near miss (scores < 1), ``scripted:tools`` its MCP-tool oracle where the task is
tool-reachable and the GUI oracle elsewhere, ``scripted:ax`` its oracle through the ``ax``
tools alone (an env with ``ax_tools=True``; the bundled Calc and Writer tasks and templates);
all from ``bundled_solution``. An ``ax`` script's ``ax.find`` binds a name to the first ref
its result shows the policy, and later ``ax.act`` steps cite it (``$name``), so refs are
read at run time as a model reads them. The text goes through
the same parser, retrieval check and env as a model's, so the whole stack runs
without a model. Coordinates are screen pixels (``coordinates = absolute_screen``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from osworld_mcp_env.errors import TaskNotFound
from osworld_mcp_env.tasks.ax_script import RefBindings, UnboundRef
from osworld_mcp_env.tasks.bundled import bundled_solution

from hybrid_agent.context import call_summary
from hybrid_agent.coords import CoordinatePolicy
from hybrid_agent.errors import ConfigError
from hybrid_agent.messages import Message
from hybrid_agent.policies.base import Generation, PolicyOptions, PolicyRequest, register_policy
from hybrid_agent.tokens import estimate_input_tokens
from hybrid_agent.trajectory import Call

GIVE_UP = {"name": "computer_use", "arguments": {"action": "terminate", "status": "failure"}}
VARIANTS = ("oracle", "wrong", "tools", "ax")
RESULT_MARKERS = ("Tool result: ", "CLI output:")


def last_tool_result(messages: Sequence[Message]) -> str:
    """The relayed result of the previous call, as the current user turn shows it ("" when none)."""
    if not messages or messages[-1]["role"] != "user" or not isinstance(messages[-1]["content"], list):
        return ""
    texts = [part["text"] for part in messages[-1]["content"] if part["type"] == "text"]
    return next((t for t in reversed(texts) if t.startswith(RESULT_MARKERS)), "")


def render_call(call: dict[str, Any]) -> str:
    """Model-style text for one call: an ``Action:`` line and one ``<tool_call>``."""
    summary = call_summary(Call(call["name"], dict(call["arguments"])))
    body = json.dumps(call, ensure_ascii=False)
    return f"Action: {summary}\n<tool_call>\n{body}\n</tool_call>"


class ScriptedPolicy:
    """Plays a fixed action list per task; past its end it gives up (``terminate failure``)."""

    coordinates = CoordinatePolicy.ABSOLUTE_SCREEN
    concurrent = True  # each request is answered on its own: envs need not share a batch

    def __init__(self, variant: str = "oracle") -> None:
        """Picks the solution variant: ``oracle``, ``wrong``, ``tools`` or ``ax``."""
        if variant not in VARIANTS:
            raise ConfigError(f"scripted variant must be one of {VARIANTS}, got {variant!r}.")
        self.variant = variant
        self.name = f"scripted:{variant}"
        self._scripts: dict[str, list[dict[str, Any]]] = {}
        self._bindings: dict[tuple[str, int], RefBindings] = {}

    def script(self, task_id: str) -> list[dict[str, Any]]:
        """The action list of a task (cached)."""
        if task_id not in self._scripts:
            try:
                self._scripts[task_id] = bundled_solution(task_id, self.variant)  # type: ignore[arg-type]
            except TaskNotFound:
                if self.variant != "tools":
                    raise
                self._scripts[task_id] = bundled_solution(task_id, "oracle")  # no tool route
        return self._scripts[task_id]

    def generate(self, requests: Sequence[PolicyRequest]) -> list[Generation]:
        """The ``step``-th scripted action of each request's task."""
        out = []
        for request in requests:
            call = self._next_call(request)
            text = render_call(call)
            out.append(
                Generation(
                    text=text,
                    input_tokens=estimate_input_tokens(request.messages),
                    output_tokens=len(text) // 4,
                    tokens_estimated=True,
                )
            )
        return out

    def _next_call(self, request: PolicyRequest) -> dict[str, Any]:
        """The step's call with its bound names replaced by refs.

        Past the script's end, or where a cited ref was never shown, the policy gives up.
        """
        script = self.script(request.task_id)
        episode = (request.task_id, request.run)
        if request.step == 0:
            self._bindings[episode] = RefBindings()
        bindings = self._bindings.setdefault(episode, RefBindings())
        if 0 < request.step <= len(script):
            bindings.record(script[request.step - 1], last_tool_result(request.messages))
        if request.step >= len(script):
            self._bindings.pop(episode, None)
            return GIVE_UP
        try:
            return bindings.resolve(script[request.step])
        except UnboundRef:
            return GIVE_UP


@register_policy("scripted")
def _scripted(rest: str, options: PolicyOptions) -> ScriptedPolicy:
    return ScriptedPolicy(rest or "oracle")

"""What a rollout keeps: one :class:`StepSample` per model call, one :class:`Episode` per rollout.

A step sample keeps the prompt the policy saw as the policy encoded it (token ids,
with the multimodal inputs they carry): training runs on those, never on a
re-rendered context. It also keeps the response token ids and their rollout-time
log-probabilities (the old policy of the clipped ratio and the KL anchor), and
what rebuilding the context needs for the replay check: the finished
:class:`~hybrid_agent.trajectory.Step` objects before it live on the episode, and
the sample keeps the current observation, the tools shown and the retention plan.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hybrid_agent.step_kind import StepKind, classify_step
from hybrid_agent.toolset import ToolSpec
from hybrid_agent.trajectory import Call, Evidence, Executed, Observation, Step


@dataclass(frozen=True)
class StepSample:
    """One training sample: prompt C_t (as its inputs) and response a_t.

    Attributes:
        index: The model call index t within the episode.
        observation: The current screenshot and relayed tool result at t.
        tools: The MCP tools shown at t.
        plan: The retention decisions that built C_t (``RetentionPlan.to_dicts()``).
        past: How many finished steps of the episode preceded t (parse errors are not steps).
        prompt_ids: The prompt token ids the policy saw, as its ``encode`` returned them (a
            ``list[int]`` subclass may carry the pixels): what training scores the response after.
        response_ids: The generated token ids.
        old_logprobs: Log-probabilities of ``response_ids`` under the rollout-time policy.
        text: The decoded response.
        call: The parsed call, or ``None`` when the output did not parse.
        exec_ok: The action executed (parsed, accepted by the env, a tool call without error).
        read_only: The called tool declares ``readOnlyHint`` (``None``: unknown or a GUI action).
        policy_version: The version of the weights that generated it: how many optimizer
            updates they had been through.
        finish_reason: Why generation stopped; ``length``: cut off, nothing was executed.
        evidence: The env's report of a text-tool call (MCP or bash: exit code, stderr,
            timeout), ``None`` for a GUI action or a reply that executed nothing.
        more: The reply's further calls that were executed, each an env step of its own, with
            their evidence (HybridCUA's several calls per turn); the sample is still one.
    """

    index: int
    observation: Observation
    tools: tuple[ToolSpec, ...]
    plan: list[dict[str, Any]]
    past: int
    prompt_ids: list[int]
    response_ids: list[int]
    old_logprobs: list[float]
    text: str
    call: Call | None
    exec_ok: bool
    read_only: bool | None = None
    policy_version: int = 0
    finish_reason: str | None = None
    evidence: Evidence | None = None
    more: tuple[Executed, ...] = ()

    @property
    def executed(self) -> tuple[Executed, ...]:
        """Every call the reply made and the env executed, in order; empty without a call."""
        return () if self.call is None else (Executed(self.call, self.evidence), *self.more)

    @property
    def kind(self) -> StepKind | None:
        """The first call's kind (:func:`~hybrid_agent.step_kind.classify_step`); ``None`` without one."""
        return None if self.call is None else classify_step(self.call.name, self.call.arguments)

    @property
    def cli_failed(self) -> bool:
        """One of the reply's calls is a CLI step that failed by HybridCUA's rule."""
        return any(e.cli_failed for e in self.executed)

    @property
    def is_mcp(self) -> bool:
        """An MCP tool call: parsed, neither ``computer_use`` nor a shell command (kind ``tool``)."""
        return self.kind is StepKind.TOOL

    @property
    def call_key(self) -> str | None:
        """The (tool, arguments) identity of the call, canonical JSON; ``None`` without a call."""
        if self.call is None:
            return None
        return json.dumps([self.call.name, self.call.arguments], sort_keys=True, ensure_ascii=False)


@dataclass
class Episode:
    """One rollout of one task.

    Attributes:
        task_id: The task.
        group: The group id (the G rollouts of one task from one start state share it).
        member: Index within the group.
        instruction: The task instruction.
        samples: One per model call, in order.
        steps: The finished steps (the context builder's history).
        score: The evaluator's score (0..1); ``None`` while running or after a crash.
        truncated: The episode hit the step cap.
        crash: Why the episode crashed (env exception, evaluator error); it then leaves the gradient.
        labels: Task labels reward terms may read (``preferred_interface`` ...).
    """

    task_id: str
    group: int
    member: int
    instruction: str
    samples: list[StepSample] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    score: float | None = None
    truncated: bool = False
    crash: str | None = None
    labels: dict[str, Any] = field(default_factory=dict)

    @property
    def length(self) -> int:
        """T, the number of model calls (every sample counts, parse errors included)."""
        return len(self.samples)

    @property
    def crashed(self) -> bool:
        """The episode ended in an error, not a score."""
        return self.crash is not None or self.score is None

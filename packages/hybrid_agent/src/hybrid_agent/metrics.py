"""The study's metrics, each a small pure function over episode statistics.

Definitions (``DESIGN.md`` "Metrics"; ``notes/hybrid-agents.md`` §1.8, §7.5):

* **accuracy**: mean evaluator score of each run, then mean and standard error over
  runs (SE = sample std of the run means / sqrt(runs)); per domain the same. Episodes
  that ended in an error (env, policy, evaluator) are left out and counted apart.
* **significant**: two accuracies differ only when ``|delta| > 2 * sqrt(SE_a² + SE_b²)``.
* **adoption**: share of episodes with at least one executed MCP call (``exec_ok``);
  also over tool-reachable episodes only (at least one step showed an MCP tool).
* **TIR_real** / **TIR_any**: per episode, executed MCP steps (resp. all MCP-routed
  steps, hallucinated names included) over all steps, macro-averaged over episodes.
* **OSWorld-MCP TIR**: share of episodes that succeeded *and* made the right tool
  decision: used a tool on a tool-beneficial task, none on another. Which tasks are
  tool-beneficial is an input (OSWorld-MCP annotates it); by default, tool-reachable.
* **ACS** (OSWorld-MCP's average completion steps): mean steps of successful episodes.
* **false-success rate**: ``terminate(success)`` with a score of 0, over episodes that
  terminated voluntarily (a run that hit the step cap is not a claim).
* **hallucinated tool names**: calls naming a tool that was not shown, over all
  decodable calls (GUI, MCP, hallucinated).
* **tokens**: input per task (sum over model calls), p95 of the per-task peak, output
  per task, and input tokens per 1 % accuracy.

A success is a score of 1 (OSWorld scores are in [0, 1]).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from statistics import mean, stdev

from hybrid_agent.recorder import EpisodeRecord
from hybrid_agent.tokens import TaskTokens, TokenSummary, summarize_tokens


class StepKind(StrEnum):
    """What one model call became."""

    GUI = "gui"
    MCP = "mcp"
    HALLUCINATED = "hallucinated"  # a decodable call naming a tool that was not shown
    MALFORMED = "malformed"  # any other parse error


@dataclass(frozen=True)
class StepStats:
    """One step, reduced to what the metrics read."""

    kind: StepKind
    exec_ok: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    tools_shown: bool = False


@dataclass(frozen=True)
class EpisodeStats:
    """One episode, reduced to what the metrics read.

    Attributes:
        score: The evaluator's score; ``None`` when the episode ended in an error.
        error: The error type when it did.
        claimed_success: ``True``/``False`` for a voluntary ``terminate``; ``None`` otherwise.
        tokens_estimated: The token counts are estimates (scripted policy).
    """

    task_id: str
    domain: str
    run: int
    score: float | None
    steps: tuple[StepStats, ...] = ()
    error: str | None = None
    claimed_success: bool | None = None
    truncated: bool = False
    tokens_estimated: bool = False

    @property
    def success(self) -> bool:
        """Scored 1."""
        return self.score is not None and self.score >= 1.0

    @property
    def used_tool(self) -> bool:
        """At least one executed MCP call."""
        return any(s.kind == StepKind.MCP and s.exec_ok for s in self.steps)

    @property
    def tool_reachable(self) -> bool:
        """At least one step showed an MCP tool."""
        return any(s.tools_shown for s in self.steps)


def _step_stats(step: dict) -> StepStats:
    parse = step.get("parse") or {}
    tokens = step.get("tokens") or {}
    if parse.get("ok"):
        is_gui = parse["call"]["name"] == "computer_use"
        kind = StepKind.GUI if is_gui else StepKind.MCP
        evidence = step.get("evidence") or {}
        exec_ok = True if is_gui else bool(evidence.get("exec_ok"))
    else:
        kind = StepKind.HALLUCINATED if parse.get("code") == "unknown_tool" else StepKind.MALFORMED
        exec_ok = False
    return StepStats(
        kind=kind,
        exec_ok=exec_ok and not step.get("env_error"),
        input_tokens=tokens.get("input") or 0,
        output_tokens=tokens.get("output") or 0,
        tools_shown=bool(step.get("shown_tools")),
    )


def episode_stats(record: EpisodeRecord) -> EpisodeStats:
    """Reduces a recorded episode to :class:`EpisodeStats`."""
    end = record.end
    error = end.get("error")
    return EpisodeStats(
        task_id=record.task_id,
        domain=record.header.get("domain") or "unknown",
        run=record.run,
        score=end.get("score"),
        steps=tuple(_step_stats(s) for s in record.steps if "parse" in s),
        error=error.get("type") if error else None,
        claimed_success=end.get("claimed_success"),
        truncated=bool(end.get("truncated")),
        tokens_estimated=any((s.get("tokens") or {}).get("estimated") for s in record.steps),
    )


# --------------------------------------------------------------------------- accuracy


@dataclass(frozen=True)
class Estimate:
    """A mean over runs with its standard error (both in [0, 1]); ``runs`` runs had data."""

    mean: float
    se: float
    runs: int


def accuracy(episodes: Iterable[EpisodeStats]) -> Estimate | None:
    """Mean score per run, then mean and SE over runs; ``None`` when no episode was scored."""
    by_run: dict[int, list[float]] = {}
    for ep in episodes:
        if ep.score is not None:
            by_run.setdefault(ep.run, []).append(ep.score)
    if not by_run:
        return None
    run_means = [mean(scores) for _, scores in sorted(by_run.items())]
    se = stdev(run_means) / math.sqrt(len(run_means)) if len(run_means) > 1 else 0.0
    return Estimate(mean(run_means), se, len(run_means))


def accuracy_by_domain(episodes: Iterable[EpisodeStats]) -> dict[str, Estimate | None]:
    """:func:`accuracy` per domain, domains sorted."""
    groups: dict[str, list[EpisodeStats]] = {}
    for ep in episodes:
        groups.setdefault(ep.domain, []).append(ep)
    return {domain: accuracy(groups[domain]) for domain in sorted(groups)}


def significant(a: Estimate, b: Estimate) -> bool:
    """True when ``|a - b| > 2 SE`` with SE of the difference ``sqrt(SE_a² + SE_b²)``."""
    return abs(a.mean - b.mean) > 2 * math.sqrt(a.se**2 + b.se**2)


# --------------------------------------------------------------------------- behaviour


def _scored(episodes: Iterable[EpisodeStats]) -> list[EpisodeStats]:
    return [ep for ep in episodes if ep.error is None]


def _share(items: Sequence[EpisodeStats], test: Callable[[EpisodeStats], bool]) -> float | None:
    return sum(map(test, items)) / len(items) if items else None


def adoption(episodes: Iterable[EpisodeStats], reachable_only: bool = False) -> float | None:
    """Share of episodes with >= 1 executed MCP call (optionally over tool-reachable ones only)."""
    items = [ep for ep in _scored(episodes) if ep.tool_reachable or not reachable_only]
    return _share(items, lambda ep: ep.used_tool)


def _macro(episodes: Iterable[EpisodeStats], count: Callable[[StepStats], bool]) -> float | None:
    rates = [sum(map(count, ep.steps)) / len(ep.steps) for ep in _scored(episodes) if ep.steps]
    return mean(rates) if rates else None


def tir_real(episodes: Iterable[EpisodeStats]) -> float | None:
    """Executed MCP steps / all steps, per episode, macro-averaged."""
    return _macro(episodes, lambda s: s.kind == StepKind.MCP and s.exec_ok)


def tir_any(episodes: Iterable[EpisodeStats]) -> float | None:
    """MCP-routed steps (hallucinated names included) / all steps, macro-averaged."""
    return _macro(episodes, lambda s: s.kind in (StepKind.MCP, StepKind.HALLUCINATED))


def osworld_mcp_tir(
    episodes: Iterable[EpisodeStats], tool_beneficial: Callable[[EpisodeStats], bool] | None = None
) -> float | None:
    """OSWorld-MCP's TIR: successful episodes with the right tool decision, over all episodes."""
    beneficial = tool_beneficial or (lambda ep: ep.tool_reachable)
    return _share(_scored(episodes), lambda ep: ep.success and ep.used_tool == beneficial(ep))


def acs(episodes: Iterable[EpisodeStats]) -> float | None:
    """OSWorld-MCP's average completion steps: mean steps of successful episodes."""
    steps = [len(ep.steps) for ep in _scored(episodes) if ep.success]
    return mean(steps) if steps else None


def false_success_rate(episodes: Iterable[EpisodeStats]) -> float | None:
    """``terminate(success)`` scored 0, over episodes that terminated voluntarily."""
    claims = [ep for ep in _scored(episodes) if ep.claimed_success is not None]
    return _share(claims, lambda ep: bool(ep.claimed_success) and ep.score == 0)


def hallucinated_tool_rate(episodes: Iterable[EpisodeStats]) -> float | None:
    """Calls naming a tool that was not shown, over all decodable calls."""
    calls = [s for ep in episodes for s in ep.steps if s.kind != StepKind.MALFORMED]
    if not calls:
        return None
    return sum(s.kind == StepKind.HALLUCINATED for s in calls) / len(calls)


def malformed_rate(episodes: Iterable[EpisodeStats]) -> float | None:
    """Steps whose output was not one decodable call, over all steps."""
    steps = [s for ep in episodes for s in ep.steps]
    return sum(s.kind == StepKind.MALFORMED for s in steps) / len(steps) if steps else None


def hit_cap_rate(episodes: Iterable[EpisodeStats]) -> float | None:
    """Share of scored episodes truncated at ``max_steps``."""
    return _share(_scored(episodes), lambda ep: ep.truncated)


# --------------------------------------------------------------------------- tokens


def token_summary(episodes: Iterable[EpisodeStats]) -> TokenSummary | None:
    """Input per task, p95 peak, output per task over every episode (errors included: they cost)."""
    tasks = []
    for ep in episodes:
        tokens = TaskTokens()
        for step in ep.steps:
            tokens.add(step.input_tokens, step.output_tokens)
        tasks.append(tokens)
    return summarize_tokens(tasks) if tasks else None


def tokens_per_accuracy_point(input_per_task: float, acc: Estimate | None) -> float | None:
    """Input tokens per task divided by accuracy in percent (the study's TotalTok / 1 % Acc)."""
    if acc is None or acc.mean <= 0:
        return None
    return input_per_task / (100 * acc.mean)

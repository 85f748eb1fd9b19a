"""The study's metrics, each a small pure function over episode statistics.

Definitions (``DESIGN.md`` "Metrics"; ``notes/hybrid-agents.md`` §1.8, §7.5):

* **accuracy**: mean evaluator score of each run, then mean and standard error over
  runs (SE = sample std of the run means / sqrt(runs)); per domain the same. Episodes
  that ended in an error (env, policy, evaluator) are left out of the mean and counted
  apart, and **coverage** says how many of the suite's tasks and (task, run) pairs the
  mean covers: a task with no scored episode (every try errored, or never run) is listed.
* **significant**: two accuracies differ only when ``|delta| > 2 * sqrt(SE_a² + SE_b²)``.
* **adoption**: share of episodes with at least one executed MCP call (``exec_ok``);
  also over tool-reachable episodes only. Tool-reachable is the task's annotation where
  it has one (the header's ``tool_reachable``; OSWorld-MCP labels tool-beneficial tasks),
  else at least one step showed an MCP tool; reports say which one was used.
* **TIR_real** / **TIR_any**: per episode, executed MCP steps (resp. all MCP-routed
  steps, hallucinated names included) over all steps, macro-averaged over episodes.
* **OSWorld-MCP TIR**: share of episodes that succeeded *and* made the right tool
  decision: used a tool on a tool-beneficial task, none on another. Which tasks are
  tool-beneficial is an input; by default, tool-reachable as above.
* **ACS** (OSWorld-MCP's average completion steps): mean steps of successful episodes.
* **false success**: ``terminate(success)`` with a score of 0, over every scored episode
  (the study's Table 3, :func:`false_success_all`) and over the episodes that terminated
  voluntarily (:func:`false_success_rate`; a run that hit the step cap is not a claim).
  A claim is an *executed* ``terminate``: the env's ``claimed_success`` in the end line,
  which a reply cut off by the output budget (it executes nothing) never sets.
* **hallucinated tool names**: calls naming a tool that was not shown, as a count and
  over all decodable calls (GUI, MCP, hallucinated).
* **malformed**: steps whose output was not one decodable call, including a reply cut
  off by the output budget (parse code ``truncated``) and reasoning that never ended
  (``unfinished_reasoning``).
* **tokens**: input per task (sum over model calls), p95 of the per-task peak, output
  per task, and input tokens per 1 % accuracy.

The GUI+CLI study's (HybridCUA's) numbers, over the calls the env executed, each of a
kind by :mod:`hybrid_agent.step_kind` (a reply may make several, each an env step):

* **average steps (all tasks)**: env steps per scored episode, a budget-exhausted one
  counted at the cap (``max_steps``), over every task, not only the solved ones (ACS);
* **CLI step share**: pooled CLI steps over pooled executable steps (GUI and CLI kinds;
  control actions and MCP tools excluded);
* **CLI error rate**: CLI steps that failed by HybridCUA's rule over CLI steps;

each also per domain.

A success is a score of 1 (OSWorld scores are in [0, 1]).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from statistics import mean, stdev
from typing import Any

from hybrid_agent.recorder import EpisodeRecord
from hybrid_agent.step_kind import StepKind as CallKind
from hybrid_agent.step_kind import classify_step
from hybrid_agent.tokens import TaskTokens, TokenSummary, summarize_tokens
from hybrid_agent.trajectory import Call, Evidence, step_failed


class Reachability(StrEnum):
    """Which definition says a tool could help on a task."""

    ANNOTATION = "annotation"  # the task's own label; where a task has none, SHOWN
    SHOWN = "shown"  # at least one step showed an MCP tool


class StepKind(StrEnum):
    """What one model call became."""

    GUI = "gui"  # no MCP tool call: a GUI action, a shell command (CLI) or a control action
    MCP = "mcp"
    HALLUCINATED = "hallucinated"  # a decodable call naming a tool that was not shown
    MALFORMED = "malformed"  # any other parse error (a cut-off reply included)


@dataclass(frozen=True)
class StepStats:
    """One step, reduced to what the metrics read."""

    kind: StepKind
    exec_ok: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    tools_shown: bool = False


@dataclass(frozen=True)
class CallStats:
    """One call the env executed, in HybridCUA's terms.

    Attributes:
        kind: Control, GUI, CLI or tool (:func:`hybrid_agent.step_kind.classify_step`).
        failed: A CLI step that failed by HybridCUA's rule (False for every other kind).
    """

    kind: CallKind
    failed: bool = False


@dataclass(frozen=True)
class EpisodeStats:
    """One episode, reduced to what the metrics read.

    Attributes:
        score: The evaluator's score; ``None`` when the episode ended in an error.
        error: The error type when it did.
        claimed_success: ``True``/``False`` for an executed ``terminate``; ``None`` otherwise.
        tokens_estimated: The token counts are estimates (scripted policy).
        annotated_reachable: The task's own tool-reachable label; ``None`` where it has none.
        error_code: The error's finer code (``context_length``, ``auth``, ``transport`` ...).
        calls: Every call the env executed, in order (a reply's further calls included).
        env_steps: Env steps taken (every reply one, each further call of a reply one more).
        max_steps: The run's step cap, where known.
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
    annotated_reachable: bool | None = None
    error_code: str | None = None
    calls: tuple[CallStats, ...] = ()
    env_steps: int = 0
    max_steps: int | None = None
    channel_steps: tuple[ChannelStep, ...] = ()

    @property
    def success(self) -> bool:
        """Scored 1."""
        return self.score is not None and self.score >= 1.0

    @property
    def used_tool(self) -> bool:
        """At least one executed MCP call."""
        return any(s.kind == StepKind.MCP and s.exec_ok for s in self.steps)

    @property
    def tools_shown(self) -> bool:
        """At least one step showed an MCP tool."""
        return any(s.tools_shown for s in self.steps)

    @property
    def tool_reachable(self) -> bool:
        """The task's annotation where it has one, else :attr:`tools_shown`."""
        return self.tools_shown if self.annotated_reachable is None else self.annotated_reachable

    def reachable(self, by: Reachability) -> bool:
        """Tool-reachable under one definition."""
        return self.tool_reachable if by == Reachability.ANNOTATION else self.tools_shown

    @property
    def error_label(self) -> str | None:
        """``type`` or ``type:code`` of the error; ``None`` when scored."""
        if self.error is None:
            return None
        return f"{self.error}:{self.error_code}" if self.error_code else self.error


def _step_stats(step: dict) -> StepStats:
    # Every parse failure but an unknown name is malformed: new codes the runner writes
    # (``truncated``, ``unfinished_reasoning``) need no entry here.
    parse = step.get("parse") or {}
    tokens = step.get("tokens") or {}
    if parse.get("ok"):
        # A shell command (HybridCUA's bash, under any function name) is no MCP tool call.
        call = parse["call"]
        is_gui = classify_step(call["name"], call.get("arguments") or {}) is not CallKind.TOOL
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


_RAN_ANYWAY = frozenset({"timeout"})  # an env error that still means the command ran (and failed)


def _executed(call: Mapping, evidence: Mapping | None, env_error: Mapping | None) -> CallStats | None:
    """One recorded call as :class:`CallStats`; ``None`` when the env refused it (nothing ran)."""
    if env_error and env_error.get("code") not in _RAN_ANYWAY:
        return None
    written = Call(call["name"], dict(call.get("arguments") or {}))
    report = Evidence(**evidence) if evidence else None
    return CallStats(classify_step(written.name, written.arguments), step_failed(written, report))


def _calls(step: Mapping) -> list[CallStats]:
    parse = step.get("parse") or {}
    if not parse.get("ok"):
        return []
    found = [_executed(parse["call"], step.get("evidence"), step.get("env_error"))]
    for follow in step.get("then") or ():
        if follow.get("executed"):
            found.append(_executed(follow["call"], follow.get("evidence"), follow.get("env_error")))
    return [c for c in found if c is not None]


def _env_steps(step: Mapping) -> int:
    """A reply that reached the env is one step, plus one per further call it executed."""
    if "parse" not in step:
        return 0
    return 1 + sum(bool(follow.get("executed")) for follow in step.get("then") or ())


def episode_stats(record: EpisodeRecord, max_steps: int | None = None) -> EpisodeStats:
    """Reduces a recorded episode to :class:`EpisodeStats` (``max_steps``: the run's step cap)."""
    end = record.end
    error = end.get("error")
    annotated = record.header.get("tool_reachable")
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
        annotated_reachable=annotated if isinstance(annotated, bool) else None,
        error_code=error.get("code") if error else None,
        calls=tuple(c for s in record.steps for c in _calls(s)),
        env_steps=sum(_env_steps(s) for s in record.steps),
        max_steps=max_steps,
        channel_steps=channel_steps(record.steps),
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


# --------------------------------------------------------------------------- coverage


@dataclass(frozen=True)
class Unscored:
    """A task without a single scored episode, and why.

    Attributes:
        task_id: The task.
        errors: The error label of each recorded run (``env_error``, ``policy_error:context_length``).
        missing: Runs of the task with no record at all.
    """

    task_id: str
    errors: tuple[str, ...]
    missing: int


@dataclass(frozen=True)
class Coverage:
    """How much of the suite an accuracy covers, so errors never hide in its denominator.

    Attributes:
        tasks: Tasks of the suite (and any recorded outside it).
        scored_tasks: Tasks with at least one scored episode.
        episodes: (task, run) pairs of the suite (and any recorded outside it).
        scored_episodes: Pairs whose record is scored.
        unscored: The tasks without a scored episode, in suite order.
    """

    tasks: int
    scored_tasks: int
    episodes: int
    scored_episodes: int
    unscored: tuple[Unscored, ...]


def coverage(episodes: Iterable[EpisodeStats], suite: Sequence[tuple[str, int]] | None = None) -> Coverage:
    """Tasks and (task, run) pairs with a scored record, out of those the run was asked for.

    Args:
        episodes: The run's current records, reduced.
        suite: Every ``(task_id, run)`` of the suite; ``None`` (a run recorded before
            ``suite.json``): the recorded pairs only, so a task never run is not seen.
            A record outside the suite is counted too, so none is hidden either way.
    """
    recorded = {(ep.task_id, ep.run): ep for ep in episodes}
    by_task: dict[str, list[EpisodeStats | None]] = {}
    for task_id, run in dict.fromkeys([*(suite or ()), *recorded]):
        by_task.setdefault(task_id, []).append(recorded.get((task_id, run)))
    unscored = tuple(
        Unscored(
            task_id,
            tuple(ep.error_label or "" for ep in runs if ep is not None),
            sum(ep is None for ep in runs),
        )
        for task_id, runs in by_task.items()
        if not any(ep is not None and ep.error is None for ep in runs)
    )
    return Coverage(
        tasks=len(by_task),
        scored_tasks=len(by_task) - len(unscored),
        episodes=sum(map(len, by_task.values())),
        scored_episodes=sum(ep is not None and ep.error is None for runs in by_task.values() for ep in runs),
        unscored=unscored,
    )


def coverage_by_domain(
    episodes: Iterable[EpisodeStats],
    suite: Sequence[tuple[str, int]] | None = None,
    domains: Mapping[str, str] | None = None,
) -> dict[str, Coverage]:
    """:func:`coverage` per domain, domains sorted.

    ``domains`` maps a task id to its domain (the suite's); a task it lacks takes
    the domain of its records.
    """
    episodes = list(episodes)
    domain_of = {ep.task_id: ep.domain for ep in episodes} | dict(domains or {})
    pairs = list(suite or ())

    def domain(task_id: str) -> str:
        return domain_of.get(task_id, "unknown")

    names = sorted({domain(t) for t, _ in pairs} | {domain(ep.task_id) for ep in episodes})
    return {
        name: coverage(
            [ep for ep in episodes if domain(ep.task_id) == name],
            None if suite is None else [p for p in pairs if domain(p[0]) == name],
        )
        for name in names
    }


# --------------------------------------------------------------------------- behaviour


def _scored(episodes: Iterable[EpisodeStats]) -> list[EpisodeStats]:
    return [ep for ep in episodes if ep.error is None]


def _share(items: Sequence[EpisodeStats], test: Callable[[EpisodeStats], bool]) -> float | None:
    return sum(map(test, items)) / len(items) if items else None


def adoption(
    episodes: Iterable[EpisodeStats], reachable_only: bool = False, by: Reachability = Reachability.ANNOTATION
) -> float | None:
    """Share of episodes with >= 1 executed MCP call (optionally over tool-reachable ones only, ``by``)."""
    items = [ep for ep in _scored(episodes) if not reachable_only or ep.reachable(by)]
    return _share(items, lambda ep: ep.used_tool)


def reachability_source(episodes: Iterable[EpisodeStats]) -> str:
    """Which definition of tool-reachable the scored episodes got.

    ``"annotation"`` (every task carries one), ``"shown"`` (none does) or
    ``"annotation for n of m episodes, else shown"``.
    """
    scored = _scored(episodes)
    annotated = sum(ep.annotated_reachable is not None for ep in scored)
    if annotated == 0:
        return str(Reachability.SHOWN)
    if annotated == len(scored):
        return str(Reachability.ANNOTATION)
    return f"annotation for {annotated} of {len(scored)} episodes, else shown"


def reachability_disagreements(episodes: Iterable[EpisodeStats]) -> int:
    """Scored episodes whose task annotation differs from whether any step showed an MCP tool."""
    return sum(
        ep.annotated_reachable is not None and ep.annotated_reachable != ep.tools_shown
        for ep in _scored(episodes)
    )


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
    """OSWorld-MCP's average completion steps: mean steps (model calls) over successful episodes only."""
    steps = [len(ep.steps) for ep in _scored(episodes) if ep.success]
    return mean(steps) if steps else None


def _false_success(ep: EpisodeStats) -> bool:
    return ep.claimed_success is True and ep.score == 0


def false_success_all(episodes: Iterable[EpisodeStats]) -> float | None:
    """``terminate(success)`` scored 0, over every scored episode (the study's Table 3)."""
    return _share(_scored(episodes), _false_success)


def false_success_rate(episodes: Iterable[EpisodeStats]) -> float | None:
    """``terminate(success)`` scored 0, over episodes that terminated voluntarily (executed ``terminate``)."""
    claims = [ep for ep in _scored(episodes) if ep.claimed_success is not None]
    return _share(claims, _false_success)


def hallucinated_tool_calls(episodes: Iterable[EpisodeStats]) -> int:
    """Calls naming a tool that was not shown, over every episode (errored ones made them too)."""
    return sum(s.kind == StepKind.HALLUCINATED for ep in episodes for s in ep.steps)


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


# --------------------------------------------------------------------------- GUI+CLI (HybridCUA)


def steps_counted(ep: EpisodeStats) -> int:
    """An episode's env steps, a budget-exhausted one at the cap (HybridCUA counts it at 50)."""
    if ep.truncated and ep.max_steps is not None:
        return max(ep.env_steps, ep.max_steps)
    return ep.env_steps


def average_steps_all(episodes: Iterable[EpisodeStats]) -> float | None:
    """Mean env steps over every scored episode, solved or not, the cap for a budget-exhausted one."""
    steps = [steps_counted(ep) for ep in _scored(episodes)]
    return mean(steps) if steps else None


def cli_step_share(episodes: Iterable[EpisodeStats]) -> float | None:
    """Pooled CLI steps over pooled executable steps (GUI + CLI kinds; control and tools excluded)."""
    calls = [c for ep in _scored(episodes) for c in ep.calls if c.kind in (CallKind.GUI, CallKind.CLI)]
    return sum(c.kind is CallKind.CLI for c in calls) / len(calls) if calls else None


def cli_error_rate(episodes: Iterable[EpisodeStats]) -> float | None:
    """Pooled CLI steps that failed by HybridCUA's rule over pooled CLI steps."""
    cli = [c for ep in _scored(episodes) for c in ep.calls if c.kind is CallKind.CLI]
    return sum(c.failed for c in cli) / len(cli) if cli else None


def per_domain(
    metric: Callable[[Iterable[EpisodeStats]], float | None], episodes: Iterable[EpisodeStats]
) -> dict[str, float | None]:
    """``metric`` over each domain's episodes, domains sorted."""
    groups: dict[str, list[EpisodeStats]] = {}
    for ep in episodes:
        groups.setdefault(ep.domain, []).append(ep)
    return {domain: metric(groups[domain]) for domain in sorted(groups)}


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


# --------------------------------------------------------------------------- channels
# Hybrid Computer Use's Table 3 rows: how well-formed each channel's calls are, how
# often a run repeats a schema failure, how calls spread over channels, how long the
# accessibility batches are and how often a step is spent on observing only.


class Channel(StrEnum):
    """The channel a call goes through."""

    GUI = "gui"  # computer_use
    AX = "ax"  # the accessibility tools (ax.observe, ax.find, ax.act)
    MCP = "mcp"  # an app's MCP tools
    BASH = "bash"
    UNATTRIBUTED = "unattributed"  # a reply that names no call at all


# The env's refusals of a call's arguments before anything ran: a schema failure.
SCHEMA_ERROR_CODES = frozenset(
    {
        "invalid_json",
        "invalid_action",
        "invalid_arguments",
        "unknown_action",
        "out_of_screen",
        "payload_too_large",
    }
)
# Parse failures that are the GUI channel's whatever the reply's text.
_GUI_PARSE_CODES = frozenset({"unknown_gui_action", "gui_action_as_tool", "out_of_space", "invalid_syntax"})
# Calls whose only job is to look: a step spent on them is a separate observation.
OBSERVATION_TOOLS = frozenset({"ax.observe", "ax.find"})
_CALL_NAME = re.compile(r'"name"\s*:\s*"([^"]{1,200})"')


@dataclass(frozen=True)
class ChannelStep:
    """One model call, reduced to what the channel metrics read.

    Attributes:
        channel: Where the call went (or, for a malformed reply, the channel it meant).
        parse_failure: The reply did not become a call.
        schema_failure: The call parsed and the env refused its arguments (:data:`SCHEMA_ERROR_CODES`).
        batch_length: Steps of an ``ax.act`` call; ``None`` for any other call.
        observation: The call only observes (:data:`OBSERVATION_TOOLS`).
        window_changes: Windows the call opened, closed, moved or focused (the step record's
            ``window_changes``, written by ``evidence.window_changes_from_info``).
    """

    channel: Channel
    parse_failure: bool = False
    schema_failure: bool = False
    batch_length: int | None = None
    observation: bool = False
    window_changes: int = 0

    @property
    def malformed(self) -> bool:
        """A parse failure or a schema rejection."""
        return self.parse_failure or self.schema_failure


def channel_of(name: str) -> Channel:
    """The channel of a call name."""
    if name == "computer_use":
        return Channel.GUI
    if name == "bash":
        return Channel.BASH
    return Channel.AX if name.startswith("ax.") else Channel.MCP


def channel_step(step: Mapping[str, Any]) -> ChannelStep:
    """One step record reduced to a :class:`ChannelStep`.

    A parse failure is the channel of the name the reply wrote (the first ``"name": "..."``
    in it), the GUI's for the GUI-only parse codes, else unattributed.
    """
    parse = step.get("parse") or {}
    if not parse.get("ok"):
        named = _CALL_NAME.search(str(step.get("model_output") or ""))
        if parse.get("code") in _GUI_PARSE_CODES:
            channel = Channel.GUI
        else:
            channel = channel_of(named.group(1)) if named else Channel.UNATTRIBUTED
        return ChannelStep(channel, parse_failure=True)
    call = parse["call"]
    name, arguments = str(call["name"]), call.get("arguments") or {}
    error = step.get("env_error") or {}
    batch = arguments.get("steps") if name == "ax.act" else None
    return ChannelStep(
        channel_of(name),
        schema_failure=error.get("code") in SCHEMA_ERROR_CODES,
        batch_length=len(batch) if isinstance(batch, list) else None,
        observation=name in OBSERVATION_TOOLS,
        window_changes=len(step.get("window_changes") or ()),
    )


def channel_steps(steps: Iterable[Mapping[str, Any]]) -> tuple[ChannelStep, ...]:
    """The model calls of an episode's step records (lines without a parse are not calls)."""
    return tuple(channel_step(s) for s in steps if "parse" in s)


def malformed_rate_by_channel(episodes: Iterable[EpisodeStats]) -> dict[Channel, float]:
    """Per channel: (parse failures + schema rejections) / calls on it, over every episode's calls."""
    calls: dict[Channel, int] = {}
    bad: dict[Channel, int] = {}
    for ep in episodes:
        for step in ep.channel_steps:
            calls[step.channel] = calls.get(step.channel, 0) + 1
            bad[step.channel] = bad.get(step.channel, 0) + step.malformed
    return {channel: bad[channel] / n for channel, n in calls.items()}


def consecutive_schema_failure_rate(episodes: Iterable[EpisodeStats], run: int = 2) -> float | None:
    """Share of episodes with ``run`` or more malformed calls in a row (any channel)."""

    def repeats(ep: EpisodeStats) -> bool:
        streak = 0
        for step in ep.channel_steps:
            streak = streak + 1 if step.malformed else 0
            if streak >= run:
                return True
        return False

    eps = list(episodes)
    return sum(map(repeats, eps)) / len(eps) if eps else None


def calls_per_channel(episodes: Iterable[EpisodeStats]) -> dict[Channel, float]:
    """Mean calls per episode on each channel that any episode used."""
    eps = list(episodes)
    totals: dict[Channel, int] = {}
    for ep in eps:
        for step in ep.channel_steps:
            totals[step.channel] = totals.get(step.channel, 0) + 1
    return {channel: n / len(eps) for channel, n in totals.items()}


def mean_batch_length(episodes: Iterable[EpisodeStats]) -> float | None:
    """Mean steps per ``ax.act`` call; ``None`` without one."""
    lengths = [s.batch_length for ep in episodes for s in ep.channel_steps if s.batch_length is not None]
    return mean(lengths) if lengths else None


def observations_per_step(episodes: Iterable[EpisodeStats]) -> float | None:
    """Separate observation calls over all calls, per episode, macro-averaged."""
    shares = [
        sum(s.observation for s in ep.channel_steps) / len(ep.channel_steps)
        for ep in episodes
        if ep.channel_steps
    ]
    return mean(shares) if shares else None


def gui_window_change_rate(episodes: Iterable[EpisodeStats]) -> float | None:
    """Share of GUI calls after which a top-level window opened, closed, moved or took the focus."""
    gui = [s for ep in episodes for s in ep.channel_steps if s.channel == Channel.GUI and not s.malformed]
    return sum(s.window_changes > 0 for s in gui) / len(gui) if gui else None

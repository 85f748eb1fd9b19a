"""One run directory -> every number the tables, the plot and ``summary.json`` show."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hybrid_agent import metrics
from hybrid_agent.cost import PriceTable, RunCost, model_name, run_cost
from hybrid_agent.metrics import Coverage, EpisodeStats, Estimate, Reachability
from hybrid_agent.recorder import iter_archived_tries, iter_episodes, read_run_config, read_stop, read_suite
from hybrid_agent.tokens import TokenSummary


@dataclass(frozen=True)
class Behaviour:
    """The study's Table 3 numbers of one configuration (rates in [0, 1], ``None`` without data).

    Attributes:
        reachable_by: Which definition of tool-reachable ``adoption_reachable`` and
            ``osworld_mcp_tir`` used (:func:`metrics.reachability_source`).
        adoption_reachable_shown: Adoption over episodes where a step showed an MCP tool,
            our own definition, beside the annotated one.
        reachability_disagreements: Scored episodes whose annotation and shown tools differ.
        false_success_all: The study's definition: over every scored episode.
        false_success_claims: Over the episodes that terminated voluntarily.
        hallucinated_calls: Calls naming a tool that was not shown (a count).
    """

    episodes: int
    adoption: float | None
    adoption_reachable: float | None
    adoption_reachable_shown: float | None
    reachable_by: str
    reachability_disagreements: int
    tir_real: float | None
    tir_any: float | None
    osworld_mcp_tir: float | None
    acs: float | None
    false_success_all: float | None
    false_success_claims: float | None
    hallucinated_calls: int
    hallucinated_rate: float | None
    malformed_rate: float | None
    hit_cap_rate: float | None


def behaviour(episodes: tuple[EpisodeStats, ...]) -> Behaviour:
    """Computes :class:`Behaviour` over a configuration's episodes."""
    return Behaviour(
        episodes=len(episodes),
        adoption=metrics.adoption(episodes),
        adoption_reachable=metrics.adoption(episodes, reachable_only=True),
        adoption_reachable_shown=metrics.adoption(episodes, reachable_only=True, by=Reachability.SHOWN),
        reachable_by=metrics.reachability_source(episodes),
        reachability_disagreements=metrics.reachability_disagreements(episodes),
        tir_real=metrics.tir_real(episodes),
        tir_any=metrics.tir_any(episodes),
        osworld_mcp_tir=metrics.osworld_mcp_tir(episodes),
        acs=metrics.acs(episodes),
        false_success_all=metrics.false_success_all(episodes),
        false_success_claims=metrics.false_success_rate(episodes),
        hallucinated_calls=metrics.hallucinated_tool_calls(episodes),
        hallucinated_rate=metrics.hallucinated_tool_rate(episodes),
        malformed_rate=metrics.malformed_rate(episodes),
        hit_cap_rate=metrics.hit_cap_rate(episodes),
    )


@dataclass(frozen=True)
class InterfaceUse:
    """The GUI+CLI study's (HybridCUA's) numbers of one configuration, overall and per domain.

    Attributes:
        average_steps: Env steps per scored episode over all tasks, a budget-exhausted one at the cap.
        cli_step_share: Pooled CLI steps over pooled executable (GUI + CLI) steps.
        cli_error_rate: Pooled failed CLI steps over CLI steps.
        by_domain: The same three per domain.
    """

    average_steps: float | None
    cli_step_share: float | None
    cli_error_rate: float | None
    by_domain: dict[str, dict[str, float | None]]


INTERFACE_METRICS = {
    "average_steps": metrics.average_steps_all,
    "cli_step_share": metrics.cli_step_share,
    "cli_error_rate": metrics.cli_error_rate,
}


def interface_use(episodes: tuple[EpisodeStats, ...]) -> InterfaceUse:
    """Computes :class:`InterfaceUse` over a configuration's episodes."""
    per_domain = {name: metrics.per_domain(fn, episodes) for name, fn in INTERFACE_METRICS.items()}
    domains = sorted({d for values in per_domain.values() for d in values})
    return InterfaceUse(
        **{name: fn(episodes) for name, fn in INTERFACE_METRICS.items()},
        by_domain={d: {name: per_domain[name][d] for name in INTERFACE_METRICS} for d in domains},
    )


@dataclass(frozen=True)
class ChannelBehaviour:
    """Hybrid Computer Use's Table 3 rows of one configuration (rates in [0, 1], ``None`` without data).

    Attributes:
        malformed_by_channel: Per channel, (parse failures + schema rejections) / calls.
        consecutive_schema_failures: Share of episodes with two or more malformed calls in a row.
        calls_per_channel: Mean calls per episode, per channel.
        mean_batch_length: Mean steps per ``ax.act`` call.
        observations_per_step: Calls that only observe (``ax.observe``, ``ax.find``) over all calls.
        gui_window_changes: Share of GUI calls that opened, closed, moved or focused a window.
    """

    malformed_by_channel: dict[str, float]
    consecutive_schema_failures: float | None
    calls_per_channel: dict[str, float]
    mean_batch_length: float | None
    observations_per_step: float | None
    gui_window_changes: float | None


def channel_behaviour(episodes: tuple[EpisodeStats, ...]) -> ChannelBehaviour:
    """Computes :class:`ChannelBehaviour` over a configuration's episodes."""
    return ChannelBehaviour(
        malformed_by_channel={str(c): r for c, r in metrics.malformed_rate_by_channel(episodes).items()},
        consecutive_schema_failures=metrics.consecutive_schema_failure_rate(episodes),
        calls_per_channel={str(c): n for c, n in metrics.calls_per_channel(episodes).items()},
        mean_batch_length=metrics.mean_batch_length(episodes),
        observations_per_step=metrics.observations_per_step(episodes),
        gui_window_changes=metrics.gui_window_change_rate(episodes),
    )


@dataclass(frozen=True)
class RunSummary:
    """The metrics of one run directory (one configuration).

    Attributes:
        label: The configuration as a short text (policy, context, keep_think, routes).
        config: The run's ``run.json``.
        episodes: Every current finished episode, reduced.
        accuracy: Overall accuracy over runs.
        by_domain: Accuracy per domain (every domain of the suite and of the records).
        coverage: How many tasks and episodes of the suite ``accuracy`` covers.
        domain_coverage: The same per domain.
        tokens: Token statistics (``None`` without episodes).
        errors: Current episodes that ended in an error, by error label.
        rerun_errors: Errored tries set aside and rerun, by error label.
        behaviour: The Table 3 numbers.
        has_suite: The run directory has a ``suite.json`` (else coverage sees recorded tasks only).
        cost: USD spent (:mod:`hybrid_agent.cost`); ``None`` when the model has no price.
        stop: Why the run's last call stopped early (``stop.json``); ``None`` when it did not.
        interfaces: The GUI+CLI study's numbers (steps over all tasks, CLI share and errors).
    """

    label: str
    config: dict[str, Any]
    episodes: tuple[EpisodeStats, ...]
    accuracy: Estimate | None
    by_domain: dict[str, Estimate | None]
    coverage: Coverage
    domain_coverage: dict[str, Coverage]
    tokens: TokenSummary | None
    errors: dict[str, int]
    rerun_errors: dict[str, int]
    behaviour: Behaviour
    has_suite: bool
    cost: RunCost | None = None
    stop: dict[str, Any] | None = None
    interfaces: InterfaceUse | None = None

    @property
    def tokens_estimated(self) -> bool:
        """Some token counts are estimates (scripted policy)."""
        return any(ep.tokens_estimated for ep in self.episodes)


def run_label(config: dict[str, Any]) -> str:
    """``scripted:tools win2+drop think=off`` (+ ``thinking``, ``gui-only``, ``no-retrieval``).

    The agent settings are ``run.json``'s ``agent`` section (runs recorded before it held
    them at the top level, which is read as a fallback).
    """
    agent = config.get("agent") or config
    parts = [str(config.get("policy", "?")), str(agent.get("context", "?"))]
    parts.append(f"think={'on' if agent.get('keep_think') else 'off'}")
    if agent.get("thinking"):
        parts.append("thinking")
    if agent.get("gui_only"):
        parts.append("gui-only")
    elif agent.get("retrieval") is False:
        parts.append("no-retrieval")
    return " ".join(parts)


def summarize_run(run_dir: str | Path, prices: PriceTable | None = None) -> RunSummary:
    """Reads a run directory's records (and its suite, where recorded) and computes its metrics.

    ``prices`` (default: the bundled table) prices the run's model for its cost.
    """
    config = read_run_config(run_dir)
    suite = read_suite(run_dir)
    pairs = suite.pairs() if suite else None
    domains = dict(suite.tasks) if suite else None
    records = list(iter_episodes(run_dir))
    archived = [a.record for a in iter_archived_tries(run_dir)]
    cap = config.get("max_steps")
    max_steps = cap if isinstance(cap, int) else None
    episodes = tuple(metrics.episode_stats(record, max_steps) for record in records)
    rerun = (metrics.episode_stats(record, max_steps) for record in archived)
    model = model_name(str(config.get("policy", "")))
    price = (prices or PriceTable.bundled()).lookup(model)
    domain_coverage = metrics.coverage_by_domain(episodes, pairs, domains)
    by_domain = metrics.accuracy_by_domain(episodes)
    return RunSummary(
        label=run_label(config) if config else Path(run_dir).name,
        config=config,
        episodes=episodes,
        accuracy=metrics.accuracy(episodes),
        by_domain={domain: by_domain.get(domain) for domain in domain_coverage},
        coverage=metrics.coverage(episodes, pairs),
        domain_coverage=domain_coverage,
        tokens=metrics.token_summary(episodes),
        errors=dict(sorted(Counter(ep.error_label for ep in episodes if ep.error_label).items())),
        rerun_errors=dict(sorted(Counter(ep.error_label for ep in rerun if ep.error_label).items())),
        behaviour=behaviour(episodes),
        has_suite=suite is not None,
        cost=run_cost(model, price, records, archived) if price else None,
        stop=read_stop(run_dir),
        interfaces=interface_use(episodes),
    )


def _estimate(value: Estimate | None) -> dict[str, float] | None:
    return None if value is None else asdict(value)


def summary_json(run: RunSummary) -> dict[str, Any]:
    """The JSON form of a run's summary (``summary.json``): every number, coverage spelled out."""
    return {
        "label": run.label,
        "config": run.config,
        "accuracy": _estimate(run.accuracy),
        "accuracy_by_domain": {d: _estimate(e) for d, e in run.by_domain.items()},
        "coverage": asdict(run.coverage),
        "coverage_from": "suite.json" if run.has_suite else "records (no suite.json: unrun tasks unseen)",
        "coverage_by_domain": {d: asdict(c) for d, c in run.domain_coverage.items()},
        "errors": run.errors,
        "rerun_errors": run.rerun_errors,
        "tokens": None if run.tokens is None else asdict(run.tokens),
        "tokens_estimated": run.tokens_estimated,
        "behaviour": asdict(run.behaviour),
        "channels": asdict(channel_behaviour(run.episodes)),
        "cost_usd": None if run.cost is None else asdict(run.cost),
        "stop": run.stop,
        "interfaces": None if run.interfaces is None else asdict(run.interfaces),
        "labels": {
            "acs": "OSWorld-MCP's ACS: mean model calls over successful episodes only",
            "interfaces.average_steps": "HybridCUA: env steps over all scored episodes, the cap when "
            "the budget ran out",
            "interfaces.cli_step_share": "HybridCUA: pooled CLI steps / pooled GUI+CLI steps "
            "(control excluded)",
            "interfaces.cli_error_rate": "HybridCUA: failed CLI steps / CLI steps (timeout, exit != 0 "
            "except exit 1 with empty stderr)",
            "false_success_all": "study (Table 3): over all scored episodes",
            "false_success_claims": "over voluntary terminations (executed terminate)",
            "adoption_reachable": f"over tool-reachable episodes, by {run.behaviour.reachable_by}",
            "adoption_reachable_shown": "over episodes where a step showed an MCP tool",
        },
    }

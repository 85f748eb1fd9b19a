"""One run directory -> every number the tables and the plot show."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybrid_agent import metrics
from hybrid_agent.metrics import EpisodeStats, Estimate
from hybrid_agent.recorder import iter_episodes, read_run_config
from hybrid_agent.tokens import TokenSummary


@dataclass(frozen=True)
class RunSummary:
    """The metrics of one run directory (one configuration).

    Attributes:
        label: The configuration as a short text (policy, context, keep_think, routes).
        config: The run's ``run.json``.
        episodes: Every finished episode, reduced.
        accuracy: Overall accuracy over runs.
        by_domain: Accuracy per domain.
        tokens: Token statistics (``None`` without episodes).
        errors: Episodes that ended in an error, by error type.
    """

    label: str
    config: dict[str, Any]
    episodes: tuple[EpisodeStats, ...]
    accuracy: Estimate | None
    by_domain: dict[str, Estimate | None]
    tokens: TokenSummary | None
    errors: dict[str, int]

    @property
    def tokens_estimated(self) -> bool:
        """Some token counts are estimates (scripted policy)."""
        return any(ep.tokens_estimated for ep in self.episodes)


def run_label(config: dict[str, Any]) -> str:
    """``scripted:tools win2+drop think=off`` (+ ``gui-only``, ``no-retrieval``)."""
    parts = [str(config.get("policy", "?")), str(config.get("context", "?"))]
    parts.append(f"think={'on' if config.get('keep_think') else 'off'}")
    if config.get("gui_only"):
        parts.append("gui-only")
    elif config.get("retrieval") is False:
        parts.append("no-retrieval")
    return " ".join(parts)


def summarize_run(run_dir: str | Path) -> RunSummary:
    """Reads a run directory's finished episodes and computes its metrics."""
    config = read_run_config(run_dir)
    episodes = tuple(metrics.episode_stats(record) for record in iter_episodes(run_dir))
    errors: dict[str, int] = {}
    for ep in episodes:
        if ep.error is not None:
            errors[ep.error] = errors.get(ep.error, 0) + 1
    return RunSummary(
        label=run_label(config) if config else Path(run_dir).name,
        config=config,
        episodes=episodes,
        accuracy=metrics.accuracy(episodes),
        by_domain=metrics.accuracy_by_domain(episodes),
        tokens=metrics.token_summary(episodes),
        errors=errors,
    )

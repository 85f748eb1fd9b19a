"""``hybrid-agent rewrite``: rewrite a run's successful episodes, replay each on a fresh desktop, keep the 1s.

HybridCUA keeps a rewritten trajectory only when replaying it still solves the task. Each
rewrite (:mod:`hybrid_agent.rewrite.episode`) is played by the real agent loop with the
``hybridcua`` adapter (its replies parsed as a model's would be), on the env reset to the
recording's task and seed (its run index), with the bash channel on; the evaluator
scores it. Layout of ``--out``::

    replays/              every replay, a run directory of its own (kept or not)
    episodes/, run.json, suite.json   the kept replays: a run directory the SFT dataset
                          builder (``grpo_trainer.sft``) and ``hybrid-agent report`` read
    rewrite_report.json   per episode: what was made, and kept or why not

The recorded replays are the training data, not the rewrites as planned: their frames,
tool results and tokens are what the rewritten policy saw.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hybrid_agent.adapters.hybridcua import render_reply
from hybrid_agent.agent_loop import AgentConfig
from hybrid_agent.errors import ConfigError
from hybrid_agent.policies.base import Generation
from hybrid_agent.policies.replay import ReplayPolicy
from hybrid_agent.recorder import (
    EPISODES,
    RUN_FILE,
    EpisodeRecord,
    episode_key,
    iter_episodes,
    read_run_config,
    write_suite,
)
from hybrid_agent.rewrite.episode import Rewrite, RewriteMode, describe, rewrite_episode
from hybrid_agent.rewrite.errors import RewriteError, RewriteReason
from hybrid_agent.runner import RunConfig, Runner
from hybrid_agent.suite import SuiteTask, load_suite

REPLAYS = "replays"
REPORT_FILE = "rewrite_report.json"
KEPT = "kept"
GIVE_UP = render_reply("Give up.", [{"action": "terminate", "status": "failure"}])


@dataclass(frozen=True)
class RewriteConfig:
    """How ``hybrid-agent rewrite`` rewrites and replays.

    Attributes:
        mode: ``gui``, ``interleaved`` or ``auto`` (:class:`RewriteMode`).
        min_score: A source episode is rewritten, and a replay kept, at this score or above
            (HybridCUA: success, 1).
        envs: Desktops replaying in parallel.
        context: The replay's context policy (HybridCUA's own by default).
        env_kwargs: ``gym.make`` options over the recording's own (``enable_bash`` is always on).
        max_steps: Steps a replay may take; past its rewrite the replay gives up at once.
    """

    mode: RewriteMode = RewriteMode.AUTO
    min_score: float = 1.0
    envs: int = 1
    context: str = "hybridcua"
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    max_steps: int = 50

    def __post_init__(self) -> None:
        if self.envs < 1 or self.max_steps < 1:
            raise ConfigError(f"envs and max_steps must be >= 1, got {self.envs} and {self.max_steps}.")


@dataclass
class EpisodeOutcome:
    """What became of one recorded episode.

    Attributes:
        task_id: Its task.
        run: Its run index.
        status: ``kept``, or the :class:`RewriteReason` it failed with.
        message: Why, in words.
        rewrite: The rewrite's counts (:func:`describe`); ``None`` when none was made.
        score: The replay's score; ``None`` when not replayed or not scored.
    """

    task_id: str
    run: int
    status: str
    message: str = ""
    rewrite: dict[str, Any] | None = None
    score: float | None = None

    @property
    def replayed(self) -> bool:
        """The rewrite was played on a desktop."""
        return self.status in (KEPT, RewriteReason.SCORE, RewriteReason.ENV_ERROR)


@dataclass
class RewriteReport:
    """Every recorded episode's outcome, and the counts the command prints."""

    source: str
    out: str
    mode: str
    outcomes: list[EpisodeOutcome] = field(default_factory=list)

    def counts(self) -> dict[str, Any]:
        """Episodes read, converted, replayed and kept; failures by reason."""
        failures = Counter(o.status for o in self.outcomes if o.status != KEPT)
        return {
            "episodes": len(self.outcomes),
            "converted": sum(o.rewrite is not None for o in self.outcomes),
            "replayed": sum(o.replayed for o in self.outcomes),
            "kept": sum(o.status == KEPT for o in self.outcomes),
            "failed": {str(reason): failures[reason] for reason in RewriteReason if failures[reason]},
        }

    def to_dict(self) -> dict[str, Any]:
        """The report as written to ``rewrite_report.json``."""
        return {
            "source": self.source,
            "out": self.out,
            "mode": self.mode,
            "counts": self.counts(),
            "episodes": [asdict(o) for o in self.outcomes],
        }

    def table(self) -> str:
        """One line per episode, then the counts (what the command prints)."""
        rows = ["| episode | made | steps | CLI | outcome |", "|---|---|---:|---:|---|"]
        for o in self.outcomes:
            made = o.rewrite or {}
            steps = f"{made['source_steps']} -> {made['steps']}" if made else "-"
            score = f" (score {o.score:g})" if o.score is not None else ""
            why = f": {o.message}" if o.status != KEPT and o.message else ""
            mode, cli = made.get("mode", "-"), made.get("cli_steps", "-")
            rows.append(f"| {o.task_id} run {o.run} | {mode} | {steps} | {cli} | {o.status}{score}{why} |")
        c = self.counts()
        failed = ", ".join(f"{k} {v}" for k, v in c["failed"].items()) or "none"
        rows.append("")
        rows.append(
            f"{c['episodes']} episodes: {c['converted']} converted, {c['replayed']} replayed, "
            f"{c['kept']} kept; not kept: {failed}"
        )
        return "\n".join(rows)


def _successful(record: EpisodeRecord, min_score: float) -> bool:
    score = record.end.get("score")
    return record.end.get("error") is None and score is not None and score >= min_score


def plan_rewrites(
    records: Sequence[EpisodeRecord], mode: RewriteMode, min_score: float = 1.0
) -> tuple[list[Rewrite], list[EpisodeOutcome]]:
    """Rewrites every successful record; the others get their outcome now.

    Returns:
        The rewrites, and the outcomes of the records that gave none (source failed,
        unconvertible, unreconstructable, nothing to rewrite).
    """
    rewrites, outcomes = [], []
    for record in records:
        if not _successful(record, min_score):
            score = record.end.get("score")
            why = (
                f"the recording scored {score}"
                if record.end.get("error") is None
                else "the recording errored"
            )
            outcomes.append(EpisodeOutcome(record.task_id, record.run, RewriteReason.SOURCE_FAILED, why))
            continue
        try:
            rewrites.append(rewrite_episode(record, mode))
        except RewriteError as exc:
            outcomes.append(EpisodeOutcome(record.task_id, record.run, exc.reason, str(exc)))
    return rewrites, outcomes


def _end_outcome(rewrite: Rewrite, record: EpisodeRecord | None, min_score: float) -> EpisodeOutcome:
    made = describe(rewrite)
    if record is None:
        return EpisodeOutcome(rewrite.task_id, rewrite.run, RewriteReason.ENV_ERROR, "not replayed", made)
    end = record.end
    error = end.get("error")
    if error:
        message = f"{error.get('type')}: {error.get('message', '')}".strip()
        return EpisodeOutcome(rewrite.task_id, rewrite.run, RewriteReason.ENV_ERROR, message, made)
    score = float(end["score"])
    if score >= min_score:
        return EpisodeOutcome(rewrite.task_id, rewrite.run, KEPT, "", made, score)
    message = f"the evaluator scored the replay {score:g} (needs {min_score:g})"
    return EpisodeOutcome(rewrite.task_id, rewrite.run, RewriteReason.SCORE, message, made, score)


def replay_rewrites(
    rewrites: Sequence[Rewrite],
    tasks: Sequence[SuiteTask],
    out: Path,
    config: RewriteConfig,
    env_kwargs: Mapping[str, Any],
    progress: bool = True,
    suite: str = "",
) -> list[EpisodeOutcome]:
    """Replays ``rewrites`` into ``out/replays`` (a fresh run directory) and judges each.

    Args:
        rewrites: At most one per (task, run).
        tasks: The suite's tasks (each rewrite's task is looked up here).
        out: The command's output directory.
        config: Replay settings.
        env_kwargs: The recording's ``gym.make`` options (``config.env_kwargs`` go over them).
        progress: Show a progress bar.
        suite: The suite spec ``tasks`` came from, recorded in the replays' ``run.json``.

    Raises:
        ConfigError: Two rewrites of one (task, run), or a task outside ``tasks``.
    """
    if not rewrites:
        return []
    keys = [(r.task_id, r.run) for r in rewrites]
    if len(set(keys)) != len(keys):
        raise ConfigError("Two rewrites of one (task, run): a replay's seed is its run index, one each.")
    by_id = {task.task_id: task for task in tasks}
    missing = sorted({r.task_id for r in rewrites} - set(by_id))
    if missing:
        raise ConfigError(f"Tasks {missing} are not in the suite; pass the recording's suite (--suite).")
    staging = out / REPLAYS
    shutil.rmtree(staging, ignore_errors=True)  # replays of earlier rewrites must not be taken as these
    outputs = {(r.task_id, r.run): [Generation(text=text) for text in r.replies()] for r in rewrites}
    policy = ReplayPolicy(outputs, f"rewrite:{config.mode}", give_up=GIVE_UP)
    run_config = RunConfig(
        policy=policy.name,
        suite=suite,
        agent=AgentConfig(context=config.context, adapter="hybridcua", gui_only=True),
        runs=max(r.run for r in rewrites) + 1,
        envs=min(config.envs, len(rewrites)),
        max_steps=config.max_steps,
        env_kwargs={**env_kwargs, **config.env_kwargs, "enable_bash": True},
    )
    replay_tasks = [by_id[task_id] for task_id in dict.fromkeys(r.task_id for r in rewrites)]
    Runner(run_config, policy, staging, progress=progress, max_tries=1).evaluate(replay_tasks, keys)
    replayed = {(record.task_id, record.run): record for record in iter_episodes(staging)}
    return [_end_outcome(r, replayed.get((r.task_id, r.run)), config.min_score) for r in rewrites]


def publish_kept(out: Path, outcomes: Sequence[EpisodeOutcome], tasks: Sequence[SuiteTask]) -> None:
    """Copies the kept replays (records and frames) into ``out`` as a run directory of their own."""
    staging = out / REPLAYS
    shutil.rmtree(out / EPISODES, ignore_errors=True)
    (out / EPISODES).mkdir(parents=True)
    kept = [o for o in outcomes if o.status == KEPT]
    for outcome in kept:
        key = episode_key(outcome.task_id, outcome.run)
        shutil.copy2(staging / EPISODES / f"{key}.jsonl", out / EPISODES / f"{key}.jsonl")
        if (staging / EPISODES / key).is_dir():
            shutil.copytree(staging / EPISODES / key, out / EPISODES / key)
    if (staging / RUN_FILE).exists():
        shutil.copy2(staging / RUN_FILE, out / RUN_FILE)
    domains = {task.task_id: task.domain for task in tasks}
    kept_ids = dict.fromkeys(o.task_id for o in kept)
    (out / "suite.json").unlink(missing_ok=True)
    write_suite(out, [(t, domains[t]) for t in kept_ids], max((o.run for o in kept), default=-1) + 1)


def rewrite_run(
    run_dir: str | Path,
    out: str | Path,
    config: RewriteConfig,
    suite: str | None = None,
    tasks_dir: str | Path | None = None,
    progress: bool = True,
) -> RewriteReport:
    """The ``rewrite`` command: plan, replay, keep; writes ``out`` and returns the report.

    Args:
        run_dir: A run directory of ``hybrid-agent eval``.
        out: Where the kept run directory, the replays and the report go (their earlier
            contents are replaced).
        config: How to rewrite and replay.
        suite: The suite the recording's tasks come from (default: its ``run.json``'s).
        tasks_dir: Where a split's task ids are looked up.
        progress: Show a progress bar during the replays.

    Raises:
        ConfigError: ``out`` is ``run_dir`` or inside it, ``out`` holds episodes that no
            rewrite wrote (they would be replaced), or the suite lacks a task.
    """
    source, target = Path(run_dir).resolve(), Path(out).resolve()
    if target == source or source in target.parents:
        raise ConfigError(f"--out {out} must lie outside the recording {run_dir}.")
    if (target / EPISODES).exists() and not (target / REPORT_FILE).exists():
        raise ConfigError(
            f"{out} holds a run directory that no rewrite wrote; give a new or a rewrite's --out."
        )
    recorded = read_run_config(source)
    records = list(iter_episodes(source))
    rewrites, outcomes = plan_rewrites(records, config.mode, config.min_score)
    spec = suite or recorded.get("suite") or "bundled"
    tasks = load_suite(spec, tasks_dir) if rewrites else []
    target.mkdir(parents=True, exist_ok=True)
    env_kwargs = recorded.get("env_kwargs") or {}
    outcomes += replay_rewrites(rewrites, tasks, target, config, env_kwargs, progress, spec)
    order = {(r.task_id, r.run): i for i, r in enumerate(records)}
    outcomes.sort(key=lambda o: order.get((o.task_id, o.run), len(order)))
    publish_kept(target, outcomes, tasks)
    report = RewriteReport(str(run_dir), str(out), str(config.mode), outcomes)
    (target / REPORT_FILE).write_text(json.dumps(report.to_dict(), indent=1), encoding="utf-8")
    return report

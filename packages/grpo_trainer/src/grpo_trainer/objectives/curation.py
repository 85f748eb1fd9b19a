"""Pass-rate profiling: which tasks can teach the policy anything.

GRPO learns only from groups whose members disagree: a task the policy always
solves or never solves gives every member the same return, a zero advantage and
no gradient, while costing a full group of rollouts. Before training, each
candidate task gets G sampled rollouts with the starting policy and is kept only
when its pass rate p lies strictly inside a band (the study: (0.1, 0.9)). The
accuracy filter of :mod:`grpo_trainer.objectives.advantage` drops such groups one step at
a time; profiling drops the tasks once.

Crashed episodes are not failures: they are counted apart and left out of p,
as they are left out of the gradient. A task with no scored episode has no p
and is not kept.

The candidates are the run's ``tasks`` resolved as training resolves them
(:func:`grpo_trainer.rollouts.tasks.resolve_tasks`: suite specs, split files, directories,
task ids), and each is rolled out as training would reset to it
(:func:`grpo_trainer.rollouts.tasks.group_task`): a seeded template as a fresh instance at a
training seed, never at a held-out one, so curation reads nothing evaluation scores.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
from hybrid_agent.suite import SuiteTask
from osworld_mcp_env.tasks.templates import TEMPLATES

from grpo_trainer.errors import ConfigError
from grpo_trainer.model.policy import TrainablePolicy
from grpo_trainer.objectives.rewards import RewardConfig, succeeded
from grpo_trainer.rollouts.episode import Episode
from grpo_trainer.rollouts.group import RolloutConfig, collect_group
from grpo_trainer.rollouts.tasks import group_task


@dataclass(frozen=True)
class CurationConfig:
    """Which pass rates are worth training on.

    Attributes:
        low: Keep tasks with ``low < p`` ...
        high: ... ``< high`` (both strict: p = 0 and p = 1 teach nothing).
    """

    low: float = 0.1
    high: float = 0.9

    def __post_init__(self) -> None:
        if not 0.0 <= self.low < self.high <= 1.0:
            raise ConfigError(f"The band needs 0 <= low < high <= 1, got ({self.low}, {self.high}).")


@dataclass(frozen=True)
class TaskPassRate:
    """One task's profile.

    Attributes:
        task: The task id or source as given to ``reset`` (a template's drawn ``TEMPLATE@SEED``).
        entry: What a run config's ``tasks`` takes to train on it: the template id for a drawn
            instance (training draws its own seeds), else ``task``.
        successes: Scored episodes that reached the success threshold.
        scored: Episodes that ended with a score.
        crashed: Episodes that ended in an error (not in ``scored``).
        pass_rate: ``successes / scored``; ``None`` when nothing was scored.
        kept: Inside the band.
    """

    task: str
    entry: str
    successes: int
    scored: int
    crashed: int
    pass_rate: float | None
    kept: bool


def in_band(pass_rate: float | None, config: CurationConfig) -> bool:
    """``low < p < high``; a task without a pass rate is never kept."""
    return pass_rate is not None and config.low < pass_rate < config.high


def pass_rate(
    task: str,
    episodes: Sequence[Episode],
    reward: RewardConfig,
    band: CurationConfig,
    entry: str | None = None,
) -> TaskPassRate:
    """The profile of one task from its rollouts (crashes counted apart); ``entry`` defaults to ``task``."""
    scored = [e for e in episodes if not e.crashed]
    successes = sum(1 for e in scored if succeeded(e, reward))  # scores may be numpy scalars
    rate = successes / len(scored) if scored else None
    crashed = len(episodes) - len(scored)
    return TaskPassRate(task, entry or task, successes, len(scored), crashed, rate, in_band(rate, band))


def profile_tasks(
    venv: gym.vector.VectorEnv,
    policy: TrainablePolicy,
    tasks: Sequence[SuiteTask],
    rollout: RolloutConfig,
    reward: RewardConfig,
    band: CurationConfig,
    generator: Any,
    seed: int = 0,
) -> list[TaskPassRate]:
    """G sampled rollouts per task (one group, as training draws them) and each task's verdict.

    Args:
        venv: A group env (:func:`grpo_trainer.rollouts.vector.make_group_env`), G members.
        policy: The starting policy, sampled at ``rollout.temperature``.
        tasks: The run's tasks, resolved (:func:`grpo_trainer.rollouts.tasks.resolve_tasks`).
        rollout: Rollout settings (context, coordinates, temperature).
        reward: Its ``success_threshold`` decides what a success is.
        band: The pass-rate band.
        generator: The ``torch.Generator`` the samples come from.
        seed: Task ``i`` starts from ``seed + i``; a template's instance is the training seed
            :func:`~grpo_trainer.rollouts.tasks.group_task` draws for index ``i`` of a run seeded ``seed``.
    """
    profiles = []
    for i, task in enumerate(tasks):
        target = group_task(tasks, i, seed)
        entry = task.task_id if task.task_id in TEMPLATES else target
        group = collect_group(
            venv, policy, target, seed=seed + i, group=i, config=rollout, generator=generator
        )
        profiles.append(pass_rate(target, group, reward, band, entry))
    return profiles


def write_profile(profiles: Sequence[TaskPassRate], path: str | Path) -> Path:
    """Writes the profile as JSON: every task with its numbers, and the kept ids apart.

    The ``kept`` list holds each kept task's ``entry``, what a run config's ``tasks`` takes.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"tasks": [asdict(p) for p in profiles], "kept": [p.entry for p in profiles if p.kept]}
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(document, indent=1))
    partial.replace(path)  # never a half-written profile
    return path

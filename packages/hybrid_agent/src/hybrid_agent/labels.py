"""Interface labels from rollouts: which interface a task is best solved with (HybridCUA's rule).

Each task is rolled out N times in each of three modes: GUI only, CLI only, and hybrid.
The modes are ranked by success rate; two rates within ``tie_points`` percentage points
(5) are a tie, broken by the shorter median length of the successful rollouts, then by
preferring a single-interface mode over the hybrid one, then GUI-only over CLI-only.
The label is 1 (the task prefers the CLI) when CLI-only ranks first, or when hybrid
ranks first and more than half of its successful rollouts contain a direct CLI
command (:func:`hybrid_agent.step_kind.classify_step`); else 0. No task is removed.

The pairwise rule need not be transitive (a within 5 points of b, b of c, a not of c);
the modes are sorted with it from the fixed order GUI, CLI, hybrid, so the ranking is
deterministic.

The labels file (:func:`write_labels`) is what the trainer's interface bonus reads
(``[reward] labels_file``): per task its label, the ``preferred_interface`` the bonus
takes (``"cli"`` for 1, ``"gui"`` for 0), the ranking and each mode's counts.
"""

from __future__ import annotations

import functools
import json
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from hybrid_agent.errors import ConfigError
from hybrid_agent.metrics import EpisodeStats, episode_stats
from hybrid_agent.recorder import iter_episodes
from hybrid_agent.step_kind import StepKind

TIE_POINTS = 5.0
LABELS_VERSION = 1


class Mode(StrEnum):
    """An interface-restricted way to run an episode."""

    GUI = "gui"
    CLI = "cli"
    HYBRID = "hybrid"


# The order ties fall back on after the median length: single-interface modes first, GUI before CLI.
PREFERENCE = (Mode.GUI, Mode.CLI, Mode.HYBRID)


@dataclass(frozen=True)
class ModeRollouts:
    """One task's rollouts in one mode, reduced to what the ranking reads.

    Attributes:
        mode: The mode.
        rollouts: Rollouts scored (errored ones are not counted).
        success_lengths: Env steps of each successful rollout.
        cli_successes: Successful rollouts with at least one direct CLI command.
    """

    mode: Mode
    rollouts: int
    success_lengths: tuple[int, ...] = ()
    cli_successes: int = 0

    @property
    def success_rate(self) -> float:
        """Successes over rollouts (0 without rollouts)."""
        return len(self.success_lengths) / self.rollouts if self.rollouts else 0.0

    @property
    def median_length(self) -> float:
        """The median length of the successful rollouts; infinite without one (never shorter)."""
        return float(statistics.median(self.success_lengths)) if self.success_lengths else math.inf


def compare_modes(a: ModeRollouts, b: ModeRollouts, tie_points: float = TIE_POINTS) -> int:
    """Negative when ``a`` ranks before ``b``, positive when after, 0 when the rule cannot tell them apart."""
    gap = 100.0 * (a.success_rate - b.success_rate)
    if abs(gap) > tie_points + 1e-9:
        return -1 if gap > 0 else 1
    if a.median_length != b.median_length:
        return -1 if a.median_length < b.median_length else 1
    return PREFERENCE.index(a.mode) - PREFERENCE.index(b.mode)


def _compare(tie_points: float, a: ModeRollouts, b: ModeRollouts) -> int:
    return compare_modes(a, b, tie_points)


def rank_modes(results: Sequence[ModeRollouts], tie_points: float = TIE_POINTS) -> list[Mode]:
    """The modes best first (see the module docstring for the rule).

    Raises:
        ConfigError: A mode is given twice.
    """
    if len({r.mode for r in results}) != len(results):
        raise ConfigError(f"Each mode ranks once; got {[str(r.mode) for r in results]}.")
    start = sorted(results, key=lambda r: PREFERENCE.index(r.mode))
    return [r.mode for r in sorted(start, key=functools.cmp_to_key(functools.partial(_compare, tie_points)))]


def interface_label(results: Sequence[ModeRollouts], tie_points: float = TIE_POINTS) -> int:
    """1 if CLI-only ranks first, or hybrid does and > half its successes ran a direct CLI command; else 0."""
    first = rank_modes(results, tie_points)[0]
    if first == Mode.CLI:
        return 1
    if first == Mode.HYBRID:
        hybrid = next(r for r in results if r.mode == Mode.HYBRID)
        return int(hybrid.cli_successes > len(hybrid.success_lengths) / 2)
    return 0


def preferred_interface(label: int) -> str:
    """The trainer's ``preferred_interface`` of a label: ``"cli"`` for 1, ``"gui"`` for 0."""
    return "cli" if label else "gui"


def mode_rollouts(mode: Mode, episodes: Iterable[EpisodeStats]) -> ModeRollouts:
    """A mode's counts from its recorded episodes of one task (errored episodes left out)."""
    scored = [e for e in episodes if e.score is not None]
    successes = [e for e in scored if e.success]
    with_cli = sum(any(c.kind == StepKind.CLI for c in e.calls) for e in successes)
    return ModeRollouts(mode, len(scored), tuple(e.env_steps for e in successes), with_cli)


@dataclass(frozen=True)
class TaskLabel:
    """One task's label and what it was decided from."""

    task_id: str
    label: int
    ranking: tuple[Mode, ...]
    modes: tuple[ModeRollouts, ...]

    def to_dict(self) -> dict[str, Any]:
        """The task's entry in the labels file."""
        return {
            "label": self.label,
            "preferred_interface": preferred_interface(self.label),
            "ranking": [str(m) for m in self.ranking],
            "modes": {
                str(r.mode): {
                    "rollouts": r.rollouts,
                    "successes": len(r.success_lengths),
                    "success_rate": r.success_rate,
                    "median_length": None if math.isinf(r.median_length) else r.median_length,
                    "cli_successes": r.cli_successes,
                }
                for r in self.modes
            },
        }


def label_runs(runs: Mapping[Mode, str | Path], tie_points: float = TIE_POINTS) -> list[TaskLabel]:
    """Labels every task recorded in all three run directories (one per mode), in task-id order.

    Raises:
        ConfigError: A mode is missing, or a task is not recorded in every mode's run.
    """
    if set(runs) != set(Mode):
        raise ConfigError(f"Labels need one run directory per mode {[str(m) for m in Mode]}.")
    by_mode: dict[Mode, dict[str, list[EpisodeStats]]] = {}
    for mode, run_dir in runs.items():
        tasks: dict[str, list[EpisodeStats]] = {}
        for record in iter_episodes(run_dir):
            tasks.setdefault(record.task_id, []).append(episode_stats(record))
        by_mode[mode] = tasks
    task_ids = set().union(*(tasks.keys() for tasks in by_mode.values()))
    missing = sorted(t for t in task_ids if any(t not in by_mode[m] for m in Mode))
    if missing:
        raise ConfigError(f"Tasks {missing} are not recorded in every mode's run; label the same tasks.")
    labels = []
    for task_id in sorted(task_ids):
        results = [mode_rollouts(mode, by_mode[mode][task_id]) for mode in PREFERENCE]
        ranking = tuple(rank_modes(results, tie_points))
        labels.append(TaskLabel(task_id, interface_label(results, tie_points), ranking, tuple(results)))
    return labels


def write_labels(path: str | Path, labels: Sequence[TaskLabel], tie_points: float = TIE_POINTS) -> Path:
    """Writes the labels file (temp file + rename)."""
    path = Path(path)
    document = {
        "version": LABELS_VERSION,
        "tie_points": tie_points,
        "tasks": {label.task_id: label.to_dict() for label in labels},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(document, indent=1), encoding="utf-8")
    tmp.replace(path)
    return path


def read_labels(path: str | Path) -> dict[str, str]:
    """``{task_id: preferred_interface}`` of a labels file.

    Raises:
        ConfigError: The file is not a labels file of this version.
    """
    document = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(document, dict) or document.get("version") != LABELS_VERSION:
        raise ConfigError(f"{path} is not a labels file (version {LABELS_VERSION}) of hybrid-agent label.")
    return {task_id: entry["preferred_interface"] for task_id, entry in document["tasks"].items()}

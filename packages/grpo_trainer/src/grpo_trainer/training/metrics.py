"""Where a run's metrics go: one JSON line per step and the same numbers as TensorBoard scalars.

The Trainer builds one flat dict per step (``rollout/reward``, ``train/kl``,
``time/update_s`` ...); :class:`MetricsSink` is the only place that writes it, so the
JSONL file and the TensorBoard event file cannot disagree and no metric name is
listed twice: every number in the dict becomes the scalar of the same tag at
``global_step = metrics["step"]``. Rank 0 writes ``metrics.jsonl`` and
``tensorboard/``, rank R ``metrics_rankR.jsonl`` and ``tensorboard/rankR`` (each rank
rolls out its own groups). Events are flushed after every step, so a killed run
keeps what it logged; a resumed run purges its own events from the resume step on,
which TensorBoard would otherwise draw twice.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tensorboardX import SummaryWriter  # type: ignore[import-untyped]  # no py.typed

__all__ = ["MetricsSink", "summarize_updates", "tensorboard_dir"]

# Per-update numbers whose first, last and mean over a batch's updates are logged: the first
# update's KL and clipping are 0 (the weights are the rollout's), later ones show how far it moved.
PER_UPDATE = ("train/kl", "train/clip_frac", "train/ratio_mean", "train/ratio_min", "train/ratio_max")


def summarize_updates(updates: list[dict[str, float]]) -> dict[str, float]:
    """One step's view of its ``updates`` (each update's metrics, in order).

    Every key is the mean over the updates; those of :data:`PER_UPDATE` also come as
    ``KEY_first``, ``KEY_last`` and ``KEY_mean``. A key some update lacks (a rank that ran
    only passes of weight 0 has no KL) is averaged over the updates that have it.
    """
    out: dict[str, float] = {}
    for key in dict.fromkeys(k for update in updates for k in update):
        values = [update[key] for update in updates if key in update]
        out[key] = sum(values) / len(values)
        if key in PER_UPDATE:
            out.update({f"{key}_first": values[0], f"{key}_last": values[-1], f"{key}_mean": out[key]})
    return out


def tensorboard_dir(run_dir: str | Path, rank: int = 0) -> Path:
    """Rank ``rank``'s event-file folder under ``run_dir`` (``tensorboard --logdir RUN_DIR/tensorboard``)."""
    root = Path(run_dir) / "tensorboard"
    return root if rank == 0 else root / f"rank{rank}"


class MetricsSink:
    """Appends each step's metrics to the rank's JSONL file and writes them as TensorBoard scalars."""

    def __init__(self, run_dir: str | Path, rank: int = 0, resume_step: int = 0) -> None:
        """Opens the TensorBoard writer (new event file) for ``rank`` under ``run_dir``.

        Args:
            run_dir: The run folder (shared by the ranks).
            rank: This process's rank.
            resume_step: The step this process starts at; events of a previous process at
                that step or later are purged from TensorBoard's view (they are replayed).
        """
        self.jsonl = Path(run_dir) / ("metrics.jsonl" if rank == 0 else f"metrics_rank{rank}.jsonl")
        events = tensorboard_dir(run_dir, rank)
        # Made here, tolerant of the other ranks: tensorboardX checks, then creates, and rank 0's
        # folder is the parent of rank 1's, so two ranks starting together raced (FileExistsError).
        events.mkdir(parents=True, exist_ok=True)
        self.writer = SummaryWriter(str(events), purge_step=resume_step if resume_step > 0 else None)

    def write(self, metrics: dict[str, Any]) -> None:
        """Logs one step: the whole dict as a JSON line, each number as a scalar at ``metrics["step"]``."""
        step = int(metrics["step"])
        with self.jsonl.open("a") as log:
            log.write(json.dumps(metrics) + "\n")
        for tag, value in metrics.items():
            if tag != "step" and isinstance(value, (int, float)) and not isinstance(value, bool):
                self.writer.add_scalar(tag, float(value), step)
        self.writer.flush()

    def close(self) -> None:
        """Flushes and closes the event file."""
        self.writer.close()

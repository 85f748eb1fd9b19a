"""The checkpoints folder of a run: which checkpoint is the newest complete one, and rotation.

A backend writes ``step_N.pt`` (torch) or ``step_N/`` (DeepSpeed) under
``RUN_DIR/checkpoints/``; the Trainer then moves the ``latest`` pointer to it, so
``latest`` always names a complete checkpoint and a killed save leaves at most a
partial ``step_M`` newer than it, which resume ignores and the next save of step M
overwrites. Rotation (``[checkpoint] keep_last``) runs after the pointer moved and
removes only checkpoints older than the ``keep_last`` newest complete ones.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from grpo_trainer.errors import CheckpointError

_NAME = re.compile(r"step_(\d+)(\.pt)?")
LATEST = "latest"


def checkpoint_step(name: str) -> int | None:
    """The step of a checkpoint name (``step_12.pt`` or ``step_12``); ``None`` for anything else."""
    match = _NAME.fullmatch(name)
    return int(match.group(1)) if match else None


def latest_checkpoint(folder: Path) -> str | None:
    """The name ``folder/latest`` points at (the newest complete checkpoint); ``None`` without one."""
    pointer = folder / LATEST
    return pointer.read_text().strip() if pointer.is_file() else None


def resolve_checkpoint(path: Path) -> tuple[Path, str]:
    """``(checkpoints folder, name)`` of a run dir, a checkpoints folder (its ``latest``) or one checkpoint.

    Raises:
        CheckpointError: ``path`` is none of these, or its ``latest`` is missing.
    """
    if checkpoint_step(path.name) is not None and path.exists():
        return path.parent, path.name
    for folder in (path, path / "checkpoints"):
        name = latest_checkpoint(folder)
        if name is not None:
            if not (folder / name).exists():
                raise CheckpointError(f"{folder / LATEST} names {name}, which is missing.")
            return folder, name
    raise CheckpointError(
        f"{path} is not a checkpoint: give a run's output_dir, its checkpoints/ folder, or one "
        "checkpoints/step_N (DeepSpeed) or step_N.pt (torch)."
    )


def rotate_checkpoints(folder: Path, keep_last: int) -> list[str]:
    """Removes complete checkpoints older than the ``keep_last`` newest; returns the names removed.

    Complete means at most ``latest``'s step (a newer one is a partial save); ``latest``'s own
    checkpoint is always kept. ``keep_last = 0`` keeps everything.
    """
    newest = latest_checkpoint(folder)
    if keep_last == 0 or newest is None:
        return []
    newest_step = checkpoint_step(newest)
    if newest_step is None:
        return []
    steps = {p.name: checkpoint_step(p.name) for p in folder.iterdir()}
    complete = sorted(
        (step, name) for name, step in steps.items() if step is not None and step <= newest_step
    )
    removed = []
    for _, name in complete[:-keep_last]:
        path = folder / name
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
        removed.append(name)
    return removed

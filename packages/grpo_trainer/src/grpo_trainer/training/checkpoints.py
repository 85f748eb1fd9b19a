"""The checkpoints folder of a run: which checkpoint is the newest complete one, and rotation.

A backend writes ``step_N.pt`` (torch) or ``step_N/`` (DeepSpeed) under
``RUN_DIR/checkpoints/``; the Trainer then moves the ``latest`` pointer to it, so
``latest`` always names a complete checkpoint and a killed save leaves at most a
partial ``step_M`` newer than it, which resume ignores and the next save of step M
overwrites. Rotation (``[checkpoint] keep_last``) runs after the pointer moved and
removes only checkpoints older than the ``keep_last`` newest complete ones.
"""

from __future__ import annotations

import os
import random
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from grpo_trainer.errors import CheckpointError

if TYPE_CHECKING:
    import torch

    from grpo_trainer.training.backend import Backend

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


def save_checkpoint(backend: Backend, folder: Path, step: int, state: dict[str, Any], keep_last: int) -> Path:
    """Writes ``backend``'s checkpoint of ``step`` with ``state``, then (rank 0) points ``latest`` at it.

    Only then does rank 0 remove checkpoints past ``keep_last``, so a kill at any moment
    leaves ``latest`` naming a complete checkpoint.
    """
    folder.mkdir(parents=True, exist_ok=True)
    name = backend.save(folder, step, state)
    if backend.rank == 0:
        latest = folder / f"{LATEST}.tmp"
        latest.write_text(name)
        os.replace(latest, folder / LATEST)
        rotate_checkpoints(folder, keep_last)
    return folder / name


def load_latest(backend: Backend, folder: Path, config: dict[str, Any]) -> dict[str, Any] | None:
    """Restores ``backend`` from ``folder``'s ``latest`` checkpoint; returns its state, ``None`` without one.

    Raises:
        CheckpointError: The checkpoint was written under another configuration than ``config``.
    """
    name = latest_checkpoint(folder)
    if name is None:
        return None
    state = backend.load(folder, name)
    if state["config"] != config:
        raise CheckpointError(f"{folder / name} was written by another configuration; use a new run_dir.")
    return state


def seed_everything(seed: int) -> None:
    """Seeds Python's, numpy's and torch's global streams from a run's seed."""
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def rng_state(generator: torch.Generator) -> dict[str, Any]:
    """Every random stream a run draws from: ``generator``, torch's, numpy's and Python's."""
    import torch

    return {
        "generator": generator.get_state(),
        "torch": torch.get_rng_state(),
        "numpy": np.random.get_state(),
        "python": random.getstate(),
    }


def restore_rng(state: dict[str, Any], generator: torch.Generator) -> None:
    """Puts back the streams :func:`rng_state` saved."""
    import torch

    generator.set_state(state["generator"])
    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])

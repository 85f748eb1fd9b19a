"""The optimizer and LR schedule of a run, the same for every backend.

Both backends (:mod:`grpo_trainer.training.backend`, :mod:`grpo_trainer.training.backend_deepspeed`)
build their AdamW and ``LambdaLR`` from here, so that a run's updates do not depend
on the engine it runs on. :func:`minibatch_bounds` is how a step's batch splits into
``[optim] minibatches`` updates.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from grpo_trainer.config import GRPOConfig


def cosine_factor(update: int, total: int, warmup: int = 0) -> float:
    """LR multiplier: linear warm-up, then cosine from 1 to 0 over the remaining updates."""
    if update < warmup:
        return (update + 1) / warmup
    progress = min(1.0, (update - warmup) / max(1, total - warmup))
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def minibatch_bounds(n: int, parts: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` sample ranges splitting ``n`` samples in order into ``parts`` near-equal slices.

    The first ``n % parts`` slices hold one sample more; every sample is in exactly one.
    """
    size, extra = divmod(n, parts)
    bounds, lo = [], 0
    for i in range(parts):
        hi = lo + size + (i < extra)
        bounds.append((lo, hi))
        lo = hi
    return bounds


def lr_schedule(config: GRPOConfig) -> Callable[[int], float]:
    """The LR multiplier per optimizer update (``LambdaLR``'s function), the same for every backend."""
    optim = config.optim
    total = optim.total_steps * optim.updates_per_step
    if optim.schedule == "cosine":
        return lambda update: cosine_factor(update, total, optim.warmup_steps)
    return lambda update: 1.0


def adamw(config: GRPOConfig, module: torch.nn.Module) -> torch.optim.AdamW:
    """AdamW over the trainable parameters, with the run's lr, betas and weight decay."""
    optim = config.optim
    params = [p for p in module.parameters() if p.requires_grad]
    return torch.optim.AdamW(params, lr=optim.lr, betas=optim.betas, weight_decay=optim.weight_decay)


__all__ = ["adamw", "cosine_factor", "lr_schedule"]

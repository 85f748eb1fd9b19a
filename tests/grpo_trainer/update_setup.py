"""Updates on a tiny Qwen3-VL trainer whose random policy never succeeds: advantages assigned by the test."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from grpo_trainer.config import (
    EngineSettings,
    GRPOConfig,
    LoraSettings,
    ModelSettings,
    OptimSettings,
    RolloutSettings,
)
from grpo_trainer.objectives.advantage import group_advantages
from grpo_trainer.objectives.rewards import RewardConfig
from grpo_trainer.training.trainer import Trainer

# Small adapters on three of the decoder's layers kinds (attention and MLP).
LORA = LoraSettings(r=4, alpha=8, target_modules=("q_proj", "v_proj", "gate_proj"))


def vlm_config(policy: str = "tiny", backend: str = "torch", **model: Any) -> GRPOConfig:
    """Two members, one task, two env steps, fp32; ``model`` is the ``[model]`` section."""
    return GRPOConfig(
        policy=policy,
        model=ModelSettings(**model),
        rollout=RolloutSettings(group_size=2, tasks_per_step=1, max_new_tokens=8),
        reward=RewardConfig(max_steps=2),
        optim=OptimSettings(lr=1e-2, total_steps=2, updates_per_batch=1),
        engine=EngineSettings(backend=backend, zero_stage=3, precision="fp32", micro_batch_size=2),
    )


def signed_updates(trainer: Trainer, updates: int = 1) -> dict[str, Any]:
    """Rolls out one step and makes ``updates`` optimizer updates with member 0 the winner (+1) and
    member 1 the loser (-1); returns the batch (prompts, responses)."""
    groups = trainer.rollout()
    scored = [group_advantages(g, trainer.config.reward, trainer.config.advantage) for g in groups]
    signed = [
        dataclasses.replace(
            s, kept=True, advantages=[[1.0 - 2 * m] * e.length for m, e in enumerate(s.episodes)]
        )
        for s in scored
    ]
    batch = trainer._batch(signed)
    micro = trainer._micro_batches(batch)
    rounds = trainer.backend.agree(len(micro), "max")
    for _ in range(updates):
        trainer._update(micro, rounds)
    return batch


def logits(module: torch.nn.Module, inputs: dict[str, Any]) -> torch.Tensor:
    """The model's fp32 logits on ``inputs`` (no gradient)."""
    with torch.no_grad():
        return module(**inputs).logits.float()

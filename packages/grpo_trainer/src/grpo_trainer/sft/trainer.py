"""``grpo-train sft``: supervised fine-tuning on step-prefix samples, on the GRPO trainer's backends.

The loss is the mean negative log-likelihood of the target tokens of an update's samples
(token mean over the whole batch: every target token weighs the same, as HybridCUA's
loss over the final assistant turn); the prompt carries no loss. Everything around it is
the GRPO Trainer's: the backend (plain torch or DeepSpeed ZeRO, :mod:`grpo_trainer.training.backend`)
builds AdamW and the LR schedule from ``[sft]``'s lr, schedule and warm-up over the run's
updates; ``[model]`` applies LoRA and gradient checkpointing; checkpoints hold model,
optimizer, scheduler and the RNG streams (:mod:`grpo_trainer.training.checkpoints`), and the sample
order is a function of the seed and the epoch, so a killed run resumes at its last
checkpoint and repeats the following updates exactly; metrics go to ``metrics.jsonl`` and
TensorBoard. At the end the run is exported as a Hugging Face directory
(``<output_dir>/hf``), which ``hf:PATH`` loads in ``hybrid-agent eval`` and as
``grpo-train``'s starting policy.

Under N ranks every rank holds the whole dataset and takes every N-th sample of each
batch; the loss is scaled so that the ranks' averaged gradients are the gradient of the
whole batch's token mean.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from typing import Any

import torch

from grpo_trainer.config import GRPOConfig
from grpo_trainer.model.setup import prepare_policy
from grpo_trainer.sft.dataset import SFTDataset
from grpo_trainer.sft.settings import SFTSettings
from grpo_trainer.training.backend import make_backend
from grpo_trainer.training.checkpoints import (
    load_latest,
    restore_rng,
    rng_state,
    save_checkpoint,
    seed_everything,
)
from grpo_trainer.training.export import export_hf
from grpo_trainer.training.metrics import MetricsSink

HF_EXPORT = "hf"


def update_batches(samples: int, settings: SFTSettings, seed: int) -> list[list[int]]:
    """The sample indices of every optimizer update, in order: each epoch a fresh permutation in batches.

    The permutation of epoch ``e`` is drawn from a generator seeded ``seed + e``, so the order is a
    function of the config alone (a resumed run finds the same batches). An epoch's last batch
    may be smaller.
    """
    batches = []
    for epoch in range(settings.epochs):
        order = torch.randperm(samples, generator=torch.Generator().manual_seed(seed + epoch)).tolist()
        batches += [order[i : i + settings.batch_size] for i in range(0, samples, settings.batch_size)]
    return batches


def optimizer_config(config: GRPOConfig, updates: int) -> GRPOConfig:
    """``config`` with ``[optim]`` set from ``[sft]``: what the backend builds AdamW and the schedule from.

    One update per step over ``updates`` steps, the warm-up ``warmup_ratio`` of them (rounded).
    """
    sft = config.sft
    optim = dataclasses.replace(
        config.optim,
        lr=sft.lr,
        schedule=sft.schedule,
        warmup_steps=round(sft.warmup_ratio * updates),
        total_steps=max(updates, 1),
        updates_per_batch=1,
        minibatches=1,
    )
    return dataclasses.replace(config, optim=optim)


def nll_sum(logprobs: torch.Tensor) -> torch.Tensor:
    """The negative log-likelihood summed over the target tokens (``logprobs`` is 0 past each end)."""
    return -logprobs.sum()


class SFTTrainer:
    """Trains a policy on an :class:`SFTDataset` under a config's ``[sft]``, ``[model]`` and ``[engine]``."""

    def __init__(self, config: GRPOConfig, policy: Any, dataset: SFTDataset, run_dir: str | Path) -> None:
        """Applies ``[model]``, builds the backend over ``[sft]``'s schedule and resumes from ``run_dir``.

        Args:
            config: The run config (its ``[sft]`` section is the stage's).
            policy: The trainable ``hf:`` policy the dataset was encoded with.
            dataset: The samples.
            run_dir: Where checkpoints, ``metrics.jsonl``, ``tensorboard/`` and the export go.
        """
        self.config = config
        self.policy = policy
        self.dataset = dataset
        self.run_dir = Path(run_dir)
        self.batches = update_batches(len(dataset), config.sft, config.engine.seed)
        prepare_policy(policy, config)
        seed_everything(config.engine.seed)
        self.backend = make_backend(optimizer_config(config, len(self.batches)), policy.module)
        self.generator = torch.Generator().manual_seed(config.engine.seed + self.backend.rank)
        self.update = 0
        self.run_dir.mkdir(parents=True, exist_ok=True)
        state = load_latest(self.backend, self.run_dir / "checkpoints", config.to_dict())
        if state is not None:
            restore_rng(state["rng"], self.generator)
            self.update = state["updates"]
        self.metrics = MetricsSink(self.run_dir, self.backend.rank, resume_step=self.update)

    def train_update(self) -> dict[str, Any]:
        """One optimizer update over the next batch; returns (and logs) its metrics."""
        started = time.perf_counter()
        batch = self.batches[self.update]
        world, rank = self.backend.world_size, self.backend.rank
        tokens = sum(len(self.dataset.samples[i].response_ids) for i in batch)
        mine = batch[rank::world]
        micro = self.config.sft.micro_batch_size
        total = 0.0
        parts = [mine[i : i + micro] for i in range(0, len(mine), micro)] or [[]]
        for n, part in enumerate(parts):
            last = n == len(parts) - 1
            if not part:  # a rank without samples this update still joins the collective step
                loss = sum(p.sum() for p in self.policy.module.parameters() if p.requires_grad) * 0.0
            else:
                prompts = [self.dataset.prompt(i) for i in part]
                responses = [self.dataset.samples[i].response_ids for i in part]
                with self.backend.forward():
                    logprobs = self.policy.logprobs(prompts, responses, 1.0)
                loss = nll_sum(logprobs) * world / tokens
                total += float(loss.detach()) / world  # this rank's share of the token mean
            self.backend.backward(loss, last)
        if world > 1:  # each rank holds its share of the batch's token mean; the log shows the whole
            summed = torch.tensor([total])
            torch.distributed.all_reduce(summed)
            total = float(summed.item())
        grad_norm = self.backend.step()
        lr = self.backend.lr()
        self.update += 1
        metrics = {
            "step": self.update,
            "sft/loss": total,
            "sft/target_tokens": float(tokens),
            "train/grad_norm": grad_norm,
            "train/lr": lr,
            "time/update_s": time.perf_counter() - started,
        }
        self.metrics.write(metrics)
        if self.update % self.config.sft.save_every == 0 or self.update == len(self.batches):
            self.save()
        return metrics

    def train(self) -> list[dict[str, Any]]:
        """Runs the remaining updates, then writes the Hugging Face export (``[sft] export``)."""
        logs = [self.train_update() for _ in range(self.update, len(self.batches))]
        if self.config.sft.export and self.backend.rank == 0 and not (self.run_dir / HF_EXPORT).exists():
            self.export()
        self.metrics.close()
        return logs

    def export(self) -> Path:
        """The latest checkpoint as ``<run_dir>/hf`` (LoRA adapters merged), the directory ``hf:`` loads."""
        merge = self.config.model.lora is not None
        dtype = "bfloat16" if self.config.engine.precision == "bf16" else "float32"
        return export_hf(self.run_dir, self.run_dir / HF_EXPORT, merge_lora=merge, dtype=dtype)

    def save(self) -> Path:
        """The checkpoint of this update: backend state, the update counter and the RNG streams."""
        state = {
            "config": self.config.to_dict(),
            "step": self.update,
            "updates": self.update,
            "rng": rng_state(self.generator),
        }
        folder = self.run_dir / "checkpoints"
        return save_checkpoint(self.backend, folder, self.update, state, self.config.checkpoint.keep_last)


def total_updates(samples: int, settings: SFTSettings) -> int:
    """Optimizer updates of a run: ``epochs`` times the batches of one epoch."""
    return settings.epochs * math.ceil(samples / settings.batch_size)

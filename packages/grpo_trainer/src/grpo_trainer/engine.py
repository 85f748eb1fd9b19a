"""The training loop: rollouts -> advantages -> several clipped-surrogate updates; exact checkpoints.

One training step rolls out ``tasks_per_step`` groups, scores them, rebuilds every
kept sample's prompt from the episode record (and checks it against the ids the
policy saw), then runs ``updates_per_batch`` AdamW updates on the whole batch.
The backend is plain torch, or DeepSpeed (ZeRO stage and bf16 from the config;
gloo on CPU). A checkpoint holds model, optimizer, scheduler, every RNG stream and
the step counter, written atomically, so a run killed at any moment resumes from
its last checkpoint and reproduces the following steps exactly.
"""

from __future__ import annotations

import json
import math
import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from hybrid_agent.coords import CoordinateConfig, CoordinatePolicy
from hybrid_agent.runner import RunConfig

from grpo_trainer.advantage import GroupAdvantages, group_advantages
from grpo_trainer.config import GRPOConfig
from grpo_trainer.episode import Episode
from grpo_trainer.errors import CheckpointError, GRPOError
from grpo_trainer.loss import policy_loss
from grpo_trainer.policy import TrainablePolicy
from grpo_trainer.rollout import RolloutConfig, collect_group, rebuild_messages


class ReplayMismatch(GRPOError):
    """The rebuilt prompt differs from the one the policy saw at rollout time."""


def cosine_factor(update: int, total: int, warmup: int = 0) -> float:
    """LR multiplier: linear warm-up, then cosine from 1 to 0 over the remaining updates."""
    if update < warmup:
        return (update + 1) / warmup
    progress = min(1.0, (update - warmup) / max(1, total - warmup))
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def rollout_config(config: GRPOConfig) -> RolloutConfig:
    """The rollout settings of a run (context built as the evaluation runner builds it)."""
    context = RunConfig(policy="-", context=config.rollout.context).context_config()
    return RolloutConfig(
        group_size=config.rollout.group_size,
        temperature=config.rollout.temperature,
        context=context,
        coordinates=CoordinateConfig(policy=CoordinatePolicy(config.rollout.coordinates)),
    )


class Trainer:
    """GRPO over a group vector env with one trainable policy."""

    def __init__(
        self,
        config: GRPOConfig,
        policy: TrainablePolicy,
        venv: gym.vector.VectorEnv,
        run_dir: str | Path,
        reset_options: Callable[[int, int], dict[str, Any]] | None = None,
    ) -> None:
        """Sets up optimizer, schedule and RNGs; resumes from ``run_dir`` when it has a checkpoint.

        Args:
            config: The run configuration.
            policy: The policy to train (its ``module`` holds the parameters).
            venv: A group env of ``config.rollout.group_size`` members.
            run_dir: Where checkpoints and ``metrics.jsonl`` go.
            reset_options: ``(step, group) -> options`` added to each group's reset (labels, faults).
        """
        self.config = config
        self.policy = policy
        self.venv = venv
        self.run_dir = Path(run_dir)
        self.reset_options = reset_options or (lambda step, group: {})
        self.rollout_config = rollout_config(config)
        self.step = 0
        self.updates = 0
        _seed_everything(config.engine.seed)
        self.generator = torch.Generator().manual_seed(config.engine.seed)
        optim = config.optim
        params = [p for p in policy.module.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(
            params, lr=optim.lr, betas=optim.betas, weight_decay=optim.weight_decay
        )
        total = optim.total_steps * optim.updates_per_batch
        schedule = (
            (lambda u: cosine_factor(u, total, optim.warmup_steps))
            if optim.schedule == "cosine"
            else (lambda u: 1.0)
        )
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, schedule)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._resume()

    # --- one step ------------------------------------------------------------------------
    def rollout(self) -> list[list[Episode]]:
        """The groups of this step: task and seed follow from the step counter alone."""
        n = self.config.rollout.tasks_per_step
        groups = []
        for j in range(n):
            index = self.step * n + j
            task = self.config.tasks[index % len(self.config.tasks)]
            groups.append(
                collect_group(
                    self.venv,
                    self.policy,
                    task,
                    seed=self.config.engine.seed + index,
                    group=index,
                    config=self.rollout_config,
                    generator=self.generator,
                    policy_version=self.updates,
                    reset_options=self.reset_options(self.step, j),
                )
            )
        return groups

    def _batch(self, scored: list[GroupAdvantages]) -> dict[str, Any] | None:
        prompts, responses, old, advantages = [], [], [], []
        for group in scored:
            if not group.kept:
                continue
            for episode, per_step in zip(group.episodes, group.advantages, strict=True):
                for sample, advantage in zip(episode.samples, per_step, strict=True):
                    messages = rebuild_messages(episode, sample, self.rollout_config.context)
                    ids = self.policy.encode(messages)
                    if ids != sample.prompt_ids:
                        raise ReplayMismatch(
                            f"Step {sample.index} of {episode.task_id}#{episode.member}: the rebuilt "
                            "context differs from the one the policy saw."
                        )
                    prompts.append(ids)
                    responses.append(sample.response_ids)
                    old.append(sample.old_logprobs)
                    advantages.append(advantage)
        if not prompts:
            return None
        length = max(len(r) for r in responses)
        mask = torch.tensor([[1.0] * len(r) + [0.0] * (length - len(r)) for r in responses])
        return {
            "prompts": prompts,
            "responses": responses,
            "old": torch.tensor([o + [0.0] * (length - len(o)) for o in old]),
            "advantages": torch.tensor(advantages).unsqueeze(1).expand(-1, length),
            "mask": mask,
        }

    def _update(self, batch: dict[str, Any]) -> dict[str, float]:
        optim = self.config.optim
        autocast = self.config.engine.precision == "bf16"
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            logprobs = self.policy.logprobs(
                batch["prompts"], batch["responses"], self.config.rollout.temperature
            )
        loss, metrics = policy_loss(
            logprobs.float(), batch["old"], batch["advantages"], batch["mask"], optim.clip_eps, optim.kl_beta
        )
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        grad_norm = torch.nn.utils.clip_grad_norm_(params, optim.grad_clip)
        self.optimizer.step()
        self.scheduler.step()
        self.updates += 1
        return {**metrics, "train/loss": float(loss.detach()), "train/grad_norm": float(grad_norm)}

    def train_step(self) -> dict[str, Any]:
        """One rollout batch and its updates; returns (and logs) the step's metrics."""
        t0 = time.perf_counter()
        groups = self.rollout()
        t1 = time.perf_counter()
        scored = [group_advantages(g, self.config.reward, self.config.advantage) for g in groups]
        batch = self._batch(scored)
        updates = []
        if batch is not None:
            updates = [self._update(batch) for _ in range(self.config.optim.updates_per_batch)]
        t2 = time.perf_counter()
        metrics = _rollout_metrics(scored)
        if updates:
            metrics.update(updates[0])
            metrics["train/kl_last"] = updates[-1]["train/kl"]
        metrics.update(
            {
                "step": self.step,
                "time/rollout_s": t1 - t0,
                "time/update_s": t2 - t1,
                "lr": self.scheduler.get_last_lr()[0],
            }
        )
        self.step += 1
        with (self.run_dir / "metrics.jsonl").open("a") as log:
            log.write(json.dumps(metrics) + "\n")
        if self.step % self.config.engine.save_every == 0:
            self.save()
        return metrics

    def train(self) -> list[dict[str, Any]]:
        """Runs steps until ``optim.total_steps``."""
        return [self.train_step() for _ in range(self.step, self.config.optim.total_steps)]

    # --- checkpoints ---------------------------------------------------------------------
    def save(self) -> Path:
        """Writes ``checkpoints/step_N.pt`` atomically and points ``latest`` at it."""
        folder = self.run_dir / "checkpoints"
        folder.mkdir(exist_ok=True)
        path = folder / f"step_{self.step}.pt"
        state = {
            "config": self.config.to_dict(),
            "step": self.step,
            "updates": self.updates,
            "model": self.policy.module.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "rng": {
                "generator": self.generator.get_state(),
                "torch": torch.get_rng_state(),
                "numpy": np.random.get_state(),
                "python": random.getstate(),
            },
        }
        tmp = path.with_suffix(".tmp")
        torch.save(state, tmp)
        os.replace(tmp, path)
        latest = folder / "latest.tmp"
        latest.write_text(path.name)
        os.replace(latest, folder / "latest")
        return path

    def _resume(self) -> None:
        pointer = self.run_dir / "checkpoints" / "latest"
        if not pointer.exists():
            return
        path = pointer.parent / pointer.read_text().strip()
        if not path.exists():
            raise CheckpointError(f"{pointer} names {path.name}, which is missing.")
        state = torch.load(path, weights_only=False)
        if state["config"] != self.config.to_dict():
            raise CheckpointError(f"{path} was written by another configuration; use a new run_dir.")
        self.policy.module.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.generator.set_state(state["rng"]["generator"])
        torch.set_rng_state(state["rng"]["torch"])
        np.random.set_state(state["rng"]["numpy"])
        random.setstate(state["rng"]["python"])
        self.step, self.updates = state["step"], state["updates"]


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _rollout_metrics(scored: list[GroupAdvantages]) -> dict[str, float]:
    episodes = [e for g in scored for e in g.episodes]
    returns = [r for g in scored for r in g.returns]
    adopted = [any(s.is_mcp and s.exec_ok for s in e.samples) for e in episodes]
    return {
        "rollout/reward": float(np.mean(returns)) if returns else float("nan"),
        "rollout/success": float(np.mean([g.success_rate for g in scored])),
        "rollout/adoption": float(np.mean(adopted)) if adopted else float("nan"),
        "rollout/crashed": float(sum(g.crashed for g in scored)),
        "rollout/groups_kept": float(sum(g.kept for g in scored)),
        "rollout/samples": float(sum(e.length for g in scored if g.kept for e in g.episodes)),
    }

"""How the Trainer's updates reach the parameters: plain torch or DeepSpeed, behind one interface.

The loop (rollout -> advantages -> updates -> checkpoint) lives once, in
:class:`~grpo_trainer.training.trainer.Trainer`; a backend owns only what differs between
engines: where the full weights are during generation, how a micro-batch's loss is
back-propagated and the update applied (grad clip, cosine LR), what a checkpoint
of model + optimizer + scheduler looks like on disk, and how ranks agree on a
number. :class:`TorchBackend` is one process; ``DeepSpeedBackend``
(:mod:`grpo_trainer.training.backend_deepspeed`) is ZeRO 0-3 over 1..N ranks.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Protocol

import torch

from grpo_trainer.config import GRPOConfig
from grpo_trainer.errors import CheckpointError
from grpo_trainer.model.setup import load_trainable_state_dict, trainable_state_dict
from grpo_trainer.training.optim import adamw, lr_schedule


class Backend(Protocol):
    """What the Trainer asks of an engine.

    Attributes:
        rank: This process's data-parallel rank (0 on one process).
        world_size: How many ranks train together; each rolls out its own groups.
    """

    rank: int
    world_size: int

    def generation(self) -> contextlib.AbstractContextManager[None]:
        """A context in which the policy's full weights are on this rank, for local sampling."""
        ...

    def forward(self) -> contextlib.AbstractContextManager[None]:
        """A context for the differentiable forward (bf16 autocast where the engine wants it)."""
        ...

    def backward(self, loss: torch.Tensor, last: bool) -> None:
        """Accumulates ``loss``'s gradient; ``last`` marks the update's final micro-batch."""
        ...

    def step(self) -> float:
        """Clips, applies the update and advances the LR schedule; returns the pre-clip grad norm."""
        ...

    def lr(self) -> float:
        """The learning rate the next update uses."""
        ...

    def agree(self, value: int, op: str) -> int:
        """``value`` reduced over every rank with ``op`` (``min`` or ``max``)."""
        ...

    def save(self, folder: Path, step: int, state: dict[str, Any]) -> str:
        """Writes the checkpoint of ``step`` (with this rank's trainer ``state``); returns its name.

        Every rank calls it; when it returns on any rank, the checkpoint is complete on all.
        """
        ...

    def load(self, folder: Path, name: str) -> dict[str, Any]:
        """Restores model, optimizer and scheduler from ``name``; returns this rank's trainer state."""
        ...


class TorchBackend:
    """One process, plain torch: AdamW, LambdaLR cosine, ``clip_grad_norm_``, bf16 autocast.

    A checkpoint is one file ``step_N.pt`` written atomically (tmp + rename); it holds the
    trainable weights (under LoRA the adapters alone, see :mod:`grpo_trainer.model.setup`).
    """

    rank = 0
    world_size = 1

    def __init__(self, config: GRPOConfig, module: torch.nn.Module) -> None:
        """Builds optimizer and schedule over ``module``'s trainable parameters."""
        self.config = config
        self.module = module
        self.optimizer = adamw(config, module)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lr_schedule(config))

    def generation(self) -> contextlib.AbstractContextManager[None]:
        """Nothing to gather (the weights are whole here); the same autocast as the forward.

        Sampling in the precision the update computes in keeps the rollout-time
        log-probs those of the policy being updated: the first update's ratios are 1.
        """
        return self.forward()

    def forward(self) -> contextlib.AbstractContextManager[None]:
        """bf16 autocast on the module's device when the run's precision is bf16 (master weights fp32)."""
        enabled = self.config.engine.precision == "bf16"
        device = next(self.module.parameters()).device.type
        return torch.autocast(device, dtype=torch.bfloat16, enabled=enabled)

    def backward(self, loss: torch.Tensor, last: bool) -> None:
        """Plain ``loss.backward()`` (gradients add up over micro-batches)."""
        loss.backward()

    def step(self) -> float:
        """Clips to ``optim.grad_clip``, steps AdamW and the schedule, clears the gradients."""
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        grad_norm = torch.nn.utils.clip_grad_norm_(params, self.config.optim.grad_clip)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return float(grad_norm)

    def lr(self) -> float:
        """The scheduler's current LR."""
        return float(self.scheduler.get_last_lr()[0])

    def agree(self, value: int, op: str) -> int:
        """One rank: the value itself."""
        return value

    def save(self, folder: Path, step: int, state: dict[str, Any]) -> str:
        """``step_N.pt``: trainer state + trainable weights + optimizer + scheduler, renamed into place."""
        path = folder / f"step_{step}.pt"
        full = {
            **state,
            "model": trainable_state_dict(self.module),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
        }
        tmp = path.with_suffix(".tmp")
        torch.save(full, tmp)
        os.replace(tmp, path)
        return path.name

    def load(self, folder: Path, name: str) -> dict[str, Any]:
        """Loads ``name`` into model, optimizer and scheduler; returns the rest."""
        path = folder / name
        if not path.is_file():
            raise CheckpointError(f"{folder / 'latest'} names {name}, which is missing.")
        state = torch.load(path, weights_only=False)
        load_trainable_state_dict(self.module, state.pop("model"))
        self.optimizer.load_state_dict(state.pop("optimizer"))
        self.scheduler.load_state_dict(state.pop("scheduler"))
        return state


def make_backend(config: GRPOConfig, module: torch.nn.Module) -> Backend:
    """The backend ``config.engine.backend`` names (DeepSpeed is imported only when chosen)."""
    if config.engine.backend == "deepspeed":
        from grpo_trainer.training.backend_deepspeed import DeepSpeedBackend

        return DeepSpeedBackend(config, module)
    return TorchBackend(config, module)

"""DeepSpeed ZeRO (stage from the config, ZeRO-3 by default) with bf16, the client AdamW and cosine LR.

Run under the launcher, one process per GPU (or per CPU rank with ``DS_ACCELERATOR=cpu``,
where the comm backend is gloo)::

    deepspeed --num_gpus 8 --module grpo_trainer.cli --config run.toml
    deepspeed --hostfile hosts --num_nodes 2 --num_gpus 8 --module grpo_trainer.cli --config run.toml

(``hosts`` has one ``HOSTNAME slots=8`` line per node, reachable by password-less ssh.)
Started without a launcher, the backend sets up a one-rank group on 127.0.0.1 itself.

The model is built normally on every rank and handed to ``deepspeed.initialize``,
which partitions it (building it under ``deepspeed.zero.Init`` breaks transformers'
weight init). The optimizer is ``torch.optim.AdamW`` (``zero_allow_untested_optimizer``)
and the schedule the same ``LambdaLR`` as the torch backend, stepped by DeepSpeed at
each update; grad clipping is DeepSpeed's ``gradient_clipping``.

Generation: every rank samples its own groups, with different lengths, so a ZeRO-3
forward that all-gathers each layer on demand would deadlock (or need
``synced_gpus``, which gathers the whole model once per generated token).
:meth:`DeepSpeedBackend.generation` instead gathers every parameter once per rollout
batch and takes DeepSpeed's per-module hooks off while the policy samples, then
re-partitions. Cost: one all-gather of the model per training step, and the full
model in the working precision on each rank during rollouts (8B in bf16: 16 GB per GPU).

Checkpoints: ``engine.save_checkpoint`` (model shards, fp32 master weights,
optimizer, scheduler per rank) into ``checkpoints/step_N/``, plus each rank's trainer
state (RNG streams, counters) as ``trainer_rank{R}.pt``; the Trainer's ``latest``
pointer moves only after every rank finished, so a kill mid-save resumes from the
previous checkpoint. Frozen weights (LoRA's base) are left out of the checkpoint and
come back from the ``hf:PATH`` the run starts from.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from grpo_trainer.config import GRPOConfig
from grpo_trainer.errors import CheckpointError
from grpo_trainer.model.setup import has_frozen_weights
from grpo_trainer.training.optim import adamw, lr_schedule


def deepspeed_config(config: GRPOConfig) -> dict[str, Any]:
    """The DeepSpeed JSON config of a run.

    The Trainer feeds whole micro-batches of its own, so the batch keys only satisfy
    DeepSpeed's checks (one micro-batch per ``engine.backward``); accumulation over
    micro-batches is driven explicitly with ``set_gradient_accumulation_boundary``.
    """
    return {
        "train_micro_batch_size_per_gpu": 1,
        "gradient_accumulation_steps": 1,
        "gradient_clipping": config.optim.grad_clip,
        "bf16": {"enabled": config.engine.precision == "bf16"},
        "zero_optimization": {
            "stage": config.engine.zero_stage,
            "contiguous_gradients": True,
            "overlap_comm": False,
            "stage3_gather_16bit_weights_on_model_save": True,
        },
        "zero_allow_untested_optimizer": True,
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _init_distributed() -> None:
    """Joins the launcher's process group, or makes a one-rank group when there is no launcher."""
    import deepspeed

    if torch.distributed.is_initialized():
        return
    if "RANK" not in os.environ:  # not under deepspeed/torchrun: a single local rank
        os.environ.update({"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1"})
        os.environ.setdefault("MASTER_PORT", str(_free_port()))
    from deepspeed.accelerator import get_accelerator

    deepspeed.init_distributed(dist_backend=get_accelerator().communication_backend_name())


class DeepSpeedBackend:
    """ZeRO over ``torch.distributed``'s world; see the module docstring for launch and costs."""

    def __init__(self, config: GRPOConfig, module: torch.nn.Module) -> None:
        """Initialises the process group (if needed) and the DeepSpeed engine over ``module``."""
        import deepspeed

        _init_distributed()
        self.config = config
        self.rank = torch.distributed.get_rank()
        self.world_size = torch.distributed.get_world_size()
        schedule = lr_schedule(config)
        self.engine, _, _, self.scheduler = deepspeed.initialize(
            model=module,
            optimizer=adamw(config, module),
            lr_scheduler=lambda optimizer: torch.optim.lr_scheduler.LambdaLR(optimizer, schedule),
            config=deepspeed_config(config),
        )
        self.module = module
        self.frozen = has_frozen_weights(module)

    @contextlib.contextmanager
    def generation(self) -> Iterator[None]:
        """Full weights on this rank, DeepSpeed's gather/release hooks off, for the rollout."""
        if self.config.engine.zero_stage < 3:
            yield
            return
        import deepspeed

        offload = self.engine.optimizer.parameter_offload
        offload._remove_module_hooks()
        offload.forward_hooks, offload.backward_hooks = [], []
        try:
            with deepspeed.zero.GatheredParameters(list(self.module.parameters())), torch.no_grad():
                yield
        finally:
            offload.setup_zero_stage3_hooks()

    @contextlib.contextmanager
    def forward(self) -> Iterator[None]:
        """Opens a micro-batch the way ``engine.forward`` would; no autocast (bf16 weights already).

        The policy runs its module (or submodules) directly, not through ``engine(...)``, so
        the ZeRO optimizer's micro-step bookkeeping that ``engine.forward`` does is done
        here: without it every backward overwrites the previous micro-batch's gradients.
        """
        clear = getattr(self.engine.optimizer, "clear_backward_seen_flag", None)
        if clear is not None:
            clear()
        yield

    def backward(self, loss: torch.Tensor, last: bool) -> None:
        """``engine.backward`` without DeepSpeed's 1/accumulation scaling (the Trainer weights losses)."""
        self.engine.set_gradient_accumulation_boundary(last)
        self.engine.backward(loss, scale_wrt_gas=False)

    def step(self) -> float:
        """DeepSpeed's step: reduce, clip, AdamW, LR schedule; returns the global grad norm."""
        self.engine.step()
        norm = self.engine.get_global_grad_norm()
        return float(norm) if norm is not None else float("nan")

    def lr(self) -> float:
        """The scheduler's current LR."""
        return float(self.scheduler.get_last_lr()[0])

    def agree(self, value: int, op: str) -> int:
        """All-reduce of one integer over the ranks."""
        reduce_op = torch.distributed.ReduceOp.MIN if op == "min" else torch.distributed.ReduceOp.MAX
        tensor = torch.tensor([value], dtype=torch.int64)
        torch.distributed.all_reduce(tensor, op=reduce_op)
        return int(tensor.item())

    def save(self, folder: Path, step: int, state: dict[str, Any]) -> str:
        """``step_N/``: DeepSpeed's checkpoint plus ``trainer_rank{R}.pt``; returns when all ranks wrote."""
        name = f"step_{step}"
        self.engine.save_checkpoint(
            str(folder), tag=name, save_latest=False, exclude_frozen_parameters=self.frozen
        )
        path = folder / name / f"trainer_rank{self.rank}.pt"
        tmp = path.with_suffix(".tmp")
        torch.save(state, tmp)
        os.replace(tmp, path)
        torch.distributed.barrier()
        return name

    def load(self, folder: Path, name: str) -> dict[str, Any]:
        """Loads DeepSpeed's checkpoint ``name`` and this rank's trainer state."""
        path = folder / name / f"trainer_rank{self.rank}.pt"
        if not path.is_file():
            raise CheckpointError(
                f"{folder / name} has no {path.name}: it was written by another world size "
                "(resume with the same number of ranks) or is partial."
            )
        # A checkpoint without the frozen weights is partial by design; the module keeps its own.
        loaded, _ = self.engine.load_checkpoint(str(folder), tag=name, load_module_strict=not self.frozen)
        if loaded is None:
            raise CheckpointError(f"DeepSpeed could not load {folder / name}.")
        return dict(torch.load(path, weights_only=False))

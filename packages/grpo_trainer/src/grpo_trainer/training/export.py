"""``grpo-train export``: a training checkpoint as a Hugging Face checkpoint directory.

The export rebuilds the run's model from its config (the ``hf:PATH`` it started from,
with its ``[model] lora`` adapters), loads the checkpoint's trained weights (torch's
``step_N.pt``; DeepSpeed's fp32 master weights through ``zero_to_fp32``, so no process
group and no GPU are needed), and saves with ``save_pretrained`` beside the run's
processor (tokenizer, image processor, chat template):

- full fine-tuning: the whole model, which ``hf:OUT`` loads in ``hybrid-agent`` and in
  ``grpo-train`` alike;
- LoRA with ``merge_lora``: the adapters folded into the base weights, the same kind of
  directory;
- LoRA without it: PEFT's adapter files alone (``adapter_config.json``,
  ``adapter_model.safetensors``), for ``PeftModel.from_pretrained(base, OUT)``.

Everything is written into a temporary directory beside ``OUT`` and renamed to ``OUT`` at
the end, so ``OUT`` is either absent or complete. Memory: the whole model in fp32 on the
CPU (8B: 32 GB), then cast to ``dtype``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from grpo_trainer.config import GRPOConfig
from grpo_trainer.errors import CheckpointError, ConfigError
from grpo_trainer.model.setup import load_trainable_state_dict, prepare_policy
from grpo_trainer.training.checkpoints import resolve_checkpoint

DTYPES = ("bfloat16", "float16", "float32")


def read_checkpoint(folder: Path, name: str) -> tuple[GRPOConfig, dict[str, torch.Tensor]]:
    """The run config and the trainable weights (fp32 on the CPU) of checkpoint ``folder/name``."""
    if name.endswith(".pt"):
        state = torch.load(folder / name, map_location="cpu", weights_only=False)
        return GRPOConfig.from_dict(state["config"]), state["model"]
    trainer_state = torch.load(folder / name / "trainer_rank0.pt", weights_only=False)
    config = GRPOConfig.from_dict(trainer_state["config"])
    if config.engine.zero_stage == 0:  # no ZeRO partitions: the module state is whole in one file
        module = torch.load(folder / name / "mp_rank_00_model_states.pt", weights_only=False)["module"]
        return config, {k: v.float() for k, v in module.items()}
    from deepspeed.utils.zero_to_fp32 import get_fp32_state_dict_from_zero_checkpoint

    weights = get_fp32_state_dict_from_zero_checkpoint(str(folder), tag=name, exclude_frozen_parameters=True)
    return config, dict(weights)


def export_hf(
    checkpoint: str | Path, out: str | Path, merge_lora: bool = False, dtype: str = "bfloat16"
) -> Path:
    """Writes checkpoint ``checkpoint``'s trained model to ``out`` as a Hugging Face directory.

    Args:
        checkpoint: A run's ``output_dir`` or ``checkpoints/`` folder (its ``latest``), or one
            ``step_N``/``step_N.pt``.
        out: The directory to create (it must not exist).
        merge_lora: Fold LoRA adapters into the base weights (a plain ``hf:`` checkpoint);
            without it a LoRA run exports its adapters alone.
        dtype: The saved weights' dtype (``bfloat16``, ``float32``, ...).

    Raises:
        ConfigError: ``out`` exists, the run is not an ``hf:`` run, or ``merge_lora`` without LoRA.
        CheckpointError: ``checkpoint`` is not a complete checkpoint of its config's model.
    """
    out = Path(out)
    if dtype not in DTYPES:
        raise ConfigError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}.")
    if out.exists():
        raise ConfigError(f"{out} exists: export writes a new directory, choose another --out.")
    config, weights = read_checkpoint(*resolve_checkpoint(Path(checkpoint)))
    if not config.policy.startswith("hf:"):
        raise ConfigError(
            f"Only hf:PATH runs export to a Hugging Face directory; this one is {config.policy!r}."
        )
    if merge_lora and config.model.lora is None:
        raise ConfigError("--merge-lora: this run fine-tuned every weight (no [model] lora); leave it out.")
    policy = _trained_policy(config, weights)
    model = policy.module.merge_and_unload() if merge_lora else policy.module
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        model.to(getattr(torch, dtype)).save_pretrained(tmp)
        policy.processor.save_pretrained(tmp)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _trained_policy(config: GRPOConfig, weights: dict[str, torch.Tensor]) -> Any:
    """The run's ``hf:`` policy in fp32 on the CPU with ``[model]`` applied and ``weights`` loaded."""
    from grpo_trainer.model.hf_policy import HFTrainablePolicy

    policy = HFTrainablePolicy.from_pretrained(config.policy[3:], device="cpu", dtype="float32")
    prepare_policy(policy, config)
    try:
        load_trainable_state_dict(policy.module, weights)
    except CheckpointError as exc:
        raise CheckpointError(f"{exc} The base {config.policy} may have changed since training.") from exc
    policy.module.eval()
    return policy


def main(argv: Sequence[str] | None = None) -> int:
    """``grpo-train export --checkpoint DIR --out DIR [--merge-lora] [--dtype D]``."""
    parser = argparse.ArgumentParser(prog="grpo-train export", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--checkpoint", required=True, help="run output_dir, its checkpoints/, or one step_N")
    parser.add_argument("--out", required=True, help="the Hugging Face directory to create")
    parser.add_argument("--merge-lora", action="store_true", help="fold LoRA adapters into the base weights")
    parser.add_argument("--dtype", default="bfloat16", choices=DTYPES, help="dtype of the saved weights")
    args = parser.parse_args(argv)
    out = export_hf(args.checkpoint, args.out, merge_lora=args.merge_lora, dtype=args.dtype)
    print(f"exported {args.checkpoint} to {out}")
    return 0

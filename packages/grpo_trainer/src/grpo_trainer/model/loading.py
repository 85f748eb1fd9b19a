"""The trainable policy a config names, built in one place for ``grpo-train`` and ``grpo-train sft``.

Apart from :mod:`grpo_trainer.cli` so that the SFT command, which the CLI dispatches to,
builds its policy without importing the CLI back.
"""

from __future__ import annotations

import os

from grpo_trainer.config import GRPOConfig
from grpo_trainer.errors import ConfigError
from grpo_trainer.model.policy import TrainablePolicy


def build_policy(config: GRPOConfig) -> TrainablePolicy:
    """The policy a config names: ``tiny`` (in-code, over the toy env's menu) or ``hf:PATH``.

    An ``hf:`` checkpoint loads in fp32 for the torch backend (bf16 comes from autocast)
    and in bf16 under DeepSpeed bf16; on the rank's GPU when there is one; it samples
    within ``[rollout]``'s ``max_new_tokens`` and ``max_prompt_tokens`` and scores micro-batches
    laid out as ``[optim] packing`` says.
    """
    if config.policy == "tiny":
        from grpo_trainer.model.tiny import TinyPolicy
        from grpo_trainer.model.toy_menu import MENU

        return TinyPolicy(MENU, seed=config.engine.seed)
    if config.policy.startswith("hf:") and len(config.policy) > 3:
        import torch

        from grpo_trainer.model.hf_policy import HFTrainablePolicy

        engine = config.engine
        bf16 = engine.backend == "deepspeed" and engine.precision == "bf16"
        device = f"cuda:{os.environ.get('LOCAL_RANK', '0')}" if torch.cuda.is_available() else "cpu"
        return HFTrainablePolicy.from_pretrained(
            config.policy[3:],
            device=device,
            dtype="bfloat16" if bf16 else "float32",
            max_new_tokens=config.rollout.max_new_tokens,
            max_prompt_tokens=config.rollout.max_prompt_tokens,
            packing=config.optim.packing,
            stop_strings=config.agent.make_adapter().stop,
        )
    raise ConfigError(
        f"policy {config.policy!r} is not trainable: use 'tiny' or 'hf:PATH' (a local checkpoint)."
    )

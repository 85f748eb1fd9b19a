"""What ``[model]`` does to a policy's module, and which of its weights a checkpoint holds.

:func:`prepare_policy` runs once, before a backend wraps the module: it turns on gradient
checkpointing (non-reentrant ``torch.utils.checkpoint`` per decoder layer; transformers
also makes the input embeddings' output require grad, which frozen embeddings under LoRA
need for the gradient to reach the adapters through a checkpointed layer), then wraps the
module in PEFT LoRA adapters, which freezes every base weight. There is no second,
reference copy of the weights to keep: the KL term's anchor is the rollout-time log-probs
stored with the samples (:mod:`grpo_trainer.objectives.loss`). Should a reference-model KL be wanted,
the LoRA base is that model for free (PEFT's ``disable_adapter()`` context).

A checkpoint holds the trainable weights only (:func:`trainable_state_dict`): under LoRA
that is the adapters, a few MB where the base is GB, and the base comes back from the
``hf:PATH`` checkpoint the run starts from; under full fine-tuning it is the whole state.
"""

from __future__ import annotations

from typing import Any

import torch

from grpo_trainer.config import GRPOConfig
from grpo_trainer.errors import CheckpointError, ConfigError


def prepare_policy(policy: Any, config: GRPOConfig) -> None:
    """Applies ``config.model`` to ``policy.module`` in place: checkpointing, then LoRA adapters.

    Only ``transformers`` models take either; an in-code policy with ``lora`` set or
    ``gradient_checkpointing = true`` is a :class:`~grpo_trainer.errors.ConfigError`.
    """
    settings = config.model
    checkpointing = settings.checkpointing(config.policy)
    if not (checkpointing or settings.lora):
        return
    from transformers import PreTrainedModel

    module = policy.module
    if not isinstance(module, PreTrainedModel):
        raise ConfigError(
            f"[model] lora and gradient_checkpointing need an hf: policy (a transformers model); "
            f"this policy's module is a {type(module).__name__}: unset them."
        )
    if checkpointing:
        enable_checkpointing(module)
    if settings.lora:
        from peft import LoraConfig, get_peft_model

        lora = settings.lora
        adapters = LoraConfig(
            r=lora.r,
            lora_alpha=lora.alpha,
            lora_dropout=lora.dropout,
            target_modules=list(lora.target_modules),
        )
        policy.module = get_peft_model(module, adapters)


def enable_checkpointing(module: Any) -> None:
    """Non-reentrant checkpointing of each decoder layer, by the name ``module``'s transformers has.

    transformers 5.23 renamed ``gradient_checkpointing_enable`` to
    ``activation_checkpointing_enable``; older releases (the GPU image's 5.17, and every
    vLLM up to 0.33 pins transformers below 5.21) have only the first.
    """
    kwargs = {"use_reentrant": False}
    if hasattr(module, "activation_checkpointing_enable"):
        module.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        module.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def has_frozen_weights(module: torch.nn.Module) -> bool:
    """Whether some parameter of ``module`` is frozen (LoRA's base), so checkpoints leave it out."""
    return any(not p.requires_grad for p in module.parameters())


def _frozen_names(module: torch.nn.Module) -> set[str]:
    # Tied weights appear under every name in a state dict, so every name of a frozen tensor counts.
    return {n for n, p in module.named_parameters(remove_duplicate=False) if not p.requires_grad}


def trainable_state_dict(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """``module.state_dict()`` without its frozen parameters (under full fine-tuning: all of it)."""
    frozen = _frozen_names(module)
    return {k: v for k, v in module.state_dict().items() if k not in frozen}


def load_trainable_state_dict(module: torch.nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Loads what :func:`trainable_state_dict` saved; anything else missing or extra raises.

    Raises:
        CheckpointError: ``state`` lacks a trainable weight or has one ``module`` does not
            (a checkpoint of another ``[model]`` setting).
    """
    missing, unexpected = module.load_state_dict(state, strict=False)
    missing = sorted(set(missing) - _frozen_names(module))
    if missing or unexpected:
        raise CheckpointError(
            f"The checkpoint does not fit the model: missing {missing[:3]}, unexpected {unexpected[:3]} "
            "(written with another [model] lora setting?)."
        )

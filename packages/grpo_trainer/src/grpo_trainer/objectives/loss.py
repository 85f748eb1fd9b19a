"""The policy loss: PPO-style clipped surrogate plus a k3 KL to the rollout-time policy.

All functions are pure tensor maps over ``(B, L)`` response tokens with a ``(B, L)``
mask (1 on response tokens). The KL anchor is the policy that generated the
samples (``old_logprobs``), as in the study, not a frozen initial model: it bounds
how far the several updates on one rollout batch may move.

When another engine sampled the tokens (vLLM), its log-probabilities differ from the
trainer's for the same weights (kernels, precision): :func:`logprob_gap` measures that
gap and :func:`truncated_is_weights` is the truncated importance-sampling correction
(TRL's ``vllm_importance_sampling_cap``, verl's TIS) that reweights each token's
surrogate by ``min(exp(logp_train_old - logp_engine), cap)``.
"""

from __future__ import annotations

import torch


def k3_kl(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Schulman's k3 estimator of KL(pi || ref) per token: ``exp(d) - d - 1``, ``d = ref - logp``.

    Non-negative, unbiased, low variance; exactly 0 where the two agree.
    """
    d = ref_logprobs - logprobs
    return torch.exp(d) - d - 1.0


def clipped_surrogate(
    logprobs: torch.Tensor, old_logprobs: torch.Tensor, advantages: torch.Tensor, clip_eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token ``-min(r A, clip(r, 1-eps, 1+eps) A)`` with ``r = exp(logp - old)``.

    Returns:
        The per-token loss ``(B, L)`` and a ``(B, L)`` bool tensor of where clipping bound.
    """
    ratio = torch.exp(logprobs - old_logprobs)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantages
    return -torch.minimum(unclipped, clipped), clipped < unclipped


def policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_eps: float = 0.2,
    kl_beta: float = 0.02,
    token_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Token-mean of surrogate (times ``token_weights``) + ``kl_beta`` * k3 KL over the masked tokens.

    Args:
        logprobs: ``(B, L)`` current log-probabilities of the response tokens.
        old_logprobs: ``(B, L)`` rollout-time log-probabilities (also the KL anchor).
        advantages: ``(B, L)`` per-token advantages (a step's advantage on all its tokens).
        mask: ``(B, L)`` 1.0 on response tokens, 0.0 on padding.
        clip_eps: The clip range epsilon.
        kl_beta: The KL weight.
        token_weights: ``(B, L)`` weights of each token's surrogate, no gradient (the
            :func:`truncated_is_weights` correction); ``None``: 1. The KL term is not weighted,
            as in TRL and verl.

    Returns:
        The scalar loss and metrics ``train/pg_loss``, ``train/kl``, ``train/clip_frac``,
        ``train/tokens`` and the importance ratio's ``train/ratio_mean``, ``train/ratio_min``,
        ``train/ratio_max`` over the masked tokens (1 without any).
    """
    surrogate, clipped = clipped_surrogate(logprobs, old_logprobs, advantages, clip_eps)
    if token_weights is not None:
        surrogate = surrogate * token_weights.detach()
    kl = k3_kl(logprobs, old_logprobs)
    tokens = mask.sum().clamp(min=1.0)
    pg = (surrogate * mask).sum() / tokens
    kl_mean = (kl * mask).sum() / tokens
    loss = pg + kl_beta * kl_mean
    ratio = torch.exp(logprobs - old_logprobs).detach()[mask > 0]
    if ratio.numel() == 0:
        ratio = torch.ones(1)
    metrics = {
        "train/pg_loss": float(pg.detach()),
        "train/kl": float(kl_mean.detach()),
        "train/clip_frac": float((clipped.float() * mask).sum() / tokens),
        "train/tokens": float(mask.sum()),
        "train/ratio_mean": float(ratio.mean()),
        "train/ratio_min": float(ratio.min()),
        "train/ratio_max": float(ratio.max()),
    }
    return loss, metrics


def truncated_is_weights(
    train_logprobs: torch.Tensor, engine_logprobs: torch.Tensor, mask: torch.Tensor, cap: float
) -> torch.Tensor:
    """``(B, L)`` truncated importance weights ``min(exp(train - engine), cap)``, 0 off the mask.

    Args:
        train_logprobs: ``(B, L)`` the trainer's log-probs of the sampled tokens under the
            rollout-time weights (before this batch's first update).
        engine_logprobs: ``(B, L)`` the log-probs the sampling engine reported for them.
        mask: ``(B, L)`` 1.0 on response tokens.
        cap: The truncation (TRL's default ``vllm_importance_sampling_cap`` is 2.0).
    """
    ratio = torch.exp(train_logprobs.detach() - engine_logprobs)
    return torch.clamp(ratio, max=cap) * mask


def logprob_gap(
    train_logprobs: torch.Tensor, engine_logprobs: torch.Tensor, mask: torch.Tensor
) -> dict[str, float]:
    """How far the engine's sampled-token log-probs are from the trainer's, over the masked tokens.

    Returns:
        ``offpolicy/logprob_diff_mean`` and ``_max`` (absolute differences) and the importance
        ratio ``exp(train - engine)``'s ``offpolicy/ratio_mean``, ``_min``, ``_max``
        (all 0, resp. 1, without tokens).
    """
    keep = mask > 0
    diff = (train_logprobs.detach() - engine_logprobs)[keep]
    if diff.numel() == 0:
        diff = torch.zeros(1)
    ratio = torch.exp(diff)
    return {
        "offpolicy/logprob_diff_mean": float(diff.abs().mean()),
        "offpolicy/logprob_diff_max": float(diff.abs().max()),
        "offpolicy/ratio_mean": float(ratio.mean()),
        "offpolicy/ratio_min": float(ratio.min()),
        "offpolicy/ratio_max": float(ratio.max()),
    }

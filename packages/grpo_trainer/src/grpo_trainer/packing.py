"""Micro-batches sized by tokens, not samples: long VLM contexts next to short ones.

A multi-turn desktop rollout mixes prompts of a few hundred tokens with window-4 contexts
of 8K+ vision tokens. A fixed number of samples per micro-batch either wastes the GPU on
short ones or runs out of memory on long ones, and with left padding a micro-batch costs
``rows x longest`` tokens, not the sum. :func:`token_micro_batches` sorts the samples by
length (longest first) and fills each micro-batch while its padded size
``rows x longest`` stays within ``max_tokens``, so similar lengths share a micro-batch and
padding stays small. A sample longer than the budget gets a micro-batch of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["padded_tokens", "token_micro_batches"]


def padded_tokens(lengths: Sequence[int]) -> int:
    """The tokens a left-padded micro-batch of these sample lengths occupies: rows x longest."""
    return len(lengths) * max(lengths, default=0)


def token_micro_batches(lengths: Sequence[int], max_tokens: int) -> list[list[int]]:
    """Indices of ``lengths`` grouped so that each group's padded size is at most ``max_tokens``.

    Args:
        lengths: Tokens of each sample (prompt + response).
        max_tokens: The padded-token budget of one micro-batch (``[optim] micro_batch_tokens``).

    Returns:
        Groups of sample indices, longest samples first; within a group indices keep the
        sort order (ties in input order). Every index appears exactly once.

    Raises:
        ValueError: ``max_tokens`` is below 1.
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}.")
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    groups: list[list[int]] = []
    for i in order:
        # Sorted longest first, so a group's first sample is its longest.
        if groups and (len(groups[-1]) + 1) * lengths[groups[-1][0]] <= max_tokens:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups

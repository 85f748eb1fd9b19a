"""Micro-batches sized by tokens, not samples: long VLM contexts next to short ones.

A multi-turn desktop rollout mixes prompts of a few hundred tokens with window-4 contexts
of 8K+ vision tokens. A fixed number of samples per micro-batch either wastes the GPU on
short ones or runs out of memory on long ones, and with left padding a micro-batch costs
``rows x longest`` tokens, not the sum. :func:`token_micro_batches` sorts the samples by
length (longest first) and fills each micro-batch while its padded size
``rows x longest`` stays within ``max_tokens``, so similar lengths share a micro-batch and
padding stays small. A sample longer than the budget gets a micro-batch of its own.
Padding-free micro-batches (one row of samples back to back, :mod:`grpo_trainer.model.inputs`)
cost the sum of their lengths instead, and are budgeted so (``padded=False``).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["PACKINGS", "padded_tokens", "token_micro_batches"]

# How a micro-batch is laid out for the model ([optim] packing): left-padded rows, or one row of
# its samples back to back without padding (grpo_trainer.model.inputs.collate_packed).
PACKINGS = ("padded", "padding_free")


def padded_tokens(lengths: Sequence[int]) -> int:
    """The tokens a left-padded micro-batch of these sample lengths occupies: rows x longest."""
    return len(lengths) * max(lengths, default=0)


def token_micro_batches(lengths: Sequence[int], max_tokens: int, *, padded: bool = True) -> list[list[int]]:
    """Indices of ``lengths`` grouped so that each group's size is at most ``max_tokens``.

    Args:
        lengths: Tokens of each sample (prompt + response).
        max_tokens: The token budget of one micro-batch (``[optim] micro_batch_tokens``).
        padded: Budget the padded size (rows x longest); ``False``: the sum of the lengths, what
            a padding-free row holds (``[optim] packing = "padding_free"``).

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
    total = 0  # tokens of the last group's samples
    for i in order:
        # Sorted longest first, so a group's first sample is its longest.
        size = (len(groups[-1]) + 1) * lengths[groups[-1][0]] if padded and groups else total + lengths[i]
        if groups and size <= max_tokens:
            groups[-1].append(i)
            total += lengths[i]
        else:
            groups.append([i])
            total = lengths[i]
    return groups

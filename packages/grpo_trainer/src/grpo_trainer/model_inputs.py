"""A VLM's model inputs per sample: processed once per training batch, then collated.

One training step scores the same rollout batch several times: the trainer's old
log-probs, then ``updates_per_batch`` passes (each ``minibatches`` updates). Each call
used to re-run the processor (image resize, patching, normalisation) on every prompt.
:class:`InputCache` keeps each sample's processed inputs for the lifetime of one batch
(:meth:`InputCache.batch`): the processor runs once per sample per batch, and the
entries go when the batch ends, so memory does not grow across steps. Entries stay on
the host (a window of screenshots is hundreds of MB of fp32 patches per sample); only
the collated micro-batch moves to the device.

:func:`collate_padded` rebuilds exactly what the processor's own batched call gives
(left padding, images in sample order), so a cached micro-batch scores the same
log-probs as an uncached one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

__all__ = ["SEQUENCE_KEYS", "InputCache", "collate_padded"]

Inputs = dict[str, torch.Tensor]

# Processor outputs laid out ``(1, L)`` along the tokens, and the value that pads each; every other
# output (pixel_values, image_grid_thw ...) is per image and concatenates along its first dim.
SEQUENCE_KEYS = {"input_ids": None, "attention_mask": 0, "mm_token_type_ids": 0, "token_type_ids": 0}


class InputCache:
    """Processed inputs by sample identity while a batch is open; a pass-through otherwise.

    Keyed by ``id(prompt)``: the entry holds the prompt itself, so the id cannot be reused
    by another object while the batch is open.

    Attributes:
        hits: Lookups answered from the cache in the current (or last) batch.
        misses: Lookups that ran the processor in it.
    """

    def __init__(self) -> None:
        """An inactive cache (no batch open)."""
        self._entries: dict[int, tuple[object, Inputs]] | None = None
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        """Samples held now (0 outside a batch)."""
        return len(self._entries or {})

    @contextmanager
    def batch(self) -> Iterator[InputCache]:
        """Keeps processed inputs until the block ends, then drops them all (counters reset on entry)."""
        if self._entries is not None:
            raise RuntimeError("An input cache batch is already open; batches do not nest.")
        self._entries, self.hits, self.misses = {}, 0, 0
        try:
            yield self
        finally:
            self._entries = None

    def get(self, prompt: object, build: Callable[[Any], Inputs]) -> Inputs:
        """``build(prompt)``, from the cache when this batch has processed ``prompt`` already."""
        if self._entries is None:
            return build(prompt)
        entry = self._entries.get(id(prompt))
        if entry is not None:
            self.hits += 1
            return entry[1]
        self.misses += 1
        inputs = build(prompt)
        self._entries[id(prompt)] = (prompt, inputs)
        return inputs


def collate_padded(parts: Sequence[Inputs], pad_id: int) -> Inputs:
    """One left-padded batch of per-sample inputs, as the processor's batched call lays it out.

    Args:
        parts: Each sample's processor outputs (token tensors ``(1, L_i)``).
        pad_id: The token id padding ``input_ids`` (the tokenizer's pad token).

    Returns:
        Token tensors ``(B, max L_i)`` padded on the left; per-image tensors concatenated
        in sample order (a sample without images adds none).
    """
    length = max(part["input_ids"].shape[1] for part in parts)
    out: Inputs = {}
    for key in dict.fromkeys(key for part in parts for key in part):  # a sample without images lacks some
        tensors = [part[key] for part in parts if key in part]
        if key in SEQUENCE_KEYS:
            fill = pad_id if SEQUENCE_KEYS[key] is None else SEQUENCE_KEYS[key]
            out[key] = torch.cat(
                [torch.nn.functional.pad(t, (length - t.shape[1], 0), value=fill) for t in tensors]
            )
        else:
            out[key] = torch.cat(tensors)
    return out

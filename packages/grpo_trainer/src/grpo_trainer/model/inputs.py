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
log-probs as an uncached one. :func:`collate_packed` is the padding-free layout
(``[optim] packing = "padding_free"``): every sample of a micro-batch, prompt and
response, one after another in one row, with no pad token; see its docstring.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

__all__ = ["SEQUENCE_KEYS", "InputCache", "RopeIndex", "collate_packed", "collate_padded"]

Inputs = dict[str, torch.Tensor]
# A Qwen-VL model's ``get_rope_index(input_ids, mm_token_type_ids, image_grid_thw=...)``: its
# ``(3, 1, L)`` multimodal rope positions of one sequence (and the rope deltas, unused here).
RopeIndex = Callable[..., tuple[torch.Tensor, torch.Tensor]]

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
    if len(parts) == 1:  # nothing to pad: no copy of a window's pixels
        return dict(parts[0])
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


def collate_packed(
    parts: Sequence[Inputs], responses: Sequence[Sequence[int]], rope_index: RopeIndex | None
) -> tuple[Inputs, list[int]]:
    """One padding-free row holding each sample's prompt and response, and where its logits start.

    Position ids restart at each sample: ``(4, 1, T)`` for a Qwen-VL model (row 0 the text
    positions ``0..L_i-1``, rows 1-3 the model's own multimodal rope positions of the sample
    from ``rope_index``, as its padded batch would get them), ``(1, T)`` without one. There is
    no attention mask: ``transformers`` (>= 5) reads sample boundaries from the text positions
    restarting (``masking_utils.find_packed_sequence_indices``) and builds a block-diagonal
    causal mask under SDPA/eager, or runs varlen kernels under ``flash_attention_2``, so no
    token attends across samples. The model must run without a KV cache (``use_cache=False``):
    with one, ``transformers`` does not look for packed sequences.

    Args:
        parts: Each sample's processor outputs (token tensors ``(1, P_i)``).
        responses: Each sample's response ids (appended after its prompt).
        rope_index: The model's ``get_rope_index``; ``None`` for a plain text model.

    Returns:
        The row's model inputs, and for each sample the index in the row of the logit that
        predicts its first response token (``start + P_i - 1``).
    """
    sequences: dict[str, list[torch.Tensor]] = {key: [] for key in parts[0] if key in SEQUENCE_KEYS}
    sequences.pop("attention_mask", None)
    text, mrope, first = [], [], []
    total = 0
    for part, response in zip(parts, responses, strict=True):
        prompt = part["input_ids"]
        tail = torch.tensor([list(response)], dtype=prompt.dtype)
        for key, pieces in sequences.items():  # responses are text: type 0
            pieces.append(
                torch.cat([part[key], tail if key == "input_ids" else torch.zeros_like(tail)], dim=1)
            )
        length = prompt.shape[1] + tail.shape[1]
        text.append(torch.arange(length).view(1, -1))
        if rope_index is not None:
            kinds = sequences["mm_token_type_ids"][-1] if "mm_token_type_ids" in sequences else None
            positions, _ = rope_index(
                sequences["input_ids"][-1], kinds, image_grid_thw=part.get("image_grid_thw")
            )
            mrope.append(positions)
        first.append(total + prompt.shape[1] - 1)
        total += length
    out = {key: torch.cat(pieces, dim=1) for key, pieces in sequences.items()}
    positions = torch.cat(text, dim=1)
    out["position_ids"] = torch.cat([positions[None], torch.cat(mrope, dim=2)]) if mrope else positions
    for key in dict.fromkeys(key for part in parts for key in part if key not in SEQUENCE_KEYS):
        out[key] = torch.cat([part[key] for part in parts if key in part])
    return out, first

"""A Qwen-style tokenizer trained in-process, for tests and benchmarks without downloads.

It has Qwen's special tokens (``<|im_start|>``, ``<|image_pad|>``, ...), Qwen's tag tokens
(``<tool_call>``, ``<think>``, ...: single ids that, as in Qwen's own tokenizer, are not
special, so a decode that skips special tokens keeps them) and Qwen's byte-level BPE
pre-tokenizer, but a vocabulary learned from the corpus given, so
its text counts only approximate a real checkpoint's. Needs the ``tokens`` extra.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

QWEN_SPECIAL_TOKENS: tuple[str, ...] = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
QWEN_TAG_TOKENS: tuple[str, ...] = ("<tool_call>", "</tool_call>", "<think>", "</think>")


def train_qwen_tokenizer(
    corpus: Iterable[str],
    vocab_size: int = 400,
    special_tokens: Sequence[str] = QWEN_SPECIAL_TOKENS,
    tag_tokens: Sequence[str] = QWEN_TAG_TOKENS,
) -> Any:
    """Trains a byte-level BPE on ``corpus`` and wraps it as a transformers ``Qwen2Tokenizer``.

    Args:
        corpus: Training texts.
        vocab_size: Target vocabulary size (specials and the 256 byte symbols included).
        special_tokens: Added as special tokens; the first is the pad token.
        tag_tokens: One id each, never split or merged, but not special (decoding keeps them).

    Returns:
        A ``transformers.Qwen2Tokenizer`` (eos ``<|im_end|>``).
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import Qwen2Tokenizer

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[*special_tokens, *tag_tokens],  # whole ids, left out of the merges
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(corpus, trainer)
    state = json.loads(bpe.to_str())
    # Qwen2Tokenizer wants merges as tuples ("a b" strings fail inside tokenizers) and takes no unk token;
    # its annotations say list[str] and str.
    tokenizer = Qwen2Tokenizer(
        vocab=state["model"]["vocab"],
        merges=[tuple(m) for m in state["model"]["merges"]],  # type: ignore[misc]
        unk_token=None,  # type: ignore[arg-type]
        eos_token="<|im_end|>",
        pad_token=special_tokens[0],
        additional_special_tokens=list(special_tokens[1:]),
    )
    tokenizer.add_tokens([AddedToken(tag, special=False, normalized=False) for tag in tag_tokens])
    return tokenizer

"""A tiny Qwen3-VL processor built in-process: BPE tokenizer trained here + PIL image processor.

No downloads. ``Qwen3VLProcessor`` cannot be constructed without torchvision (its video
processor class is missing), so an image-only subclass drops that attribute; the
tokenization and image expansion code that runs is transformers' own.
"""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")
pytest.importorskip("jinja2")

from hybrid_agent.offline_tokenizer import train_qwen_tokenizer
from hybrid_agent.tokens import QWEN_CHATML_TEMPLATE
from transformers import Qwen3VLProcessor
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

CORPUS = [
    "Action: click the cell A1 and type the value",
    "Tool result: the call executed and changed 3 cells",
    '{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [500, 300]}}',
    "Previous actions: Step 1: open the spreadsheet. Instruction: sort column B ascending.",
    "You are a computer-use agent operating a Linux desktop. # Tools <tools> </tools>",
]


class ImageOnlyQwen3VLProcessor(Qwen3VLProcessor):
    """Qwen3VLProcessor without the video processor (which needs torchvision)."""

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        super().__init__(image_processor, tokenizer, None, chat_template=chat_template, **kwargs)


def tiny_tokenizer(vocab_size: int = 400):
    return train_qwen_tokenizer(CORPUS * 20, vocab_size)


def qwen3_vl_image_processor() -> Qwen2VLImageProcessorPil:
    """The image settings of the released Qwen3-VL checkpoints, constructed in code."""
    return Qwen2VLImageProcessorPil(
        patch_size=16,
        temporal_patch_size=2,
        merge_size=2,
        size={"shortest_edge": 65_536, "longest_edge": 16_777_216},
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
    )


def small_image_processor() -> Qwen2VLImageProcessorPil:
    """Small pixel bounds so that resizing up and down both happen on tiny images."""
    return Qwen2VLImageProcessorPil(
        patch_size=16,
        temporal_patch_size=2,
        merge_size=2,
        size={"shortest_edge": 32 * 32 * 4, "longest_edge": 128 * 128},
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
    )


def processor(image_processor) -> ImageOnlyQwen3VLProcessor:
    return ImageOnlyQwen3VLProcessor(
        image_processor=image_processor, tokenizer=tiny_tokenizer(), chat_template=QWEN_CHATML_TEMPLATE
    )


def tiny_model(processor, vocab_size=None, hidden_size=32, layers=1):
    """The tiny Qwen3-VL of the tests (seeded weights; needs torch).

    ``vocab_size`` widens the vocabulary past the tokenizer's (tools/bench_generation_memory.py
    uses Qwen's 151,936, where the logits dominate). ``hidden_size`` and ``layers`` grow the text
    model for a test that must learn something (the chained SFT -> GRPO test memorises an episode).
    """
    import torch
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

    tok = processor.tokenizer
    text = {
        "vocab_size": vocab_size or len(tok),
        "hidden_size": hidden_size,
        "intermediate_size": 2 * hidden_size,
        "num_hidden_layers": layers,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": hidden_size // 4,
        "rope_scaling": {"rope_type": "default", "mrope_section": [1, 1, 2], "mrope_interleaved": True},
    }
    vision = {
        "depth": 1,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_heads": 4,
        "out_hidden_size": hidden_size,
        "patch_size": 16,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
        "deepstack_visual_indexes": [],
    }
    config = Qwen3VLConfig(
        text_config=text, vision_config=vision,
        image_token_id=tok.convert_tokens_to_ids("<|image_pad|>"),
        video_token_id=tok.convert_tokens_to_ids("<|video_pad|>"),
        vision_start_token_id=tok.convert_tokens_to_ids("<|vision_start|>"),
        vision_end_token_id=tok.convert_tokens_to_ids("<|vision_end|>"),
    )  # fmt: skip
    torch.manual_seed(0)
    return Qwen3VLForConditionalGeneration(config).eval()

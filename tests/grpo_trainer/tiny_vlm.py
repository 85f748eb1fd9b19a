"""A tiny random Qwen3-VL policy for the trainer's tests: hybrid_agent's test processor and model.

The processor (BPE trained in-process, PIL image processor, no video processor) and the
model config are those of tests/hybrid_agent (tiny_qwen.py); nothing
is downloaded. :func:`saved_tiny_vlm` writes one as an ``hf:PATH`` directory.
"""

from __future__ import annotations

import sys
from pathlib import Path

# pytest's pythonpath finds tiny_qwen; the ranks the deepspeed launcher starts and the tests' own
# `python -c` children import this module without it.
sys.path.insert(0, str(Path(__file__).parents[1] / "hybrid_agent"))

import tiny_qwen
from grpo_trainer.model.hf_policy import HFTrainablePolicy
from transformers import AutoProcessor, Qwen3VLConfig


def tiny_vlm_policy(max_new_tokens: int = 12) -> HFTrainablePolicy:
    """A fresh tiny Qwen3-VL (seeded weights) behind the trainable ``hf:`` policy."""
    processor = tiny_qwen.processor(tiny_qwen.small_image_processor())
    return HFTrainablePolicy(tiny_qwen.tiny_model(processor).train(), processor, max_new_tokens)


def register_processor() -> None:
    """Lets ``AutoProcessor`` (what ``hf:PATH`` loads with) load the saved test processor.

    It resolves a saved processor's class by name; the real ``Qwen3VLProcessor`` needs
    torchvision, which this environment lacks, so the image-only one is registered instead.
    """
    AutoProcessor.register(Qwen3VLConfig, tiny_qwen.ImageOnlyQwen3VLProcessor, exist_ok=True)


def saved_tiny_vlm(folder: Path) -> str:
    """Saves a fresh tiny Qwen3-VL and its processor to ``folder``; returns the ``hf:`` spec."""
    register_processor()
    policy = tiny_vlm_policy()
    policy.module.save_pretrained(folder)
    policy.processor.save_pretrained(folder)
    return f"hf:{folder}"

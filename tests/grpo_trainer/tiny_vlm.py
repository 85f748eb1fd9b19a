"""A tiny random Qwen3-VL policy for the trainer's tests: hybrid_agent's test processor and model.

The processor (BPE trained in-process, PIL image processor, no video processor) and the
model config are those of tests/hybrid_agent (tiny_qwen.py, test_hf_policy.py); nothing
is downloaded.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "hybrid_agent"))

import tiny_qwen
from grpo_trainer.hf_policy import HFTrainablePolicy
from test_hf_policy import tiny_model


def tiny_vlm_policy(max_new_tokens: int = 12) -> HFTrainablePolicy:
    """A fresh tiny Qwen3-VL (seeded weights) behind the trainable ``hf:`` policy."""
    processor = tiny_qwen.processor(tiny_qwen.small_image_processor())
    return HFTrainablePolicy(tiny_model(processor).train(), processor, max_new_tokens)

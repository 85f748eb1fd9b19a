"""The hf: policy on a tiny random Qwen3-VL built in code (needs torch: skipped without it).

The processor is the in-code tiny one (tests/hybrid_agent/tiny_qwen.py); AutoProcessor
cannot load a Qwen3-VL processor without torchvision, so the test hands the policy the
processor object and checks batched generation, the stop at </tool_call> and the usage.
"""

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch==2.13.0, CPU wheel)")
tiny_qwen = pytest.importorskip("tiny_qwen")

from hybrid_agent.messages import image_part, text_part  # noqa: E402
from hybrid_agent.policies import PolicyOptions, PolicyRequest  # noqa: E402
from hybrid_agent.policies.hf import HFPolicy  # noqa: E402
from PIL import Image  # noqa: E402
from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration  # noqa: E402


def tiny_model(processor, vocab_size=None):
    """The tiny Qwen3-VL of the tests (seeded weights); ``vocab_size`` widens the vocabulary past the
    tokenizer's (tools/bench_generation_memory.py uses Qwen's 151,936, where the logits dominate)."""
    tok = processor.tokenizer
    text = {
        "vocab_size": vocab_size or len(tok),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 8,
        "rope_scaling": {"rope_type": "default", "mrope_section": [1, 1, 2], "mrope_interleaved": True},
    }
    vision = {
        "depth": 1,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_heads": 4,
        "out_hidden_size": 32,
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


def test_batched_generation_over_two_envs_reports_exact_usage():
    processor = tiny_qwen.processor(tiny_qwen.small_image_processor())
    policy = HFPolicy(tiny_model(processor), processor, PolicyOptions(max_tokens=8))
    requests = [
        PolicyRequest([{"role": "user", "content": [image_part(Image.new("RGB", (64, 64))), text_part(t)]}])
        for t in ("Instruction: sort column B", "Instruction: save")
    ]
    generations = policy.generate(requests)
    assert len(generations) == 2
    for request, gen in zip(requests, generations, strict=True):
        assert gen.error is None and isinstance(gen.text, str)
        assert 1 <= gen.output_tokens <= 8
        # A random model rarely stops: a row that used the whole budget says it was cut off.
        used_all = gen.output_tokens == 8 and "</tool_call>" not in gen.text
        assert gen.finish_reason == ("length" if used_all else "stop")
        single = processor.apply_chat_template(request.messages, tokenize=True, add_generation_prompt=True,
                                               return_dict=True)  # fmt: skip
        assert gen.input_tokens == len(single["input_ids"][0])  # left padding does not count
    # Greedy: the same request alone gives the same text as in the batch.
    [alone] = policy.generate(requests[:1])
    assert alone.text == generations[0].text

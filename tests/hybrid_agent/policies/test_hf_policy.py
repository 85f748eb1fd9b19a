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


def test_batched_generation_over_two_envs_reports_exact_usage():
    processor = tiny_qwen.processor(tiny_qwen.small_image_processor())
    policy = HFPolicy(tiny_qwen.tiny_model(processor), processor, PolicyOptions(max_tokens=8))
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

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


def test_a_checkpoint_without_a_generation_eos_still_ends_its_turn_at_im_end():
    # A model built in code or a fine-tuned export may carry no generation config eos: generation
    # must still stop at the chat's end of turn, or every reply runs to max_tokens.
    processor = tiny_qwen.processor(tiny_qwen.small_image_processor())
    model = tiny_qwen.tiny_model(processor)
    model.generation_config.eos_token_id = None
    policy = HFPolicy(model, processor, PolicyOptions(max_tokens=8))
    im_end = processor.tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert policy._end_ids() == [im_end]
    model.generation_config.eos_token_id = [im_end, 5]
    assert policy._end_ids() == sorted({im_end, 5})


def test_tag_tokens_are_single_ids_that_a_decode_skipping_specials_keeps():
    # Qwen's <tool_call> is one added token but not a special one: HFPolicy decodes with
    # skip_special_tokens, and a reply whose tags vanished would not parse.
    tokenizer = tiny_qwen.tiny_tokenizer()
    text = '<think>x</think><tool_call>{"name": "a"}</tool_call><|im_end|>'
    ids = tokenizer(text)["input_ids"]
    for tag in ("<tool_call>", "</tool_call>", "<think>", "</think>", "<|im_end|>"):
        assert tokenizer.convert_tokens_to_ids(tag) in ids
    assert tokenizer.decode(ids, skip_special_tokens=True) == text.removesuffix("<|im_end|>")

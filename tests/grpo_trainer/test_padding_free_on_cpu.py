"""``[optim] packing = "padding_free"``: one row without pad tokens scores what padded rows score."""

import pytest

pytest.importorskip("transformers")

import torch
from grpo_trainer.config import OptimSettings
from grpo_trainer.errors import ConfigError
from grpo_trainer.model_inputs import collate_packed
from hybrid_agent.messages import image_part, text_part
from PIL import Image
from tiny_vlm import tiny_vlm_policy


def _samples(policy):
    """Prompts of different lengths (two with screenshots of different sizes, one text-only) and responses."""
    red, blue = Image.new("RGB", (64, 64), "red"), Image.new("RGB", (96, 64), "blue")
    prompts = [
        policy.encode([{"role": "user", "content": [image_part(red), text_part("click the cell")]}]),
        policy.encode([{"role": "user", "content": [text_part("type a much longer instruction here")]}]),
        policy.encode([{"role": "user", "content": [image_part(blue), image_part(red), text_part("x")]}]),
    ]
    responses = [[50, 61, 72, 13], [80], [90, 101]]  # ordinary text ids (3-6 are vision tokens)
    return prompts, responses


def _scores(policy, prompts, responses, packing):
    policy.packing = packing
    return policy.logprobs(prompts, responses)


def test_packed_log_probs_equal_padded_ones_with_images():
    policy = tiny_vlm_policy()
    policy.module.eval()  # no dropout: both layouts see the same function
    prompts, responses = _samples(policy)
    with torch.no_grad():
        padded = _scores(policy, prompts, responses, "padded")
        packed = _scores(policy, prompts, responses, "padding_free")
    assert padded.shape == packed.shape == (3, 4)
    torch.testing.assert_close(packed, padded, rtol=0, atol=1e-5)
    assert packed[1, 1:].eq(0).all() and packed[2, 2:].eq(0).all()


def test_gradients_through_the_packed_row_match_the_padded_ones():
    policy = tiny_vlm_policy()
    policy.module.eval()
    prompts, responses = _samples(policy)
    grads = []
    for packing in ("padded", "padding_free"):
        policy.module.zero_grad()
        _scores(policy, prompts, responses, packing).sum().backward()
        grads.append(torch.cat([p.grad.flatten() for p in policy.module.parameters() if p.grad is not None]))
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-4, atol=1e-6)


def test_the_packed_row_has_no_pad_token_and_positions_restart_per_sample():
    policy = tiny_vlm_policy()
    prompts, responses = _samples(policy)
    parts = [policy._process(p) for p in prompts]
    packed, first = collate_packed(parts, responses, policy._rope_index())
    lengths = [len(p) + len(r) for p, r in zip(prompts, responses, strict=True)]
    assert packed["input_ids"].shape == (1, sum(lengths))  # every token is a sample's: no padding
    assert "attention_mask" not in packed
    starts = [0, lengths[0], lengths[0] + lengths[1]]
    text = packed["position_ids"][0, 0]
    assert [int(text[s]) for s in starts] == [0, 0, 0]
    assert first == [s + len(p) - 1 for s, p in zip(starts, prompts, strict=True)]
    # The row holds the images of samples 0 and 2, in order, and their grids.
    assert packed["image_grid_thw"].tolist() == [[1, 4, 4], [1, 4, 6], [1, 4, 4]]


def test_an_unknown_packing_is_refused_with_the_known_ones():
    with pytest.raises(
        ConfigError, match=r"packing must be one of \('padded', 'padding_free'\), got 'dense'"
    ):
        OptimSettings(packing="dense")

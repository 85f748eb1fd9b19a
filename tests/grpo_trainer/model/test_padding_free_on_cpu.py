"""``[optim] packing = "padding_free"``: one row without pad tokens scores what padded rows score."""

import dataclasses

import pytest

pytest.importorskip("transformers")

import grpo_trainer  # noqa: F401  (registers the toy env)
import gymnasium as gym
import torch
from grpo_trainer.config import EngineSettings, GRPOConfig, OptimSettings, RolloutSettings
from grpo_trainer.errors import ConfigError
from grpo_trainer.model.inputs import collate_packed
from grpo_trainer.objectives.advantage import group_advantages
from grpo_trainer.objectives.rewards import RewardConfig
from grpo_trainer.rollouts.vector import make_group_env
from grpo_trainer.training import trainer as engine
from grpo_trainer.training.trainer import Trainer
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


def _one_update(tmp_path, packing: str, monkeypatch):
    """One training step of a fresh tiny VLM on a fixed batch (opposed advantages), padded or packed."""
    config = GRPOConfig(
        rollout=RolloutSettings(group_size=2, tasks_per_step=1),
        reward=RewardConfig(max_steps=2),
        optim=OptimSettings(
            lr=1e-2, total_steps=1, updates_per_batch=1, micro_batch_tokens=4096, packing=packing
        ),
        engine=EngineSettings(backend="torch", precision="fp32"),
    )
    policy = tiny_vlm_policy(max_new_tokens=6)
    policy.packing = packing  # what build_policy passes from [optim] packing
    venv = make_group_env(lambda: gym.make(config.env_id, max_steps=2), 2)
    trainer = Trainer(config, policy, venv, tmp_path / packing)
    groups = trainer.rollout()  # same weights, same generator: the same samples for both
    venv.close()

    def opposed(group, rewards, settings):
        scored = group_advantages(group, rewards, settings)
        signs = [[1.0 - 2 * m] * e.length for m, e in enumerate(scored.episodes)]
        return dataclasses.replace(scored, kept=True, advantages=signs)

    monkeypatch.setattr(engine, "group_advantages", opposed)
    metrics = trainer._learn(groups, {})
    return metrics, [p.detach().clone() for p in policy.module.parameters()]


def test_a_packed_training_step_moves_the_weights_as_a_padded_one(tmp_path, monkeypatch):
    padded, padded_weights = _one_update(tmp_path, "padded", monkeypatch)
    packed, packed_weights = _one_update(tmp_path, "padding_free", monkeypatch)
    assert packed["train/loss"] == pytest.approx(padded["train/loss"], abs=1e-6)
    assert packed["train/grad_norm"] == pytest.approx(padded["train/grad_norm"], rel=1e-4)
    start = list(tiny_vlm_policy().module.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(packed_weights, start, strict=True))  # it did train
    for a, b in zip(packed_weights, padded_weights, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)

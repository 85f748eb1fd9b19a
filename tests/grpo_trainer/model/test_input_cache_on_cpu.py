"""Processed VLM inputs cached for one training batch: exact, once per sample, gone after the batch."""

import dataclasses

import pytest

pytest.importorskip("transformers")

import grpo_trainer  # noqa: F401  (registers the toy env)
import gymnasium as gym
import torch
from grpo_trainer.config import EngineSettings, GRPOConfig, LossSettings, OptimSettings, RolloutSettings
from grpo_trainer.model.hf_policy import HFTrainablePolicy, token_logprobs
from grpo_trainer.model.inputs import InputCache, collate_padded
from grpo_trainer.objectives.advantage import group_advantages
from grpo_trainer.objectives.rewards import RewardConfig
from grpo_trainer.rollouts.vector import make_group_env
from grpo_trainer.training import trainer as engine
from grpo_trainer.training.trainer import Trainer
from hybrid_agent.messages import image_part, text_part
from PIL import Image
from tiny_vlm import tiny_vlm_policy


class CountingProcessor:
    """The policy's processor, counting the calls that process images or text."""

    def __init__(self, processor) -> None:
        self.inner = processor
        self.calls = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.inner(*args, **kwargs)


def _prompts(policy: HFTrainablePolicy):
    """Three prompts of different lengths: two with screenshots of different sizes, one text-only."""
    red, blue = Image.new("RGB", (64, 64), "red"), Image.new("RGB", (96, 64), "blue")
    return [
        policy.encode([{"role": "user", "content": [image_part(red), text_part("click the cell")]}]),
        policy.encode([{"role": "user", "content": [text_part("type a much longer instruction here")]}]),
        policy.encode([{"role": "user", "content": [image_part(blue), image_part(red), text_part("x")]}]),
    ]


def _batched_logprobs(policy: HFTrainablePolicy, prompts, responses) -> torch.Tensor:
    """What logprobs scored before the cache: one batched processor call over all prompts."""
    batch = policy.processor(
        text=[p.text for p in prompts],
        images=[i for p in prompts for i in p.images],
        padding=True,
        return_tensors="pt",
    )
    length = max(map(len, responses))
    response = torch.tensor([r + [policy.pad_id] * (length - len(r)) for r in responses])
    valid = torch.tensor([[True] * len(r) + [False] * (length - len(r)) for r in responses])
    inputs = dict(batch)
    inputs["input_ids"] = torch.cat([inputs["input_ids"], response], dim=1)
    inputs["attention_mask"] = torch.cat([inputs["attention_mask"], valid.long()], dim=1)
    if "mm_token_type_ids" in inputs:
        inputs["mm_token_type_ids"] = torch.cat(
            [inputs["mm_token_type_ids"], torch.zeros_like(response)], dim=1
        )
    logits = policy.module(**inputs, logits_to_keep=length + 1).logits[:, :length]
    picked = token_logprobs(logits, response, 1.0, policy.banned)
    return torch.where(valid, picked, torch.zeros_like(picked))


def test_per_sample_collation_scores_what_the_batched_processor_scores():
    """Processing each prompt alone and left-padding them changes no log-prob, images included."""
    policy = tiny_vlm_policy()
    policy.module.eval()
    prompts = _prompts(policy)
    responses = [[50, 61, 72], [80], [90, 101]]  # ordinary text ids (3-6 are vision tokens)
    with torch.no_grad():
        expected = _batched_logprobs(policy, prompts, responses)
        uncached = policy.logprobs(prompts, responses)
        with policy.cached_inputs():
            policy.logprobs(prompts, responses)
            cached = policy.logprobs(prompts, responses)
    assert torch.equal(uncached, expected)
    assert torch.equal(cached, expected)


def test_a_bf16_model_gets_bf16_pixels_and_scores_what_fp32_pixels_score():
    """The vision tower casts pixels to its dtype first, so casting them before caching changes nothing."""
    policy = tiny_vlm_policy()
    policy.module.to(torch.bfloat16).eval()
    prompts = _prompts(policy)
    responses = [[50, 61, 72], [80], [90, 101]]
    assert policy._process(prompts[0])["pixel_values"].dtype == torch.bfloat16
    with torch.no_grad():
        assert torch.equal(policy.logprobs(prompts, responses), _batched_logprobs(policy, prompts, responses))


def test_the_processor_runs_once_per_sample_per_batch_and_the_batch_forgets():
    policy = tiny_vlm_policy()
    prompts = _prompts(policy)
    policy.processor = counter = CountingProcessor(policy.processor)
    responses = [[50], [61], [72]]
    with torch.no_grad(), policy.cached_inputs() as cache:
        for _ in range(3):
            policy.logprobs(prompts, responses)
        policy.logprobs(prompts[1:], responses[1:])  # another micro-batch split of the same samples
        assert counter.calls == 3 and len(cache) == 3
        assert (cache.hits, cache.misses) == (8, 3)
    assert len(cache) == 0
    with torch.no_grad():
        policy.logprobs(prompts, responses)
    assert counter.calls == 6  # outside a batch nothing is kept


def test_batches_do_not_nest():
    cache = InputCache()
    with cache.batch(), pytest.raises(RuntimeError, match="already open"), cache.batch():
        pass


def test_collation_pads_tokens_on_the_left_and_concatenates_images_in_order():
    short = {"input_ids": torch.tensor([[7]]), "attention_mask": torch.tensor([[1]])}
    pixels = torch.arange(6.0).reshape(3, 2)
    long = {
        "input_ids": torch.tensor([[1, 2, 3]]),
        "attention_mask": torch.tensor([[1, 1, 1]]),
        "pixel_values": pixels,
        "image_grid_thw": torch.tensor([[1, 1, 3]]),
    }
    out = collate_padded([short, long], pad_id=0)
    assert out["input_ids"].tolist() == [[0, 0, 7], [1, 2, 3]]
    assert out["attention_mask"].tolist() == [[0, 0, 1], [1, 1, 1]]
    assert torch.equal(out["pixel_values"], pixels) and out["image_grid_thw"].tolist() == [[1, 1, 3]]


def _step_processor_calls(tmp_path, monkeypatch, cache_inputs: bool):
    """One training step of the tiny VLM: its samples, metrics and processor calls."""
    config = GRPOConfig(
        rollout=RolloutSettings(group_size=2, tasks_per_step=1),
        reward=RewardConfig(max_steps=2),
        optim=OptimSettings(lr=1e-2, total_steps=1, updates_per_batch=2, cache_inputs=cache_inputs),
        loss=LossSettings(tis_cap=2.0),
        engine=EngineSettings(backend="torch", precision="fp32", micro_batch_size=2),
    )
    policy = tiny_vlm_policy(max_new_tokens=6)
    venv = make_group_env(lambda: gym.make(config.env_id, max_steps=2), 2)
    trainer = Trainer(config, policy, venv, tmp_path)
    groups = trainer.rollout()
    venv.close()
    samples = [s for g in groups for e in g for s in e.samples if s.response_ids]

    def opposed(group, rewards, settings):  # the random group trains whatever it scored
        scored = group_advantages(group, rewards, settings)
        signs = [[1.0 - 2 * m] * e.length for m, e in enumerate(scored.episodes)]
        return dataclasses.replace(scored, kept=True, advantages=signs)

    monkeypatch.setattr(engine, "group_advantages", opposed)
    policy.processor = counter = CountingProcessor(policy.processor)
    metrics = trainer._learn(groups, {})
    assert trainer.updates == 2
    return samples, metrics, counter.calls, policy


def test_a_training_step_processes_each_sample_once_and_logs_the_hits(tmp_path, monkeypatch):
    """Old log-probs (tis_cap) and two update passes score every sample 3 times: 1 miss, 2 hits each."""
    samples, metrics, calls, policy = _step_processor_calls(tmp_path, monkeypatch, cache_inputs=True)
    assert calls == len(samples) == metrics["train/input_cache_misses"]
    assert metrics["train/input_cache_hits"] == 2 * len(samples)
    assert len(policy.inputs) == 0


def test_cache_inputs_false_processes_at_every_scoring(tmp_path, monkeypatch):
    samples, metrics, calls, _ = _step_processor_calls(tmp_path, monkeypatch, cache_inputs=False)
    assert calls == 3 * len(samples)
    assert "train/input_cache_hits" not in metrics

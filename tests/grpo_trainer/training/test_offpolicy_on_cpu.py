"""Off-policy correction and token-sized micro-batches in the Trainer, on the toy env.

With the ``hf`` engine the sampler is the trained model, so the measured gap is 0 and the
truncated importance weights are 1. An engine whose log-probs are off by a known amount
shows the gap measured and the trainer's own log-probs taken as the old policy.
"""

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest
import torch
from grpo_trainer.config import LossSettings
from grpo_trainer.errors import ConfigError, RegistryError
from grpo_trainer.model.engines.hf import HFEngine
from grpo_trainer.model.packing import padded_tokens
from grpo_trainer.model.policy import Sampled
from grpo_trainer.objectives.advantage import group_advantages
from grpo_trainer.objectives.loss import policy_loss, truncated_is_weights
from toy_setup import toy_config, toy_trainer

SHIFT = 0.5


def _with(config, **sections):
    return dataclasses.replace(config, **sections)


class ShiftedEngine(HFEngine):
    """Samples as the model does but reports each log-prob SHIFT lower: another engine's numerics."""

    shares_weights = False

    def sample(self, prompts: Sequence[list[int]], temperature: float, generator: Any) -> list[Sampled]:
        sampled = super().sample(prompts, temperature, generator)
        return [dataclasses.replace(s, logprobs=[lp - SHIFT for lp in s.logprobs]) for s in sampled]


def _recording(trainer):
    """Wraps ``_update`` to keep the micro-batches and the metrics of every optimizer update."""
    seen = []
    update = trainer._update

    def recording(micro, *args):
        out = update(micro, *args)
        seen.append((micro, out))
        return out

    trainer._update = recording
    return seen


@pytest.mark.timeout(600)
def test_hf_engine_gap_is_zero_so_the_tis_weights_are_one(tmp_path):
    trainer = toy_trainer(_with(toy_config(seed=0, steps=1), loss=LossSettings(tis_cap=2.0)), tmp_path)
    seen = _recording(trainer)
    log = trainer.train()[0]
    # The sampler is the trained model: its recorded log-probs are the trainer's, token for token.
    assert log["offpolicy/logprob_diff_max"] < 1e-5
    assert log["offpolicy/ratio_mean"] == pytest.approx(1.0, abs=1e-5)
    micro = seen[0][0][0]
    weights = truncated_is_weights(micro["train_old"], micro["old"], micro["mask"], 2.0)
    assert torch.allclose(weights, micro["mask"], atol=1e-5)


def test_without_tis_the_hf_engine_scores_nothing_twice(tmp_path):
    trainer = toy_trainer(toy_config(seed=0, steps=1), tmp_path)
    assert trainer._score_old([[]], None) == {}  # no extra forward pass: nothing to measure


@pytest.mark.timeout(600)
def test_an_engine_off_by_a_known_amount_is_measured_and_its_weights_capped(tmp_path):
    trainer = toy_trainer(_with(toy_config(seed=0, steps=1), loss=LossSettings(tis_cap=1.2)), tmp_path)
    trainer.rollout_engine = ShiftedEngine(trainer.policy)
    trainer.rollout_policy.sampler = trainer.rollout_engine
    seen = _recording(trainer)
    log = trainer.train()[0]
    # Forced bytes have log-prob 0 under the model and -SHIFT as reported: every token is off by SHIFT.
    assert log["offpolicy/logprob_diff_mean"] == pytest.approx(SHIFT, abs=1e-5)
    assert log["offpolicy/ratio_min"] == pytest.approx(torch.e**SHIFT, rel=1e-5)
    micro = seen[0][0][0]
    assert torch.equal(micro["train_old"] * micro["mask"], micro["train_old"])  # 0 past each end
    # The trainer's own rollout-time log-probs are the old policy: the first update starts at ratio 1.
    assert seen[0][1]["train/ratio_max"] == pytest.approx(1.0, abs=1e-5)


@pytest.mark.timeout(600)
def test_token_budget_micro_batches_keep_the_padded_size_and_the_loss(tmp_path):
    base = toy_config(seed=0, steps=1)  # step 0's groups mix outcomes: samples are kept
    trainer = toy_trainer(base, tmp_path)
    groups = trainer.rollout()
    batch = trainer._batch([group_advantages(g, base.reward, base.advantage) for g in groups])
    whole = trainer._micro_batches(batch)
    lengths = [len(p) + len(r) for p, r in zip(*_rows(whole), strict=True)]
    budget = 3 * max(lengths)  # about three samples per micro-batch
    trainer.config = _with(base, optim=dataclasses.replace(base.optim, micro_batch_tokens=budget))
    packed = trainer._micro_batches(batch)
    assert len(whole) == 1 and len(packed) > 1
    for mb in packed:
        sizes = [len(p) + len(r) for p, r in zip(mb["prompts"], mb["responses"], strict=True)]
        assert padded_tokens(sizes) <= budget
    assert sorted(map(tuple, _rows(packed)[1])) == sorted(map(tuple, _rows(whole)[1]))
    # The update's loss is the token mean of the whole batch however it is cut.
    assert _token_mean_loss(trainer, packed) == pytest.approx(_token_mean_loss(trainer, whole), rel=1e-5)


def _token_mean_loss(trainer, micro):
    """The loss ``Trainer._update`` minimises over ``micro``: each micro-batch's share of the tokens."""
    tokens = sum(float(m["mask"].sum()) for m in micro)
    total = 0.0
    with torch.no_grad():
        for mb in micro:
            logprobs = trainer.policy.logprobs(mb["prompts"], mb["responses"], 1.0)
            loss, _ = policy_loss(logprobs, mb["old"], mb["advantages"], mb["mask"])
            total += float(loss) * float(mb["mask"].sum()) / tokens
    return total


def _rows(micro):
    prompts = [p for mb in micro for p in mb["prompts"]]
    responses = [r for mb in micro for r in mb["responses"]]
    return prompts, responses


def test_config_rejects_vllm_in_async_mode_and_two_micro_batch_sizes():
    base = toy_config()
    with pytest.raises(ConfigError, match="colocated"):
        _with(
            base,
            rollout=dataclasses.replace(base.rollout, engine="vllm"),
            engine=dataclasses.replace(base.engine, mode="async"),
        )
    with pytest.raises(ConfigError, match="one of"):
        _with(
            base,
            optim=dataclasses.replace(base.optim, micro_batch_tokens=100),
            engine=dataclasses.replace(base.engine, micro_batch_size=2),
        )
    with pytest.raises(ConfigError, match="tis_cap"):
        LossSettings(tis_cap=0.0)


def test_unknown_engine_names_the_known_ones(tmp_path):
    base = toy_config()
    config = _with(base, rollout=dataclasses.replace(base.rollout, engine="vlm"))
    with pytest.raises(RegistryError, match="vllm"):
        toy_trainer(config, tmp_path)

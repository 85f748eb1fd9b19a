"""A step logs every update's KL, clipping and ratio; a rank without kept samples still joins the updates."""

import dataclasses
import json

import pytest
import torch
from grpo_trainer.objectives.advantage import AdvantageConfig
from grpo_trainer.training.metrics import summarize_updates
from toy_setup import toy_config, toy_trainer


def test_first_last_and_mean_of_each_update():
    updates = [
        {"train/kl": 0.0, "train/ratio_max": 1.0, "train/loss": 0.5},
        {"train/kl": 0.25, "train/ratio_max": 1.5, "train/loss": 0.25},
        {"train/kl": 0.5, "train/ratio_max": 1.25, "train/loss": 0.0},
    ]
    got = summarize_updates(updates)
    assert (got["train/kl_first"], got["train/kl_last"], got["train/kl_mean"]) == (0.0, 0.5, 0.25)
    assert got["train/ratio_max_last"] == 1.25 and got["train/ratio_max_mean"] == pytest.approx(3.75 / 3)
    assert got["train/loss"] == 0.25 and "train/loss_first" not in got  # plain keys: the mean
    assert summarize_updates([]) == {}
    # a rank that ran only passes of weight 0 in one update has no KL there
    assert summarize_updates([{"train/loss": 0.0}, {"train/kl": 0.5}])["train/kl_first"] == 0.5


def test_later_updates_of_a_batch_show_their_kl(tmp_path):
    config = toy_config(seed=0, steps=1)
    config = dataclasses.replace(config, optim=dataclasses.replace(config.optim, updates_per_batch=3))
    trainer = toy_trainer(config, tmp_path)
    metrics = trainer.train_step()
    trainer.metrics.close()
    # The first update runs on the rollout's own weights: ratio 1, KL 0 (up to float noise).
    assert metrics["train/kl_first"] == pytest.approx(0.0, abs=1e-6)
    assert metrics["train/ratio_min_first"] == pytest.approx(1.0, abs=1e-4)
    assert metrics["train/ratio_max_first"] == pytest.approx(1.0, abs=1e-4)
    # lr 3e-3 moved the weights: updates 2 and 3 are measured against the moved policy.
    assert metrics["train/kl_last"] > 1e-5
    assert metrics["train/kl_mean"] == pytest.approx(metrics["train/kl_last"] / 3, rel=0.6)  # 0, ~k, ~2k
    assert metrics["train/ratio_max_last"] > 1.0 > metrics["train/ratio_min_last"]
    logged = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[0])
    assert logged["train/kl_last"] == metrics["train/kl_last"] and "train/clip_frac_last" in logged


def test_a_rank_without_kept_groups_joins_the_other_ranks_updates(tmp_path):
    # acc_hi just above 0: every group (success rate 0 or more) is dropped on this rank.
    config = dataclasses.replace(
        toy_config(seed=0, steps=1), advantage=AdvantageConfig(acc_lo=0.0, acc_hi=1e-9)
    )
    trainer = toy_trainer(config, tmp_path)
    # The other rank has 2 micro-batches to train on; this one has none and a sample of its own.
    trainer.backend.agree = lambda value, op: max(value, 2) if op == "max" else value
    passes = []
    scored = trainer.policy.logprobs
    trainer.policy.logprobs = lambda *args: passes.append(len(args[0])) or scored(*args)
    before = [p.detach().clone() for p in trainer.policy.module.parameters()]
    groups = trainer.rollout()
    metrics = trainer._learn(groups, {})
    assert metrics["rollout/groups_kept"] == 0
    assert trainer.updates == config.optim.updates_per_batch  # it stepped with the others
    assert passes == [1] * 2 * config.optim.updates_per_batch  # two passes of one sample, per update
    assert metrics["train/loss"] == 0.0 and "train/kl" not in metrics  # nothing of its own to log
    # Weight 0: the gradient is 0, and AdamW from a fresh state moves nothing (no weight decay).
    after = list(trainer.policy.module.parameters())
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))


def test_the_step_is_skipped_only_when_some_rank_has_no_sample_at_all(tmp_path):
    trainer = toy_trainer(toy_config(seed=0, steps=1), tmp_path)
    # Another rank's episodes all crashed before a model call: it has no filler, so nobody steps.
    trainer.backend.agree = lambda value, op: value if op == "max" else 0
    metrics = trainer._learn(trainer.rollout(), {})
    assert metrics["rollout/groups_kept"] > 0 and trainer.updates == 0 and "train/loss" not in metrics

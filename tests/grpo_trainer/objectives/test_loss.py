import math

import pytest
import torch
from grpo_trainer.objectives.loss import (
    clipped_surrogate,
    k3_kl,
    logprob_gap,
    policy_loss,
    truncated_is_weights,
)


def test_k3_hand_computed_and_zero_when_equal():
    lp = torch.tensor([math.log(0.5), math.log(0.2)])
    ref = torch.tensor([math.log(0.5), math.log(0.4)])
    # d = ln 2: e^d - d - 1 = 2 - ln 2 - 1
    assert k3_kl(lp, ref).tolist() == pytest.approx([0.0, 1 - math.log(2)])


def test_surrogate_clips_on_the_side_that_helps():
    old = torch.zeros(4)
    lp = torch.log(torch.tensor([1.5, 1.5, 0.5, 0.5]))  # ratios 1.5, 1.5, 0.5, 0.5
    adv = torch.tensor([1.0, -1.0, 1.0, -1.0])
    loss, clipped = clipped_surrogate(lp, old, adv, 0.2)
    # A>0, r=1.5: min(1.5, 1.2) -> -1.2 (clipped); A<0, r=1.5: min(-1.5, -1.2) -> 1.5
    # A>0, r=0.5: min(0.5, 0.8) -> -0.5;             A<0, r=0.5: min(-0.5, -0.8) -> 0.8 (clipped)
    assert loss.tolist() == pytest.approx([-1.2, 1.5, -0.5, 0.8])
    assert clipped.tolist() == [True, False, False, True]


def test_policy_loss_is_a_token_mean_over_the_mask():
    lp = torch.tensor([[math.log(0.5), 0.0], [math.log(0.25), math.log(0.5)]])
    old = torch.tensor([[math.log(0.5), 0.0], [math.log(0.5), math.log(0.5)]])
    adv = torch.tensor([[2.0, 2.0], [-1.0, -1.0]])
    mask = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    loss, metrics = policy_loss(lp, old, adv, mask, clip_eps=0.2, kl_beta=0.02)
    # tokens: r=1 A=2 -> -2; r=0.5 A=-1 -> min(-0.5,-0.8)=-0.8 -> 0.8 (clipped); r=1 A=-1 -> 1
    pg = (-2 + 0.8 + 1) / 3
    kl = (0 + (2 - math.log(2) - 1) + 0) / 3
    assert loss.item() == pytest.approx(pg + 0.02 * kl)
    assert metrics["train/clip_frac"] == pytest.approx(1 / 3)
    assert metrics["train/tokens"] == 3
    # ratios over the mask: 1, 0.5, 1 (the masked-out token's ratio 1 is not counted twice)
    assert metrics["train/ratio_mean"] == pytest.approx(2.5 / 3)
    assert (metrics["train/ratio_min"], metrics["train/ratio_max"]) == pytest.approx((0.5, 1.0))


def test_masked_tokens_do_not_change_the_loss_or_gradient():
    lp = torch.tensor([[-0.3, -9.0]], requires_grad=True)
    loss, _ = policy_loss(lp, torch.tensor([[-0.4, -0.1]]), torch.ones(1, 2), torch.tensor([[1.0, 0.0]]))
    loss.backward()
    assert lp.grad[0, 1].item() == 0.0 and lp.grad[0, 0].item() != 0.0


def test_truncated_is_weights_cap_the_ratio_and_zero_padding():
    train = torch.tensor([[math.log(0.5), math.log(0.9), 0.0]])
    engine = torch.tensor([[math.log(0.25), math.log(0.9), math.log(0.1)]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    # ratios 2.0, 1.0 and (padding) 10: capped at 1.5, kept, zeroed
    assert truncated_is_weights(train, engine, mask, cap=1.5)[0].tolist() == pytest.approx([1.5, 1.0, 0.0])


def test_token_weights_scale_the_surrogate_only():
    lp = torch.tensor([[math.log(0.5), math.log(0.5)]])
    old = torch.tensor([[math.log(0.5), math.log(0.25)]])
    adv = torch.tensor([[1.0, 1.0]])
    mask = torch.ones(1, 2)
    weights = torch.tensor([[0.5, 2.0]])
    loss, metrics = policy_loss(lp, old, adv, mask, clip_eps=0.2, kl_beta=0.1, token_weights=weights)
    # surrogates: r=1 -> -1 * 0.5; r=2 clipped to 1.2 -> -1.2 * 2.0; KL (unweighted): 0 and 0.5 - ln 0.5 - 1
    pg = (-0.5 - 2.4) / 2
    kl = (0.0 + (0.5 + math.log(2) - 1)) / 2
    assert loss.item() == pytest.approx(pg + 0.1 * kl)
    assert metrics["train/pg_loss"] == pytest.approx(pg)


def test_logprob_gap_hand_computed_over_the_mask():
    train = torch.tensor([[-1.0, -2.0, -5.0]])
    engine = torch.tensor([[-1.5, -1.0, 0.0]])
    gap = logprob_gap(train, engine, torch.tensor([[1.0, 1.0, 0.0]]))
    # differences train - engine: 0.5, -1.0 (the padded -5 is not counted)
    assert gap["offpolicy/logprob_diff_mean"] == pytest.approx(0.75)
    assert gap["offpolicy/logprob_diff_max"] == pytest.approx(1.0)
    assert gap["offpolicy/ratio_mean"] == pytest.approx((math.exp(0.5) + math.exp(-1.0)) / 2)
    assert (gap["offpolicy/ratio_min"], gap["offpolicy/ratio_max"]) == pytest.approx(
        (math.exp(-1.0), math.exp(0.5))
    )

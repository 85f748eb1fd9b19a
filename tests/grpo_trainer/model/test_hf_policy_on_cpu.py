"""The trainable hf: policy on a tiny random Qwen3-VL (built in code): sampling, replay, an update."""

import dataclasses
from pathlib import Path

import pytest

pytest.importorskip("transformers")

import grpo_trainer  # noqa: F401  (registers the toy env)
import gymnasium as gym
import torch
from grpo_trainer.cli import build_policy
from grpo_trainer.config import EngineSettings, GRPOConfig, OptimSettings, RolloutSettings, load_config
from grpo_trainer.errors import ConfigError
from grpo_trainer.model.hf_policy import VisionPrompt, token_logprobs
from grpo_trainer.objectives.advantage import group_advantages
from grpo_trainer.objectives.rewards import RewardConfig
from grpo_trainer.rollouts.vector import make_group_env
from grpo_trainer.training.trainer import Trainer
from hybrid_agent.errors import ConfigError as HFConfigError
from tiny_vlm import tiny_vlm_policy

CONFIG = GRPOConfig(
    rollout=RolloutSettings(group_size=2, tasks_per_step=1),
    reward=RewardConfig(max_steps=2),
    optim=OptimSettings(lr=1e-2, total_steps=2, updates_per_batch=1),
    engine=EngineSettings(backend="torch", precision="fp32", micro_batch_size=2, replay_check=True),
)


@pytest.fixture(scope="module")
def rolled(tmp_path_factory):
    policy = tiny_vlm_policy(max_new_tokens=8)
    venv = make_group_env(lambda: gym.make(CONFIG.env_id, max_steps=2), 2)
    trainer = Trainer(CONFIG, policy, venv, tmp_path_factory.mktemp("run"))
    groups = trainer.rollout()
    yield policy, trainer, groups
    venv.close()


def test_rollout_log_probs_are_the_ones_training_recomputes(rolled):
    policy, _, groups = rolled
    samples = [s for g in groups for e in g for s in e.samples]
    assert len(samples) == 4  # 2 members x 2 steps (a random model never terminates)
    for sample in samples:
        assert isinstance(sample.prompt_ids, VisionPrompt) and len(sample.prompt_ids.images) == 1
        assert 1 <= len(sample.response_ids) <= 8
        assert not set(sample.response_ids) & set(policy.banned)  # no vision placeholders
    with torch.no_grad():
        scored = policy.logprobs([s.prompt_ids for s in samples], [s.response_ids for s in samples], 1.0)
    for row, sample in enumerate(samples):
        got = scored[row, : len(sample.response_ids)].tolist()
        assert got == pytest.approx(sample.old_logprobs, abs=1e-4)
        assert scored[row, len(sample.response_ids) :].eq(0).all()


def test_sampling_follows_the_generator_and_leaves_the_global_rng(rolled):
    policy, _, groups = rolled
    prompts = [groups[0][0].samples[0].prompt_ids] * 2
    state = torch.get_rng_state()
    first = policy.sample(prompts, 1.0, torch.Generator().manual_seed(5))
    again = policy.sample(prompts, 1.0, torch.Generator().manual_seed(5))
    assert torch.equal(state, torch.get_rng_state())
    assert [s.ids for s in first] == [s.ids for s in again]
    other = policy.sample(prompts, 1.0, torch.Generator().manual_seed(6))
    assert [s.ids for s in other] != [s.ids for s in first]


def test_an_update_raises_the_winners_log_probs_over_the_losers(rolled):
    policy, trainer, groups = rolled
    scored = group_advantages(groups[0], CONFIG.reward, CONFIG.advantage)
    signs = [[1.0 - 2 * m] * e.length for m, e in enumerate(scored.episodes)]
    batch = trainer._batch([dataclasses.replace(scored, kept=True, advantages=signs)])  # replays the prompts
    winners = torch.tensor([a > 0 for a in batch["advantages"]])

    def margin() -> float:
        with torch.no_grad():
            lp = policy.logprobs(batch["prompts"], batch["responses"], 1.0).sum(dim=1)
        return float(lp[winners].mean() - lp[~winners].mean())

    before = margin()
    metrics = trainer._update(trainer._micro_batches(batch), rounds=2)
    assert metrics["train/tokens"] == sum(len(r) for r in batch["responses"])
    assert metrics["train/grad_norm"] > 0
    assert margin() > before


def test_unknown_policies_are_refused_with_the_choices():
    with pytest.raises(ConfigError, match="'tiny' or 'hf:PATH'"):
        build_policy(GRPOConfig(policy="gpt"))


def test_the_gpu_example_is_wired_to_the_hf_loader():
    # No longer refused by name: it reaches hf:'s loader, which reports the missing checkpoint.
    config = load_config(Path(__file__).parents[3] / "examples" / "grpo_qwen3vl_gpu.toml")
    assert (config.engine.backend, config.engine.zero_stage, config.engine.precision) == (
        "deepspeed",
        3,
        "bf16",
    )
    with pytest.raises(
        HFConfigError, match="cannot load a Qwen-VL checkpoint from '/models/Qwen3-VL-8B-Instruct'"
    ):
        build_policy(config)


def test_a_prompt_over_the_cap_gets_an_empty_cut_off_reply_and_trains_nothing(rolled, tmp_path):
    policy, trainer, groups = rolled
    short, long = groups[0][0].samples[0].prompt_ids, groups[0][0].samples[1].prompt_ids
    assert len(short) < len(long)  # the second step's context holds the first step
    cap, policy.max_prompt_tokens = policy.max_prompt_tokens, len(short)
    try:
        both = policy.sample([long, short], 1.0, torch.Generator().manual_seed(3))
        alone = policy.sample([short], 1.0, torch.Generator().manual_seed(3))
        batch = {"prompts": [long, short], "responses": [[], alone[0].ids], "old": [[], alone[0].logprobs]}
        micro = trainer._micro_batches({**batch, "advantages": [1.0, -1.0]})
    finally:
        policy.max_prompt_tokens = cap
    assert (both[0].ids, both[0].logprobs, both[0].finish_reason) == ([], [], "length")
    assert both[1] == alone[0]  # the fitting row samples as it would alone
    assert [m["responses"] for m in micro] == [[alone[0].ids]]  # the empty reply is left out
    assert micro[0]["advantages"][0, 0] == -1.0


def test_chunked_log_probs_and_their_gradient_match_one_log_softmax():
    logits = torch.randn(2, 5, 11, dtype=torch.float64, requires_grad=True)
    ids = torch.randint(0, 11, (2, 5))
    ids[0, 0] = 3  # a banned id: -inf, as the sampler never draws it
    banned = [3]
    want = torch.log_softmax(logits.masked_fill(torch.arange(11) == 3, float("-inf")) / 0.7, -1)
    want = want.gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    got = token_logprobs(logits, ids, 0.7, banned, chunk=4)  # 2 positions per chunk: 3 chunks
    assert torch.allclose(got, want.float())
    weights = torch.rand(2, 5).masked_fill(ids == 3, 0.0)
    (grad_got,) = torch.autograd.grad((got.nan_to_num(0.0, neginf=0.0) * weights).sum(), logits)
    (grad_want,) = torch.autograd.grad((want.nan_to_num(0.0, neginf=0.0) * weights).sum(), logits)
    assert torch.allclose(grad_got, grad_want.to(grad_got.dtype), atol=1e-6)

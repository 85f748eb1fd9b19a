"""grpo-train sft on the tiny Qwen3-VL: the loss falls, a resumed run repeats the updates exactly,
and the checkpoint loads as hf:PATH in hybrid_agent and starts a GRPO run.

The data is a run recorded by hybrid_agent's runner over the toy spreadsheet (sft_setup): 9 samples.
"""

import pytest

pytest.importorskip("peft")

import itertools

import gymnasium as gym
import torch
from grpo_trainer.cli import build_policy, main
from grpo_trainer.config import EngineSettings, GRPOConfig
from grpo_trainer.rollouts.vector import make_group_env
from grpo_trainer.sft.dataset import SFTDataset
from grpo_trainer.sft.settings import SFTSettings
from grpo_trainer.sft.trainer import SFTTrainer, optimizer_config, update_batches
from grpo_trainer.training.optim import lr_schedule
from grpo_trainer.training.trainer import Trainer
from hybrid_agent.policies import PolicyOptions, make_policy
from sft_setup import GUI_SCRIPT, record_toy_run, toy_catalog
from tiny_vlm import saved_tiny_vlm
from update_setup import LORA, logits, vlm_config

CPU = PolicyOptions(max_tokens=8, extra={"device": "cpu", "dtype": "float32"})


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return saved_tiny_vlm(tmp_path_factory.mktemp("base"))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return record_toy_run(tmp_path_factory.mktemp("recorded"))


def sft_config(base, run_dir, out, **sft):
    settings = {"lr": 3e-2, "epochs": 6, "batch_size": 9, "micro_batch_size": 4, "save_every": 2, **sft}
    return GRPOConfig(
        policy=base,
        engine=EngineSettings(backend="torch", precision="fp32", output_dir=str(out)),
        sft=SFTSettings(runs=(str(run_dir),), **settings),
    )


def trainer(config, **model):
    if model:
        config = GRPOConfig.from_dict({**config.to_dict(), "model": model})
    policy = build_policy(config)
    data = SFTDataset(policy, config.agent, config.sft, policy.module.config.image_token_id, toy_catalog())
    data.add_runs(config.sft.runs)
    return SFTTrainer(config, policy, data, config.engine.output_dir)


def test_schedule_batches_and_warmup_follow_the_sft_section():
    settings = SFTSettings(epochs=2, batch_size=4)
    batches = update_batches(9, settings, seed=3)
    assert [len(b) for b in batches] == [4, 4, 1, 4, 4, 1]
    assert (
        sorted(i for b in batches[:3] for i in b)
        == list(range(9))
        == sorted(i for b in batches[3:] for i in b)
    )
    assert batches == update_batches(9, settings, seed=3) and batches != update_batches(9, settings, seed=4)
    # 10 % of 20 updates warm up linearly, then cosine to 0 (defaults lr 1e-5, cosine).
    config = optimizer_config(GRPOConfig(), updates=20)
    assert (config.optim.lr, config.optim.warmup_steps, config.optim.total_steps) == (1e-5, 2, 20)
    factor = lr_schedule(config)
    assert [factor(0), factor(1), factor(2)] == [0.5, 1.0, 1.0]
    assert factor(11) == pytest.approx(0.5)


def test_sft_lowers_the_loss_and_its_export_loads_as_hf_and_starts_grpo(base, run_dir, tmp_path):
    run = trainer(sft_config(base, run_dir, tmp_path / "sft"))
    losses = [m["sft/loss"] for m in run.train()]
    print("sft loss per update:", [round(x, 4) for x in losses])
    assert len(losses) == 6
    assert losses[-1] < 0.7 * losses[0]
    assert all(b < a for a, b in itertools.pairwise(losses))
    exported = tmp_path / "sft" / "hf"
    assert (exported / "config.json").is_file()
    inputs = run.policy._inputs([run.dataset.prompt(4)])
    want = logits(run.policy.module.eval(), inputs)
    agent = make_policy(f"hf:{exported}", CPU)  # hybrid_agent's evaluator loads it
    assert torch.allclose(logits(agent.model, inputs), want, atol=1e-5)
    grpo = vlm_config(policy=f"hf:{exported}")
    policy = build_policy(grpo)
    assert torch.allclose(logits(policy.module, inputs), want, atol=1e-5)
    venv = make_group_env(lambda: gym.make(grpo.env_id, max_steps=2), 2)
    try:
        grpo_run = Trainer(grpo, policy, venv, tmp_path / "grpo")
        grpo_run.train_step()  # a GRPO step from the SFT weights: rollouts, update, checkpoint
    finally:
        venv.close()
    assert grpo_run.step == 1 and (tmp_path / "grpo" / "checkpoints" / "latest").is_file()


def test_a_resumed_run_repeats_the_updates_exactly(base, run_dir, tmp_path):
    whole = trainer(sft_config(base, run_dir, tmp_path / "whole", epochs=4, export=False))
    whole.train()
    config = sft_config(base, run_dir, tmp_path / "parts", epochs=4, export=False)
    first = trainer(config)
    first.train_update()
    first.train_update()
    resumed = trainer(config)  # a fresh process would build the same; it finds the checkpoint of update 2
    assert resumed.update == 2
    resumed.train()
    for (name, a), (_, b) in zip(
        whole.policy.module.state_dict().items(), resumed.policy.module.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), name


def test_lora_sft_exports_merged_weights(base, run_dir, tmp_path):
    lora = {"lora": {"r": LORA.r, "alpha": LORA.alpha, "target_modules": list(LORA.target_modules)}}
    run = trainer(sft_config(base, run_dir, tmp_path / "lora", epochs=2), **lora)
    losses = [m["sft/loss"] for m in run.train()]
    assert losses[-1] < losses[0]
    inputs = run.policy._inputs([run.dataset.prompt(0)])
    want = logits(run.policy.module.eval(), inputs)
    merged = make_policy(f"hf:{tmp_path / 'lora' / 'hf'}", CPU)
    assert torch.allclose(logits(merged.model, inputs), want, atol=1e-5)


def test_dry_run_prints_the_dataset_summary(base, tmp_path, capsys):
    recorded = record_toy_run(tmp_path / "gui", {0: GUI_SCRIPT, 1: GUI_SCRIPT}, gui_only=True)
    config = tmp_path / "sft.toml"
    config.write_text(
        f'policy = "{base}"\n[engine]\nbackend = "torch"\nprecision = "fp32"\n'
        f'output_dir = "{tmp_path / "out"}"\n[sft]\nruns = ["{recorded}"]\n'
    )
    assert main(["sft", "--config", str(config), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "samples: 4 from 2 successful trajectories (2 episodes read)" in out
    assert "dropped over the token limit: 0; replies that executed nothing: 0" in out
    assert "visual tokens per frame: current 4-4, previous 4-4" in out
    assert "context rule: win31+images+downscale; optimizer updates: 2" in out
    assert not (tmp_path / "out").exists()

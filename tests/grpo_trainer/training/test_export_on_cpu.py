"""grpo-train export: a trained tiny Qwen3-VL checkpoint as a Hugging Face directory that hf:PATH loads.

The run starts from a saved tiny Qwen3-VL (``hf:BASE``), trains on the toy env with
advantages the test assigns, checkpoints, and exports; the exported model must give the
trained model's logits through hybrid_agent's hf: loader and through the trainer's.
"""

import pytest

pytest.importorskip("peft")

import grpo_trainer  # noqa: F401  (registers the toy env)
import gymnasium as gym
import torch
from grpo_trainer.cli import build_policy, main
from grpo_trainer.errors import ConfigError
from grpo_trainer.rollouts.vector import make_group_env
from grpo_trainer.training.export import export_hf
from grpo_trainer.training.trainer import Trainer
from hybrid_agent.policies import PolicyOptions, make_policy
from peft import PeftModel
from tiny_vlm import saved_tiny_vlm
from transformers import AutoModelForImageTextToText
from update_setup import LORA, logits, signed_updates, vlm_config

CPU = PolicyOptions(max_tokens=8, extra={"device": "cpu", "dtype": "float32"})


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return saved_tiny_vlm(tmp_path_factory.mktemp("base"))


def _trained(base: str, run, **model):
    """A checkpointed run of two updates; returns the trained policy and the model inputs of its batch."""
    config = vlm_config(policy=base, **model)
    policy = build_policy(config)
    venv = make_group_env(lambda: gym.make(config.env_id, max_steps=2), 2)
    try:
        trainer = Trainer(config, policy, venv, run)
        batch = signed_updates(trainer, updates=2)
        trainer.step += 1
        trainer.save()
    finally:
        venv.close()
    return policy, policy._inputs(batch["prompts"][:2])


def test_full_export_loads_through_hf_and_gives_the_trained_logits(base, tmp_path):
    policy, inputs = _trained(base, tmp_path / "run")
    want = logits(policy.module.eval(), inputs)
    untrained = make_policy(base, CPU)
    assert not torch.allclose(logits(untrained.model, inputs), want)  # training moved the logits
    out = tmp_path / "exported"
    assert (
        main(["export", "--checkpoint", str(tmp_path / "run"), "--out", str(out), "--dtype", "float32"]) == 0
    )
    agent = make_policy(f"hf:{out}", CPU)  # hybrid_agent's hf: loader
    assert torch.allclose(logits(agent.model, inputs), want, atol=1e-6)
    again = build_policy(vlm_config(policy=f"hf:{out}"))  # the trainer's hf: loader
    assert torch.allclose(logits(again.module.eval(), inputs), want, atol=1e-6)
    assert {"config.json", "model.safetensors", "tokenizer.json", "processor_config.json"} <= {
        p.name for p in out.iterdir()
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exported", "run"]  # no temp dir left behind
    with pytest.raises(ConfigError, match="exists"):
        export_hf(tmp_path / "run", out)
    with pytest.raises(ConfigError, match="no \\[model\\] lora"):
        export_hf(tmp_path / "run", tmp_path / "merged", merge_lora=True)


def test_merged_lora_export_equals_the_adapter_models_logits(base, tmp_path):
    policy, inputs = _trained(base, tmp_path / "run", lora=LORA)
    assert isinstance(policy.module, PeftModel)
    want = logits(policy.module.eval(), inputs)
    merged = export_hf(tmp_path / "run" / "checkpoints" / "step_1.pt", tmp_path / "merged", True, "float32")
    assert not (merged / "adapter_config.json").exists()
    assert torch.allclose(logits(make_policy(f"hf:{merged}", CPU).model, inputs), want, atol=1e-5)
    adapter = export_hf(tmp_path / "run", tmp_path / "adapter", dtype="float32")
    assert {"adapter_config.json", "adapter_model.safetensors"} <= {p.name for p in adapter.iterdir()}
    assert not (adapter / "model.safetensors").exists()  # the adapters alone
    fresh = AutoModelForImageTextToText.from_pretrained(base[3:], dtype=torch.float32)
    assert torch.allclose(logits(PeftModel.from_pretrained(fresh, adapter).eval(), inputs), want, atol=1e-6)

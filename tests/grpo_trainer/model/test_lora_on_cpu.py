"""[model] on the tiny Qwen3-VL: LoRA trains the adapters alone and resumes them exactly; gradient
checkpointing changes neither the loss nor the gradients."""

import dataclasses

import pytest

pytest.importorskip("peft")

import grpo_trainer  # noqa: F401  (registers the toy env)
import gymnasium as gym
import torch
from grpo_trainer.errors import ConfigError
from grpo_trainer.model.setup import prepare_policy
from grpo_trainer.model.tiny import TinyPolicy
from grpo_trainer.model.toy_menu import MENU
from grpo_trainer.rollouts.vector import make_group_env
from grpo_trainer.training.trainer import Trainer
from hybrid_agent.messages import image_part, text_part
from peft import PeftModel
from PIL import Image
from tiny_vlm import tiny_vlm_policy
from update_setup import LORA, signed_updates, vlm_config


@pytest.fixture
def venv():
    envs = make_group_env(lambda: gym.make("grpo_trainer:ToolOrGui-v0", max_steps=2), 2)
    yield envs
    envs.close()


def _weights(module, trainable: bool) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in module.named_parameters() if p.requires_grad == trainable}


def test_lora_trains_only_the_adapters_and_resumes_them_exactly(tmp_path, venv):
    config = vlm_config(lora=LORA)
    policy = tiny_vlm_policy(max_new_tokens=8)
    trainer = Trainer(config, policy, venv, tmp_path)
    assert isinstance(policy.module, PeftModel)
    base, adapters = _weights(policy.module, False), _weights(policy.module, True)
    assert adapters and all(".lora_A." in n or ".lora_B." in n for n in adapters)
    assert {n.split(".")[-4] for n in adapters} == {"q_proj", "v_proj", "gate_proj"}
    # Two updates: after the first the B matrices (initialised at 0) are non-zero, so A gets a gradient too.
    signed_updates(trainer, updates=2)
    after = _weights(policy.module, False)
    assert after.keys() == base.keys()
    assert all(torch.equal(after[n], base[n]) for n in base)  # base weights bit-identical
    trained = _weights(policy.module, True)
    assert all(not torch.equal(trained[n], adapters[n]) for n in adapters)  # every adapter moved
    trainer.step += 1
    path = trainer.save()
    saved = torch.load(path, weights_only=False)
    assert saved["model"].keys() == trained.keys()  # the checkpoint holds the adapters alone

    again = tiny_vlm_policy(max_new_tokens=8)
    resumed = Trainer(config, again, venv, tmp_path)
    assert resumed.step == 1
    assert all(torch.equal(p, trained[n]) for n, p in _weights(again.module, True).items())
    assert all(torch.equal(p, base[n]) for n, p in _weights(again.module, False).items())
    moments = [
        resumed.backend.optimizer.state[p]["exp_avg"] for p in again.module.parameters() if p.requires_grad
    ]
    want = [
        trainer.backend.optimizer.state[p]["exp_avg"] for p in policy.module.parameters() if p.requires_grad
    ]
    assert all(torch.equal(a, b) for a, b in zip(moments, want, strict=True))


def test_a_checkpoint_of_another_lora_setting_is_refused(tmp_path, venv):
    trainer = Trainer(vlm_config(lora=LORA), tiny_vlm_policy(max_new_tokens=8), venv, tmp_path)
    path = trainer.save()
    full = Trainer(vlm_config(), tiny_vlm_policy(max_new_tokens=8), venv, tmp_path / "full")
    with pytest.raises(Exception, match="does not fit the model"):
        full.backend.load(path.parent, path.name)


def test_lora_and_checkpointing_need_a_transformers_policy():
    with pytest.raises(ConfigError, match="need an hf: policy"):
        prepare_policy(TinyPolicy(MENU), vlm_config(lora=LORA))
    with pytest.raises(ConfigError, match="need an hf: policy"):
        prepare_policy(TinyPolicy(MENU), vlm_config(gradient_checkpointing=True))
    prepare_policy(TinyPolicy(MENU), vlm_config())  # in-code default: checkpointing off, full fine-tuning


def test_checkpointing_is_on_by_default_for_hf_checkpoints_only():
    assert vlm_config(policy="hf:/models/x").model.checkpointing("hf:/models/x")
    assert not vlm_config().model.checkpointing("tiny")
    assert not dataclasses.replace(vlm_config().model, gradient_checkpointing=False).checkpointing("hf:/m")


def _loss_and_grads(lora, checkpointing: bool):
    policy = tiny_vlm_policy()
    prepare_policy(policy, vlm_config(lora=lora, gradient_checkpointing=checkpointing))
    if lora is not None:  # B starts at 0, which leaves A without a gradient: give B values
        torch.manual_seed(1)
        for name, param in sorted(policy.module.named_parameters()):
            if ".lora_B." in name:
                param.data.normal_()
    mlp = next(m for n, m in policy.module.named_modules() if n.endswith("layers.0.mlp"))
    calls = []
    # A pre-hook: the recompute stops early, inside the layer's last module, once it has rebuilt
    # every tensor the backward needs, so a forward hook would not see it end.
    mlp.register_forward_pre_hook(lambda *args: calls.append(1))
    image = Image.new("RGB", (64, 64), (200, 30, 90))
    prompt = policy.encode([{"role": "user", "content": [image_part(image), text_part("click the cell A1")]}])
    response = policy.processor.tokenizer("Action: click the cell", add_special_tokens=False)["input_ids"]
    loss = policy.logprobs([prompt], [response], 1.0).sum()
    loss.backward()
    grads = {n: p.grad for n, p in policy.module.named_parameters() if p.requires_grad}
    return float(loss.detach()), grads, len(calls)


@pytest.mark.parametrize("lora", [None, LORA], ids=["full", "lora"])
def test_gradient_checkpointing_gives_the_same_loss_and_gradients(lora):
    loss, grads, plain_calls = _loss_and_grads(lora, checkpointing=False)
    loss_ckpt, grads_ckpt, ckpt_calls = _loss_and_grads(lora, checkpointing=True)
    assert (plain_calls, ckpt_calls) == (1, 2)  # the checkpointed layer ran again in the backward pass
    assert loss_ckpt == pytest.approx(loss, rel=1e-6)
    assert grads.keys() == grads_ckpt.keys()
    assert all(g is not None and g.abs().sum() > 0 for g in grads_ckpt.values())
    for name, grad in grads.items():
        assert torch.allclose(grads_ckpt[name], grad, rtol=1e-5, atol=1e-7), name


DS_LORA = """
import sys
from pathlib import Path
import gymnasium as gym, torch
import grpo_trainer
from grpo_trainer.cli import build_policy
from grpo_trainer.training.trainer import Trainer
from grpo_trainer.rollouts.vector import make_group_env
from tiny_vlm import saved_tiny_vlm
from update_setup import LORA, logits, signed_updates, vlm_config

root, phase = Path(sys.argv[1]), sys.argv[2]
base = saved_tiny_vlm(root / "base")  # the same seeded weights in both phases
config = vlm_config(policy=base, backend="deepspeed", lora=LORA, gradient_checkpointing=True)
policy = build_policy(config)
venv = make_group_env(lambda: gym.make(config.env_id, max_steps=2), 2)
trainer = Trainer(config, policy, venv, root / "run")
if phase == "train":
    batch = signed_updates(trainer, updates=2)
    trainer.step += 1
    trainer.save()
    torch.save(policy._inputs(batch["prompts"][:2]), root / "inputs.pt")
inputs = torch.load(root / "inputs.pt", weights_only=False)
with trainer.backend.generation():  # every ZeRO-3 partition gathered
    named = dict(policy.module.named_parameters())
    weights = {n: p.detach().clone() for n, p in named.items()}
    trainable = sorted(n for n, p in named.items() if p.requires_grad)
    out = logits(policy.module.eval(), inputs)
result = {"step": trainer.step, "weights": weights, "trainable": trainable, "logits": out}
torch.save(result, root / f"{phase}.pt")
venv.close()
"""


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_lora_with_checkpointing_under_zero3_trains_the_adapters_resumes_and_exports(tmp_path):
    from ds_launch import one_rank
    from grpo_trainer.training.export import export_hf
    from hybrid_agent.policies import PolicyOptions, make_policy
    from tiny_vlm import register_processor
    from update_setup import logits

    for phase in ("train", "resume"):
        done = one_rank(DS_LORA, [str(tmp_path), phase], timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
    trained, resumed = (torch.load(tmp_path / f"{p}.pt", weights_only=False) for p in ("train", "resume"))
    assert (trained["step"], resumed["step"]) == (1, 1)
    adapters = trained["trainable"]
    assert adapters and all(".lora_" in n for n in adapters)
    for name, weight in trained["weights"].items():
        # The resumed run has the trained adapters exactly and the untouched base (read from hf:BASE).
        assert torch.equal(resumed["weights"][name], weight), name
        if ".lora_B." in name:
            assert weight.abs().sum() > 0  # B starts at 0: the updates moved it
    assert torch.equal(trained["logits"], resumed["logits"])
    assert resumed["weights"].keys() == trained["weights"].keys()
    register_processor()
    out = export_hf(tmp_path / "run", tmp_path / "merged", merge_lora=True, dtype="float32")
    agent = make_policy(f"hf:{out}", PolicyOptions(extra={"device": "cpu", "dtype": "float32"}))
    inputs = torch.load(tmp_path / "inputs.pt", weights_only=False)
    assert torch.allclose(logits(agent.model, inputs), trained["logits"], atol=1e-5)


def test_checkpointing_falls_back_to_the_older_transformers_name(monkeypatch):
    """transformers before 5.23 (the GPU image's 5.17) has gradient_checkpointing_enable only."""
    from transformers import PreTrainedModel

    enable = PreTrainedModel.activation_checkpointing_enable
    asked = []

    def older(self, gradient_checkpointing_kwargs=None):
        asked.append(gradient_checkpointing_kwargs)
        enable(self, activation_checkpointing_kwargs=gradient_checkpointing_kwargs)

    monkeypatch.delattr(PreTrainedModel, "activation_checkpointing_enable")
    monkeypatch.setattr(PreTrainedModel, "gradient_checkpointing_enable", older)
    _, _, calls = _loss_and_grads(None, checkpointing=True)
    assert asked == [{"use_reentrant": False}]
    assert calls == 2  # the layer ran again in the backward pass

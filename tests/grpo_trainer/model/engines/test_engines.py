"""The rollout engine registry: hf is the policy's own sampling; vllm refuses clearly where it cannot run."""

import dataclasses
import importlib.util

import pytest
import torch
from grpo_trainer.config import GRPOConfig, RolloutSettings
from grpo_trainer.errors import ConfigError
from grpo_trainer.model.engines import RolloutEngine, make_engine
from grpo_trainer.model.engines.hf import HFEngine
from grpo_trainer.model.engines.vllm import VLLMMissing
from grpo_trainer.model.tiny import TinyPolicy
from grpo_trainer.model.toy_menu import MENU


def test_the_hf_engine_samples_what_the_policy_samples():
    policy = TinyPolicy(MENU, seed=0)
    engine = make_engine(GRPOConfig(), policy)
    assert isinstance(engine, HFEngine) and isinstance(engine, RolloutEngine) and engine.shares_weights
    prompts = [list(b"<user>put 5 in A1<assistant>")] * 3
    mine = engine.sample(prompts, 1.0, torch.Generator().manual_seed(4))
    theirs = policy.sample(prompts, 1.0, torch.Generator().manual_seed(4))
    assert mine == theirs and engine.sync_weights(policy) == {}


def test_vllm_needs_an_hf_checkpoint():
    config = dataclasses.replace(GRPOConfig(), rollout=RolloutSettings(engine="vllm"))
    with pytest.raises(ConfigError, match="needs an hf:PATH policy"):
        make_engine(config, TinyPolicy(MENU))


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_without_vllm_the_error_says_what_to_install(tmp_path):
    config = dataclasses.replace(GRPOConfig(policy=f"hf:{tmp_path}"), rollout=RolloutSettings(engine="vllm"))
    with pytest.raises(VLLMMissing, match="pip install vllm"):
        make_engine(config, TinyPolicy(MENU))

"""The torch backend computes sampling and updates in one precision, on the module's device."""

import torch
from grpo_trainer.config import EngineSettings, GRPOConfig
from grpo_trainer.training.backend import TorchBackend


def _backend(precision: str, module: torch.nn.Module) -> TorchBackend:
    return TorchBackend(GRPOConfig(engine=EngineSettings(backend="torch", precision=precision)), module)


def test_bf16_autocasts_the_rollouts_as_well_as_the_update():
    # Rollout log-probs from the precision the update computes in: the first update's ratios are 1.
    module = torch.nn.Linear(4, 4)
    backend = _backend("bf16", module)
    for context in (backend.generation(), backend.forward()):
        with context:
            assert module(torch.ones(1, 4)).dtype == torch.bfloat16
    assert module.weight.dtype == torch.float32  # the master weights stay fp32


def test_fp32_computes_in_fp32():
    module = torch.nn.Linear(4, 4)
    backend = _backend("fp32", module)
    for context in (backend.generation(), backend.forward()):
        with context:
            assert module(torch.ones(1, 4)).dtype == torch.float32

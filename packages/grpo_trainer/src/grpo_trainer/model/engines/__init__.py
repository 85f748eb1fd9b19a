"""Rollout engines: what samples the rollouts' tokens, beside the model the trainer updates.

``[rollout] engine`` names one. ``hf`` (:mod:`grpo_trainer.model.engines.hf`) is the trained
policy's own ``generate`` in this process: CPU, tests, small runs. ``vllm``
(:mod:`grpo_trainer.model.engines.vllm`) is a colocated vLLM engine on the same GPU, asleep while
the trainer updates and handed the new weights after each update phase. Either way the
rollout stores the prompt ids the policy encoded and the response ids and log-probs the
engine returned: those are the truth training and ``[engine] replay_check`` use.

Every engine has one signature (:class:`RolloutEngine`), built by one factory type
(:data:`EngineFactory`), so the Trainer never branches on the name.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from osworld_mcp_env.registry import Registry

from grpo_trainer.errors import RegistryError
from grpo_trainer.model.policy import Sampled, TrainablePolicy

if TYPE_CHECKING:
    from grpo_trainer.config import GRPOConfig
    from grpo_trainer.training.backend import Backend

__all__ = ["ENGINES", "EngineFactory", "RolloutEngine", "make_engine", "register_engine"]


@runtime_checkable
class RolloutEngine(Protocol):
    """Samples responses for the rollouts and follows the trained weights.

    Attributes:
        shares_weights: The engine runs the trained module itself, so its log-probs are the
            trainer's (no gap to measure or correct).
    """

    shares_weights: bool

    def sample(self, prompts: Sequence[list[int]], temperature: float, generator: Any) -> list[Sampled]:
        """One response per prompt (ids, their sampling log-probs, text, finish reason)."""
        ...

    def generating(self, backend: Backend) -> contextlib.AbstractContextManager[None]:
        """What holds while one step's rollouts run (full weights gathered, or the engine awake)."""
        ...

    def sync_weights(self, module: Any) -> dict[str, float]:
        """Hands the trained ``module``'s weights to the engine after an update phase; returns metrics."""
        ...


EngineFactory = Callable[["GRPOConfig", TrainablePolicy], RolloutEngine]
"""``(config, rollout_policy) -> engine``: the engine of a run, sampling for that policy's prompts."""

ENGINES: Registry[EngineFactory] = Registry(
    "rollout engine",
    error=RegistryError,
    providers=("grpo_trainer.model.engines.hf", "grpo_trainer.model.engines.vllm"),
)
"""Rollout engines by ``[rollout] engine`` name."""


def register_engine(name: str, factory: EngineFactory) -> None:
    """Registers a rollout engine; a duplicate name raises."""
    ENGINES.add(name, factory)


def make_engine(config: GRPOConfig, policy: TrainablePolicy) -> RolloutEngine:
    """The run's ``[rollout] engine`` for ``policy`` (the one rollouts encode prompts with)."""
    return ENGINES.get(config.rollout.engine)(config, policy)

"""``[rollout] engine = "hf"``: the trained policy samples its own rollouts in this process.

Sampling is the policy's :meth:`~grpo_trainer.model.policy.TrainablePolicy.sample` (for ``hf:PATH``,
:meth:`grpo_trainer.model.hf_policy.HFTrainablePolicy.sample`: ``generate`` with the recorded
sampling law), with the backend's full weights gathered for the step's rollouts (ZeRO-3).
The module it runs is the trained one (sync mode) or the async copy the Trainer publishes
weights to, so there is nothing to hand over after an update.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from grpo_trainer.model.engines import register_engine
from grpo_trainer.model.policy import Sampled, TrainablePolicy

if TYPE_CHECKING:
    from grpo_trainer.config import GRPOConfig
    from grpo_trainer.training.backend import Backend


class HFEngine:
    """The policy's own sampling behind the :class:`~grpo_trainer.model.engines.RolloutEngine` interface."""

    shares_weights = True

    def __init__(self, policy: TrainablePolicy) -> None:
        """Samples with ``policy``."""
        self.policy = policy

    def sample(self, prompts: Sequence[list[int]], temperature: float, generator: Any) -> list[Sampled]:
        """The policy's samples (one batched ``generate`` for ``hf:`` policies)."""
        return self.policy.sample(prompts, temperature, generator)

    def generating(self, backend: Backend) -> contextlib.AbstractContextManager[None]:
        """The backend's full weights (ZeRO-3 gathers them) for the rollout."""
        return backend.generation()

    def sync_weights(self, module: Any) -> dict[str, float]:
        """Nothing to do: the engine runs the module the Trainer updates or publishes to."""
        return {}


def _hf(config: GRPOConfig, policy: TrainablePolicy) -> HFEngine:
    return HFEngine(policy)


register_engine("hf", _hf)

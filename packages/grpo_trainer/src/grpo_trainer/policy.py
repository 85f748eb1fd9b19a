"""What the trainer needs from a trainable policy: encode a context, sample, score responses.

The rollout stores the prompt ids :meth:`TrainablePolicy.encode` gave and the response
ids and log-probabilities :meth:`TrainablePolicy.sample` gave; training rebuilds the
messages from the episode record, encodes them again and asks
:meth:`TrainablePolicy.logprobs` for differentiable log-probabilities of the same
response ids. Rollouts sample through a :class:`VersionedPolicy`, which says which
weights each model call used.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from hybrid_agent.messages import Message


@dataclass(frozen=True)
class Sampled:
    """One generated response: its token ids, their log-probabilities, and the text."""

    ids: list[int]
    logprobs: list[float]
    text: str


@runtime_checkable
class TrainablePolicy(Protocol):
    """A policy GRPO can train.

    The trainer hands :meth:`sample` and :meth:`logprobs` the very objects :meth:`encode`
    returned, so a policy whose model needs more than ids (a VLM's pixels) may return a
    ``list[int]`` subclass that carries it (:class:`grpo_trainer.hf_policy.VisionPrompt`);
    replay compares them as plain lists.
    """

    @property
    def module(self) -> Any:
        """The ``torch.nn.Module`` whose parameters are trained (the backend wraps it)."""
        ...

    def encode(self, messages: Sequence[Message]) -> list[int]:
        """The prompt token ids of a context (with the generation prompt)."""
        ...

    def sample(self, prompts: Sequence[list[int]], temperature: float, generator: Any) -> list[Sampled]:
        """Samples one response per prompt with ``generator`` (a ``torch.Generator``)."""
        ...

    def logprobs(
        self, prompts: Sequence[list[int]], responses: Sequence[list[int]], temperature: float
    ) -> Any:
        """``(B, L)`` log-probs of ``responses`` at ``temperature`` (0 past each end), differentiable."""
        ...


class VersionedPolicy:
    """The policy rollouts sample from, and the version of the weights each model call used.

    A version counts the update phases (training steps that changed the weights) the
    weights went through. In sync mode the rollout policy is the trained one and
    :meth:`publish` only moves the counter. In async mode it is a copy that the learner
    refreshes with :meth:`publish` while rollouts go on; the copy happens between two
    model calls (a lock covers each call), so every call samples from one whole set of
    weights and reports which: a step's ``policy_version`` and its recorded
    ``old_logprobs`` belong together.
    """

    def __init__(self, policy: TrainablePolicy, version: int = 0) -> None:
        """Wraps ``policy``, whose current weights are ``version``."""
        self.policy = policy
        self._version = version
        self._lock = threading.Lock()

    @property
    def version(self) -> int:
        """The version of the weights the next model call uses."""
        return self._version

    def encode(self, messages: Sequence[Message]) -> list[int]:
        """The wrapped policy's prompt ids (tokenisation does not read the weights)."""
        return self.policy.encode(messages)

    def sample(
        self, prompts: Sequence[list[int]], temperature: float, generator: Any
    ) -> tuple[list[Sampled], int]:
        """One model call of the wrapped policy, and the version of the weights it used."""
        with self._lock:
            return self.policy.sample(prompts, temperature, generator), self._version

    def publish(self, version: int, weights: Mapping[str, Any] | None = None) -> None:
        """Makes ``version`` current once the model call in progress returns.

        Args:
            version: The new version.
            weights: The trained module's ``state_dict()``, loaded into this policy's module;
                ``None`` when the trained module is this policy's own (sync mode).
        """
        with self._lock:
            if weights is not None:
                self.policy.module.load_state_dict(weights)
            self._version = version

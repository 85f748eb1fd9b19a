"""What the trainer needs from a trainable policy: encode a context, sample, score responses.

The rollout stores the prompt ids :meth:`TrainablePolicy.encode` gave and the response
ids and log-probabilities :meth:`TrainablePolicy.sample` gave; training rebuilds the
messages from the episode record, encodes them again and asks
:meth:`TrainablePolicy.logprobs` for differentiable log-probabilities of the same
response ids.
"""

from __future__ import annotations

from collections.abc import Sequence
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

"""What the trainer needs from a trainable policy: encode a context, sample, score responses.

The rollout stores the prompt ids :meth:`TrainablePolicy.encode` gave (with the
multimodal inputs they carry) and the response ids and log-probabilities
:meth:`TrainablePolicy.sample` gave; training asks :meth:`TrainablePolicy.logprobs`
for differentiable log-probabilities of the same response ids after the same stored
prompt. Rollouts sample through a :class:`VersionedPolicy`, which says which weights
each model call used, and reach ``hybrid_agent``'s agent loop through
:class:`AgentPolicy`, the one adapter rollouts and probes share.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from hybrid_agent.messages import Message
from hybrid_agent.policies.base import FinishReason, Generation, PolicyRequest, TokenTrace

if TYPE_CHECKING:
    from grpo_trainer.model.inputs import InputCache


@dataclass(frozen=True)
class Sampled:
    """One generated response: its token ids, their log-probabilities, the text, and why it stopped.

    ``finish_reason`` is ``length`` when the response ran out of new tokens before its end:
    the agent loop then executes nothing for it.
    """

    ids: list[int]
    logprobs: list[float]
    text: str
    finish_reason: str = FinishReason.STOP


class Sampler(Protocol):
    """Whatever answers a batch of model calls: a trainable policy itself or a rollout engine."""

    def sample(self, prompts: Sequence[list[int]], temperature: float, generator: Any) -> list[Sampled]:
        """Samples one response per prompt with ``generator`` (a ``torch.Generator``)."""
        ...


@runtime_checkable
class TrainablePolicy(Protocol):
    """A policy GRPO can train.

    The trainer hands :meth:`sample` and :meth:`logprobs` the very objects :meth:`encode`
    returned, so a policy whose model needs more than ids (a VLM's pixels) may return a
    ``list[int]`` subclass that carries it (:class:`grpo_trainer.model.hf_policy.VisionPrompt`);
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


@runtime_checkable
class CachesInputs(Protocol):
    """A trainable policy that can keep its processed model inputs for one training batch.

    The trainer opens :meth:`cached_inputs` around a batch's scoring and updates, which
    score the same prompts several times (:mod:`grpo_trainer.model.inputs`).
    """

    def cached_inputs(self) -> AbstractContextManager[InputCache]:
        """Processes each prompt once until the block ends, then forgets them."""
        ...


class VersionedPolicy:
    """The policy rollouts sample from, and the version of the weights each model call used.

    A version counts the optimizer updates the weights went through (what
    ``[engine] max_staleness`` bounds). In sync mode the rollout policy is the trained one and
    :meth:`publish` only moves the counter. In async mode it is a copy that the learner
    refreshes with :meth:`publish` while rollouts go on; the copy happens between two
    model calls (a lock covers each call), so every call samples from one whole set of
    weights and reports which: a step's ``policy_version`` and its recorded
    ``old_logprobs`` belong together.
    """

    def __init__(self, policy: TrainablePolicy, version: int = 0, sampler: Sampler | None = None) -> None:
        """Wraps ``policy``, whose current weights are ``version``.

        ``sampler`` answers the model calls instead of ``policy`` (a rollout engine,
        :mod:`grpo_trainer.model.engines`); ``policy`` still encodes the prompts and owns the module.
        """
        self.policy = policy
        self.sampler: Sampler = sampler if sampler is not None else policy
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
            return self.sampler.sample(prompts, temperature, generator), self._version

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


class AgentPolicy:
    """A trainable policy behind ``hybrid_agent``'s :class:`~hybrid_agent.policies.base.Policy` interface.

    Rollouts and probes take their turns through :class:`hybrid_agent.agent_loop.AgentLoop`
    with this adapter: the prompt is :meth:`TrainablePolicy.encode` of the loop's context,
    token counts are the policy's own, and each :class:`Generation` carries the
    :class:`~hybrid_agent.policies.base.TokenTrace` a training sample keeps.
    """

    def __init__(
        self, policy: VersionedPolicy | TrainablePolicy, name: str, temperature: float, generator: Any
    ) -> None:
        """Wraps ``policy`` (a plain one is version 0); samples at ``temperature`` from ``generator``."""
        self.policy = policy if isinstance(policy, VersionedPolicy) else VersionedPolicy(policy)
        self.name = name
        self.temperature = temperature
        self.generator = generator

    def generate(self, requests: Sequence[PolicyRequest]) -> list[Generation]:
        """One batched sample for every request, in order."""
        started = time.perf_counter()
        prompts = [self.policy.encode(request.messages) for request in requests]
        sampled, version = self.policy.sample(prompts, self.temperature, self.generator)
        latency = (time.perf_counter() - started) / max(len(requests), 1)
        return [
            Generation(
                s.text,
                input_tokens=len(p),
                output_tokens=len(s.ids),
                latency_s=latency,
                finish_reason=s.finish_reason,
                trace=TokenTrace(p, s.ids, s.logprobs, version),
            )
            for p, s in zip(prompts, sampled, strict=True)
        ]

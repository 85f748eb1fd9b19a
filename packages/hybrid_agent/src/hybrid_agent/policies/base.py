"""The policy protocol: messages in, text + token usage + latency out; and the registry of policy kinds.

A policy answers a *batch* of requests, one per env that waits for a call, so a
local model can generate for every env at once and an HTTP client can send the
requests concurrently. A server that fails after its retries does not raise: its
:class:`Generation` carries ``error`` and the runner records the episode as an
error, apart from a score of 0.

Policies are named by a spec string (``scripted``, ``replay:DIR``,
``openai:URL#MODEL``, ``hf:PATH``, or ``pkg.module:Class`` for your own class);
:func:`make_policy` looks the prefix up in a registry, so adding a kind is one
``@register_policy`` and the runner never branches on a name.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from osworld_mcp_env.registry import Registry, unknown_name_message

from hybrid_agent.coords import CoordinatePolicy
from hybrid_agent.errors import ConfigError, RegistryError
from hybrid_agent.messages import Message
from hybrid_agent.toolset import ToolSpec

TOOL_CALL_STOP = "</tool_call>"
"""Where a one-call reply ends; generation stops there (servers leave the stop string out)."""


@dataclass(frozen=True)
class PolicyRequest:
    """What the policy gets for one env at one step.

    Attributes:
        messages: The context (``hybrid_agent.context.build_context(...).messages``).
        tools: The MCP tools shown this step (also rendered into the system message).
        task_id: The task of the episode (scripted and replay policies key on it).
        run: The run index of the episode (0-based).
        step: The model call index within the episode (0-based).
        functions: The run's model adapter's function schemas (``computer_use`` first, at the
            resolution the adapter maps from), for transports that send tools apart from the
            text; empty: the policy builds its own.
        stop: Strings that end the reply (the adapter's): ``</tool_call>`` for the families that
            make one call per reply; none for HybridCUA, whose replies hold several calls.
    """

    messages: list[Message]
    tools: tuple[ToolSpec, ...] = ()
    task_id: str = ""
    run: int = 0
    step: int = 0
    functions: tuple[dict[str, Any], ...] = ()
    stop: tuple[str, ...] = (TOOL_CALL_STOP,)


class FinishReason(StrEnum):
    """Why a generation stopped (OpenAI's ``finish_reason`` values; local models map onto them)."""

    STOP = "stop"  # end of turn or a stop string
    LENGTH = "length"  # the output budget ran out: the reply is cut off
    TOOL_CALLS = "tool_calls"  # function calling: the server parsed a call
    CONTENT_FILTER = "content_filter"


class GenerationErrorCode(StrEnum):
    """Why a policy gave no answer (``Generation.error_code``)."""

    TRANSPORT = "transport"  # connection refused or reset, timeout, a torn body
    HTTP = "http_error"  # a status the retries did not cure
    AUTH = "auth"  # 401/403: a missing or wrong API key
    CONTEXT_LENGTH = "context_length"  # the prompt does not fit the model's context
    MALFORMED_RESPONSE = "malformed_response"  # the server answered something that is not a completion
    SAFETY_CHECK = "safety_check"  # the provider flagged the action and acknowledging it was not configured


@dataclass(frozen=True)
class TokenTrace:
    """The tokens of one model call as the policy saw and produced them (trainable policies).

    Attributes:
        prompt_ids: The prompt token ids (a ``list[int]`` subclass may carry the multimodal
            inputs they were encoded from, e.g. ``grpo_trainer.model.hf_policy.VisionPrompt``).
        response_ids: The generated token ids.
        logprobs: Log-probabilities of ``response_ids`` under the sampling distribution.
        version: The version of the weights that generated them.
    """

    prompt_ids: list[int]
    response_ids: list[int]
    logprobs: list[float]
    version: int = 0


@dataclass(frozen=True)
class Generation:
    """One answer.

    Attributes:
        text: The raw model output (think, ``Action:`` line, ``<tool_call>``).
        input_tokens: Prompt tokens as the server/model counted them; ``None`` when unknown.
        cached_input_tokens: How many of ``input_tokens`` the server read from its prompt cache
            (priced lower by most APIs, :mod:`hybrid_agent.cost`); ``None`` when it did not say.
        output_tokens: Generated tokens; ``None`` when unknown.
        latency_s: Wall time of the call, retries included.
        error: Why no answer could be had (server down after retries); the episode
            becomes an error, never a score.
        tokens_estimated: True when the counts are estimates, not the model's own
            (a server that reported no ``usage``, the scripted policy).
        finish_reason: Why generation stopped (:class:`FinishReason`; ``None`` when unknown).
            ``length`` means the reply was cut off: it executes nothing.
        reasoning: The reasoning the server returned apart from the content
            (``reasoning_content`` of a server with a reasoning parser); ``None`` when none.
        error_code: With ``error``: which kind of failure (:class:`GenerationErrorCode`).
        trace: The call's tokens, for policies that train on them.
    """

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_s: float = 0.0
    cached_input_tokens: int | None = None
    error: str | None = None
    tokens_estimated: bool = False
    finish_reason: str | None = None
    reasoning: str | None = None
    error_code: str | None = None
    trace: TokenTrace | None = None

    @property
    def cut_off(self) -> bool:
        """The output budget ran out before the reply ended (``finish_reason == "length"``)."""
        return self.finish_reason == FinishReason.LENGTH


@runtime_checkable
class Policy(Protocol):
    """Anything that turns contexts into model outputs.

    Attributes:
        name: A short label stored with every run.
    """

    name: str

    def generate(self, requests: Sequence[PolicyRequest]) -> list[Generation]:
        """Answers each request, in order (one :class:`Generation` per request)."""
        ...


@dataclass(frozen=True)
class PolicyOptions:
    """Settings every policy kind may read; the CLI fills them from flags.

    Attributes:
        temperature: Sampling temperature (0: greedy, the evaluation default).
        max_tokens: Most tokens generated per call (the study's 8,192 per step).
        top_p: Nucleus sampling mass; ``None`` leaves the server's default.
        repetition_penalty: vLLM/SGLang/transformers repetition penalty; ``None``: not sent.
        seed: Sampling seed sent with every request; ``None``: not sent.
        extra_body: Extra request-body fields merged into every request
            (``{"chat_template_kwargs": {"enable_thinking": true}}``, ``mm_processor_kwargs`` ...).
        api_key_env: The environment variable holding the API key; ``None``: the kind's own
            (``OPENAI_API_KEY`` for ``openai:``/``openai-cua:``, ``ANTHROPIC_API_KEY`` for ``anthropic:``).
        timeout_s: HTTP timeout of one request.
        retries: Extra attempts after a failed HTTP request (server errors, timeouts).
        backoff_s: First retry delay; it doubles each retry.
        tool_format: ``text`` (Qwen's ``<tool_call>`` in the text) or ``functions``
            (OpenAI function calling; tool names are mapped reversibly).
        concurrency: HTTP requests in flight at once for one batch.
        extra: Kind-specific settings (e.g. ``{"device": "cuda"}`` for ``hf:``).
    """

    temperature: float = 0.0
    max_tokens: int = 8192
    top_p: float | None = None
    repetition_penalty: float | None = None
    seed: int | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)
    api_key_env: str | None = None
    timeout_s: float = 300.0
    retries: int = 4
    backoff_s: float = 1.0
    tool_format: str = "text"
    concurrency: int = 8
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.tool_format not in ("text", "functions"):
            raise ConfigError(f"tool_format must be 'text' or 'functions', got {self.tool_format!r}.")
        if self.retries < 0 or self.backoff_s < 0 or self.max_tokens < 1 or self.concurrency < 1:
            raise ConfigError("retries and backoff_s must be >= 0, max_tokens and concurrency >= 1.")


PolicyFactory = Callable[[str, PolicyOptions], Policy]
"""Builds a policy from the part of the spec after ``kind:`` (may be empty) and the options."""

POLICY_KINDS: Registry[PolicyFactory] = Registry("policy kind", error=RegistryError)
"""Policy factories by spec prefix (the part before ``:``)."""


def register_policy(kind: str) -> Callable[[PolicyFactory], PolicyFactory]:
    """Registers a policy kind (the spec prefix before ``:``).

    Raises:
        RegistryError: When ``kind`` is taken by another factory.
    """
    return POLICY_KINDS.register(kind)


def policy_kinds() -> tuple[str, ...]:
    """The registered spec prefixes, sorted."""
    return tuple(POLICY_KINDS.names())


def _import_class(spec: str) -> type:
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"Cannot import {module_name!r} for policy {spec!r}: {exc}.") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ConfigError(f"Module {module_name!r} has no {attr!r} (policy {spec!r}).") from None


def make_policy(spec: str, options: PolicyOptions | None = None) -> Policy:
    """Builds a policy from its spec string.

    ``scripted[:oracle|wrong|tools]``, ``replay:DIR``, ``openai:URL#MODEL``, ``hf:PATH``, or
    ``pkg.module:Class`` (a class whose no-argument constructor gives a :class:`Policy`).

    Raises:
        RegistryError: An unknown kind (the message lists the known ones).
        ConfigError: A custom class that cannot be imported or is not a policy.
    """
    options = options or PolicyOptions()
    kind, _, rest = spec.partition(":")
    if kind in POLICY_KINDS:
        return POLICY_KINDS.get(kind)(rest, options)
    if "." in kind and rest:
        policy = _import_class(spec)()
        if not isinstance(policy, Policy):
            raise ConfigError(f"{spec!r} is not a Policy: it needs a 'name' and a 'generate(requests)'.")
        return policy
    raise RegistryError(unknown_name_message("policy kind", kind, [*POLICY_KINDS, "pkg.module:Class"]))


def preferred_coordinates(policy: Policy) -> CoordinatePolicy | None:
    """The coordinate space a policy declares (``coordinates`` attribute), if any.

    The scripted policy emits screen pixels; model policies leave it to the run config.
    """
    value = getattr(policy, "coordinates", None)
    return CoordinatePolicy(value) if value is not None else None


def close_policy(policy: Policy) -> None:
    """Calls the policy's ``close()`` when it has one (HTTP pools, GPU memory)."""
    close = getattr(policy, "close", None)
    if callable(close):
        close()

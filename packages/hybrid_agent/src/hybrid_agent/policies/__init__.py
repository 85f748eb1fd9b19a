"""Policies: the model side of an episode, behind one protocol (:class:`Policy`).

Importing this package registers the built-in kinds: ``scripted``, ``replay``,
``openai``, ``openai-cua``, ``anthropic`` and ``hf`` (the SDK-backed kinds import their
client, and ``hf`` torch, only when used).
"""

from hybrid_agent.policies import anthropic, hf, openai, openai_cua, replay, scripted
from hybrid_agent.policies.base import (
    FinishReason,
    Generation,
    GenerationErrorCode,
    Policy,
    PolicyOptions,
    PolicyRequest,
    TokenTrace,
    close_policy,
    make_policy,
    policy_kinds,
    register_policy,
)

__all__ = [
    "FinishReason",
    "Generation",
    "GenerationErrorCode",
    "Policy",
    "PolicyOptions",
    "PolicyRequest",
    "TokenTrace",
    "anthropic",
    "close_policy",
    "hf",
    "make_policy",
    "openai",
    "openai_cua",
    "policy_kinds",
    "register_policy",
    "replay",
    "scripted",
]

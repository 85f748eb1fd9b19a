"""Policies: the model side of an episode, behind one protocol (:class:`Policy`).

Importing this package registers the built-in kinds: ``scripted``, ``replay``,
``openai`` and ``hf`` (the last imports torch only when used).
"""

from hybrid_agent.policies import hf, openai, replay, scripted
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
    "close_policy",
    "hf",
    "make_policy",
    "openai",
    "policy_kinds",
    "register_policy",
    "replay",
    "scripted",
]

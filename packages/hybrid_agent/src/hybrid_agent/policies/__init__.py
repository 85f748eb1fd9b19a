"""Policies: the model side of an episode, behind one protocol (:class:`Policy`).

Importing this package registers the built-in kinds: ``scripted``, ``replay``,
``openai`` and ``hf`` (the last imports torch only when used).
"""

from hybrid_agent.policies import hf, openai, replay, scripted
from hybrid_agent.policies.base import (
    Generation,
    Policy,
    PolicyOptions,
    PolicyRequest,
    close_policy,
    make_policy,
    policy_kinds,
    register_policy,
)

__all__ = [
    "Generation",
    "Policy",
    "PolicyOptions",
    "PolicyRequest",
    "close_policy",
    "hf",
    "make_policy",
    "openai",
    "policy_kinds",
    "register_policy",
    "replay",
    "scripted",
]

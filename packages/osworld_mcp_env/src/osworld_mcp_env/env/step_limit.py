"""``gym.make(..., max_episode_steps=n)`` as the env's own step budget, so a truncated episode is scored.

Gymnasium implements ``max_episode_steps`` with its ``TimeLimit`` wrapper, which
sets ``truncated`` above the env: the env never learns that the episode ended
and its evaluator never runs, so every such episode would end unscored. The
registration adds :class:`TimeLimitAsMaxSteps` above ``TimeLimit``; it hands the
limit to the env (``OSWorldMCPEnv.limit_steps``), whose own truncation at that
step evaluates the episode. ``TimeLimit`` stays and truncates at the same step.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.utils import RecordConstructorArgs

from osworld_mcp_env.env.core import OSWorldMCPEnv


class TimeLimitAsMaxSteps(gym.Wrapper[Any, Any, Any, Any], RecordConstructorArgs):
    """Passes ``gym.make``'s ``max_episode_steps`` down to the env's ``max_steps`` (the smaller wins).

    Raises:
        TypeError: The wrapped env is not an :class:`OSWorldMCPEnv`.
    """

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        RecordConstructorArgs.__init__(self)
        super().__init__(env)
        inner = env.unwrapped
        if not isinstance(inner, OSWorldMCPEnv):
            raise TypeError(f"TimeLimitAsMaxSteps wraps an OSWorldMCPEnv, got {type(inner).__name__}.")
        # TimeLimit's spec carries its limit; without TimeLimit it is None.
        limit = env.spec.max_episode_steps if env.spec is not None else None
        if limit is not None:
            inner.limit_steps(limit)


__all__ = ["TimeLimitAsMaxSteps"]

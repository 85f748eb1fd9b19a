"""The ``gym.make`` keyword arguments of a run's envs: ``env_kwargs`` with prepared resets decided.

Prepared resets (:mod:`osworld_mcp_env.env.prepared_reset`) are on by default wherever
memory allows, in evaluation and training alike: the decision is
:func:`~osworld_mcp_env.env.prepared_reset.with_prepared_resets`, the eval runner's own, so
both count one prepared desktop per env the same way. ``[rollout] prepared_resets`` forces
it either way; only the desktop env takes the keyword, so other envs (the toy env) get
``env_kwargs`` as written.
"""

from __future__ import annotations

import importlib
from typing import Any

import gymnasium as gym
from osworld_mcp_env import ENV_ID
from osworld_mcp_env.env.prepared_reset import with_prepared_resets

from grpo_trainer.config import GRPOConfig
from grpo_trainer.errors import ConfigError

__all__ = ["env_kwargs", "is_desktop_env"]


def is_desktop_env(env_id: str) -> bool:
    """Whether ``env_id`` is the desktop env, the one that prepares resets.

    ``module:Name-v0`` imports ``module`` first, as ``gym.make`` does (its registrations).
    """
    module, _, name = env_id.rpartition(":")
    if module:
        importlib.import_module(module)
    return gym.spec(name).id == ENV_ID


def env_kwargs(config: GRPOConfig, envs: int) -> dict[str, Any]:
    """``config.env_kwargs`` plus ``prepare_resets`` as ``[rollout] prepared_resets`` decides it.

    Args:
        config: The run configuration.
        envs: Desktops this host runs at once (every rank's envs on it): each prepared reset
            holds a second desktop, so ``"auto"`` asks for memory for that many more.

    Raises:
        ConfigError: ``prepared_resets = true`` for an env that is not the desktop env.
    """
    setting = config.rollout.prepared_resets
    desktop = is_desktop_env(config.env_id)
    if setting is True and not desktop:
        raise ConfigError(
            f"[rollout] prepared_resets = true needs the desktop env ({ENV_ID}); {config.env_id} "
            "does not prepare resets: use 'auto' or false."
        )
    if not desktop:
        return dict(config.env_kwargs)
    if setting == "auto":
        return with_prepared_resets(config.env_kwargs, envs)
    return {**config.env_kwargs, "prepare_resets": setting}

"""Gymnasium env for hybrid (GUI + MCP) computer-use agents on a real desktop.

``import osworld_mcp_env`` registers ``OSWorldMCP-v0``::

    env = gym.make("osworld_mcp_env:OSWorldMCP-v0", task="calc-sum-column", max_steps=50)

Gymnasium's env checker stays on. ``max_episode_steps=n`` is the same as
``max_steps=n`` (the smaller of the two wins): the episode truncates at that
step and the evaluator scores it.
"""

from gymnasium.envs.registration import WrapperSpec, register, registry

from osworld_mcp_env._moved import MOVED_MODULES
from osworld_mcp_env.module_aliases import alias_moved_modules

ENV_ID = "OSWorldMCP-v0"


def register_envs() -> None:
    """Registers ``OSWorldMCP-v0`` once (importing the package does it)."""
    if ENV_ID not in registry:
        register(
            id=ENV_ID,
            entry_point="osworld_mcp_env.env.core:OSWorldMCPEnv",
            additional_wrappers=(
                WrapperSpec(
                    name="TimeLimitAsMaxSteps",
                    entry_point="osworld_mcp_env.env.step_limit:TimeLimitAsMaxSteps",
                    kwargs={},
                ),
            ),
        )


alias_moved_modules(MOVED_MODULES)
register_envs()

__all__ = ["ENV_ID", "register_envs"]

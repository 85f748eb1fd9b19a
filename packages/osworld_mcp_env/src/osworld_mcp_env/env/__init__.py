"""The env itself: :class:`OSWorldMCPEnv` and the modules it runs an episode with.

- :mod:`~osworld_mcp_env.env.core`: the Gymnasium class (observation, step, reset, close).
- :mod:`~osworld_mcp_env.env.tools`: MCP tool calls and bash commands run for a step.
- :mod:`~osworld_mcp_env.env.prepared_reset`: the next episode's desktop, prepared in the background.
- :mod:`~osworld_mcp_env.env.step_limit`: Gymnasium's ``max_episode_steps`` as the env's own ``max_steps``.
"""

from osworld_mcp_env.env.core import EnvConfig, OSWorldMCPEnv, desktop_fault

__all__ = ["EnvConfig", "OSWorldMCPEnv", "desktop_fault"]

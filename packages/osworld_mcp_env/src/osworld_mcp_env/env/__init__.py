"""The env itself: :class:`OSWorldMCPEnv` and the modules it runs an episode with.

- :mod:`~osworld_mcp_env.env.core`: the Gymnasium class (observation, step, reset, close).
- :mod:`~osworld_mcp_env.env.config`: ``EnvConfig``, the env's settings.
- :mod:`~osworld_mcp_env.env.episode`: the episode's desktop, started, repaired or swapped, its task set up.
- :mod:`~osworld_mcp_env.env.tools`: MCP tool calls and bash commands run for a step.
- :mod:`~osworld_mcp_env.env.faults`: a desktop failure as the agent's error code.
- :mod:`~osworld_mcp_env.env.prepared_reset`: the next episode's desktop, prepared in the background.
- :mod:`~osworld_mcp_env.env.step_limit`: Gymnasium's ``max_episode_steps`` as the env's own ``max_steps``.

Running episodes needs the ``desktop`` extra; ``pip install osworld-mcp-env`` alone is the interface
(actions, spaces, info, errors, registry, tasks), and importing this package without the extra says so.
"""

try:
    from osworld_mcp_env.env.core import EnvConfig, OSWorldMCPEnv, desktop_fault
except ModuleNotFoundError as missing:
    if (missing.name or "").partition(".")[0] == "osworld_mcp_env":
        raise  # a module of this package: a bug, not a missing extra
    raise ModuleNotFoundError(
        f"The env runs episodes on a desktop, which needs {missing.name!r}: "
        "pip install 'osworld-mcp-env[desktop]' (without it the package is its interface only).",
        name=missing.name,
    ) from missing

__all__ = ["EnvConfig", "OSWorldMCPEnv", "desktop_fault"]

"""Developer tools, apart from the runtime: nothing the env imports to run an episode.

- :mod:`~osworld_mcp_env.devkit.fuzz`: hostile actions and a seeded fuzz run (``tools/fuzz_env.py``).
- :mod:`~osworld_mcp_env.devkit.validate`: a task suite checked on a real desktop (``osworld-mcp validate``).
"""

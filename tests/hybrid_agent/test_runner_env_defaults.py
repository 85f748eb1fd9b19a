"""The runner's own envs have prepared resets on where memory allows, and an explicit choice wins.

Making an env starts no desktop (the first reset does), so no desktop is needed here.
"""

from __future__ import annotations

import pytest
from hybrid_agent.policies import make_policy
from hybrid_agent.runner import RunConfig, Runner
from osworld_mcp_env.env import prepared_reset


def made_env_prepares(tmp_path, monkeypatch, fits: bool, **env_kwargs) -> bool:
    monkeypatch.setattr(prepared_reset, "prepared_resets_fit", lambda envs: fits and envs == 2)
    config = RunConfig(policy="scripted:tools", envs=2, env_kwargs=env_kwargs)
    env = Runner(config, make_policy("scripted:tools"), tmp_path, progress=False)._make_env()
    try:
        return env.unwrapped.preparer is not None
    finally:
        env.close()


@pytest.mark.parametrize(("fits", "env_kwargs", "expected"), [
    (True, {}, True),
    (False, {}, False),
    (True, {"prepare_resets": False}, False),
    (False, {"prepare_resets": True}, True),
])  # fmt: skip
def test_the_runners_envs_prepare_where_memory_allows(tmp_path, monkeypatch, fits, env_kwargs, expected):
    assert made_env_prepares(tmp_path, monkeypatch, fits, **env_kwargs) is expected

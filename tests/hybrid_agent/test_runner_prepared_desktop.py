"""The runner with prepared resets: each env's next episode is set up beside the running one."""

import sys
from pathlib import Path

import gymnasium as gym
import pytest
from hybrid_agent.policies import make_policy
from hybrid_agent.recorder import iter_episodes
from hybrid_agent.runner import RunConfig, Runner
from hybrid_agent.suite import load_suite

sys.path.insert(0, str(Path(__file__).parents[1] / "osworld_mcp_env"))
from desktop_support import desktop_missing

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        desktop_missing() is not None, reason=f"embedded desktop unavailable: {desktop_missing()}"
    ),
]


class ResetPaths(gym.Wrapper):
    """Records which path each reset took (the env's own timings say it)."""

    paths: list[str] = []  # noqa: RUF012 - shared with the test on purpose

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.paths.append("prepared" if "prepared_ms" in info["timings"] else "cold")
        return obs, info


def test_the_second_run_of_a_task_starts_on_the_desktop_prepared_during_the_first(tmp_path):
    tasks = [t for t in load_suite("bundled") if t.task_id == "calc-sum-column"]
    config = RunConfig(policy="scripted:tools", envs=1, runs=2)

    def make_env() -> gym.Env:
        env = gym.make("osworld_mcp_env:OSWorldMCP-v0", max_steps=50, prepare_resets=True)
        return ResetPaths(env)

    ResetPaths.paths = []
    runner = Runner(config, make_policy("scripted:tools"), tmp_path, env_factory=make_env, progress=False)
    result = runner.evaluate(tasks)
    assert (result.finished, result.errors) == (2, 0)
    assert [record.end["score"] for record in iter_episodes(tmp_path)] == [1.0, 1.0]
    # No preparation has a measured duration yet, so the second reset waits for it.
    assert ResetPaths.paths == ["cold", "prepared"]

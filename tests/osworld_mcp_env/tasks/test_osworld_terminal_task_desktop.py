"""A real OSWorld task whose evaluation presses Ctrl+Alt+T, run as-is on the embedded desktop.

OSWorld's os task 13584542 (verbatim copy under ``data/osworld_terminal_tasks``,
Apache-2.0) asks for a permanent 132x43 terminal. Its postconfig presses
Ctrl+Alt+T, types ``stty size`` into the new terminal and reads the terminal's
text. The desktop's terminal is xfce4-terminal, so the solution sets its default
geometry; left alone, the new terminal is the default 80x24 and the task scores 0.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest

pytestmark = pytest.mark.desktop

TASKS = Path(__file__).parents[1] / "data" / "osworld_terminal_tasks"
TASK = TASKS / "os" / "13584542-872b-42d8-b299-866967b5c3ef.json"
# The desktop's xfce4-terminal (1.0.4) takes its default size from terminalrc; setting it
# with xfconf-query did not change new windows when tried.
SET_GEOMETRY = (
    "mkdir -p ~/.config/xfce4/terminal && "
    "printf '[Configuration]\\nMiscDefaultGeometry=132x43\\n' > ~/.config/xfce4/terminal/terminalrc"
)


def run_episode(env: gym.Env, actions: list[dict]) -> tuple[float, dict]:
    _obs, info = env.reset(options={"task": str(TASK)})
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        assert "error" not in info, info["error"]
        assert info.get("tool_call", {}).get("returncode", 0) == 0, obs["tool_result"]
        if terminated or truncated:
            assert "eval_error" not in info, info["eval_error"]
            return float(reward), info
    raise AssertionError("the actions did not end the episode")


def test_terminal_size_task_scores_one_solved_and_zero_untouched():
    env = gym.make("osworld_mcp_env:OSWorldMCP-v0", enable_bash=True, enable_mcp=False, step_timeout_s=120)
    try:
        done = {"name": "computer_use", "arguments": {"action": "terminate", "status": "success"}}
        solved = [{"name": "bash", "arguments": {"command": SET_GEOMETRY}}, done]
        reward, info = run_episode(env, solved)
        assert reward == 1.0, info.get("evaluation")
        reward, info = run_episode(env, [done])
        assert reward == 0.0, info.get("evaluation")
    finally:
        env.close()

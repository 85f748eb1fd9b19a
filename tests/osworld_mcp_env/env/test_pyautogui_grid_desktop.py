"""HybridCUA's 0..999 grid for pyautogui inside the agent's bash commands, on the real desktop.

Only a bash call that asks for the grid (``pyautogui_grid``) is scaled; the same code
without it, and everything the env runs itself, keeps screen pixels. Each position is
read back by a separate, unscaled command.
"""

from __future__ import annotations

import pytest
from osworld_mcp_env.env.tools import PYAUTOGUI_GRID_ENV
from osworld_mcp_env.guest.coordinate_grid import sitecustomize

pytestmark = pytest.mark.desktop

WHERE = {
    "name": "bash",
    "arguments": {"command": 'python3 -c "import pyautogui; print(*pyautogui.position())"'},
}


def heredoc(line: str) -> str:
    return f"python3 <<'PY'\nimport pyautogui\n{line}\nPY"


def run(env, command: str, grid: int | None = 999) -> dict:
    arguments = {"command": command, **({"pyautogui_grid": grid} if grid else {})}
    _obs, _r, _t, _tr, info = env.step({"name": "bash", "arguments": arguments})
    assert "error" not in info and info["tool_call"]["returncode"] == 0, info
    return info


def position(env) -> tuple[int, int]:
    obs, *_ = env.step(WHERE)
    x, y = obs["tool_result"].splitlines()[-1].split()  # after python-xlib's xauth warnings
    return int(x), int(y)


def test_a_heredoc_click_lands_on_the_scaled_point_and_only_when_asked(make_env):
    assert sitecustomize.GRID_ENV == PYAUTOGUI_GRID_ENV
    env = make_env(task="os-create-file", enable_bash=True)  # 1920x1080
    env.reset()
    run(env, heredoc("pyautogui.click(500, 300)"))
    assert position(env) == (round(500 * 1920 / 999), round(300 * 1080 / 999)) == (961, 324)
    # doubleClick calls click with pixels already scaled: scaled once, not twice.
    run(env, heredoc("pyautogui.doubleClick(250, 750)"))
    assert position(env) == (round(250 * 1920 / 999), round(750 * 1080 / 999)) == (480, 811)
    run(env, heredoc("pyautogui.moveTo((100, 200))"))  # an (x, y) pair as the first argument
    assert position(env) == (192, 216)
    run(env, heredoc("pyautogui.moveTo(x=999, y=500)"))  # keywords; 999 is the screen's right edge
    assert position(env) == (1920 - 1, 541)  # round(999 * 1920 / 999) = 1920: X keeps it on the screen
    # Without the grid the same code uses pixels.
    run(env, heredoc("pyautogui.click(500, 300)"), grid=None)
    assert position(env) == (500, 300)


def test_the_desktop_user_cannot_change_the_scaling_code(make_env):
    env = make_env(task="os-create-file", enable_bash=True)
    env.reset()
    shim = 'd="$(dirname "$(command -v python3)")/../coordinate_grid"'
    _obs, _r, _t, _tr, info = env.step(
        {
            "name": "bash",
            "arguments": {"command": f'{shim}; echo x >> "$d/sitecustomize.py"; touch "$d/pyautogui.py"'},
        }
    )
    assert info["tool_call"]["returncode"] != 0 and "Read-only file system" in info["tool_call"]["stderr"]

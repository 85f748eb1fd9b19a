"""Ctrl+Alt+T on the embedded desktop opens a terminal of the desktop user, as on OSWorld's Ubuntu."""

from __future__ import annotations

import pytest
from polling import wait_until

pytestmark = pytest.mark.desktop

DEADLINE_S = 120  # the machine is shared and slow; this bounds a hang, it is no speed claim
WAIT = {"name": "computer_use", "arguments": {"action": "wait", "time": 0}}


def test_ctrl_alt_t_opens_a_terminal_of_the_desktop_user(make_env):
    env = make_env(task="calc-sum-column", enable_mcp=False, enable_bash=True, max_steps=1000)
    obs, info = env.reset(seed=0)
    assert obs["active_app"] == "libreoffice_calc"
    _obs, _r, _t, _tr, info = env.step(
        {"name": "computer_use", "arguments": {"action": "key", "keys": ["ctrl", "alt", "t"]}}
    )
    assert "error" not in info, info["error"]

    def terminal_active() -> dict | None:
        obs, _r, _t, _tr, info = env.step(WAIT)
        return info if obs["active_app"] == "os" else None  # the terminal's app name (apps.py)

    info = wait_until(terminal_active, DEADLINE_S, "an active terminal window")
    assert "Terminal" in info["active_window"]  # what OSWorld's tasks pass to activate_window
    # The terminal (and the shell in it) belong to the desktop user, not to the window manager's uid.
    obs, _r, _t, _tr, info = env.step(
        {"name": "bash", "arguments": {"command": "ps -C xfce4-terminal -o user= | sort -u; id -un"}}
    )
    assert obs["tool_result"] == "[exit code 0]\nuser\nuser\n"

"""A tool host whose socket was removed (a tmp cleaner on a long run), on the real desktop.

The host lives on, but no client can connect to it again. A tool call then fails at once
with ``desktop_error`` and nothing sent, rather than waiting for the socket to come
back: with a 5 s step deadline, waiting would end in ``timeout`` instead. The next reset
replaces the tool host (the guest refuses its fast reset), and the task's oracle scores 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest
from osworld_mcp_env.env.core import OSWorldMCPEnv

pytestmark = [pytest.mark.desktop, pytest.mark.timeout(300)]
CALC = "libreoffice_calc."


def tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def oracle_score(env: Any) -> float:
    """calc-sum-column's oracle through the tools: the sum formula, saved, then terminate."""
    for action in (tool(CALC + "set_cell_value", cell="B1", value="=SUM(A1:A5)"), tool(CALC + "save")):
        *_, info = env.step(action)
        assert info["tool_call"]["exec_ok"], info
    _obs, reward, terminated, _tr, info = env.step(
        {"name": "computer_use", "arguments": {"action": "terminate", "status": "success"}}
    )
    assert terminated, info
    return float(reward)


def test_a_removed_tool_socket_fails_at_once_and_the_next_reset_brings_the_tools_back(make_env):
    env = make_env(step_timeout_s=5.0)
    env.reset(options={"task": "calc-sum-column"})
    unwrapped = cast(OSWorldMCPEnv, env.unwrapped)
    *_, info = env.step(tool(CALC + "set_cell_value", cell="C1", value="1"))
    assert info["tool_call"]["exec_ok"], info  # a live session to the host
    socket = unwrapped.desktop.tool_socket()
    assert socket is not None
    Path(socket).unlink()

    for _ in range(2):  # the live session's call and the next one alike
        obs, _r, _t, _tr, info = env.step(tool(CALC + "set_cell_value", cell="C2", value="2"))
        assert info["error"]["code"] == "desktop_error", info["error"]
        assert info["tool_call"]["dispatched"] is False and "does not exist" in obs["tool_result"]

    generation = unwrapped.desktop.generation
    _obs, info = env.reset(options={"task": "calc-sum-column"})
    assert unwrapped.desktop.generation == generation + 1  # a new sandbox, with a new tool host
    assert Path(socket).exists()
    assert any(t["name"] == CALC + "set_cell_value" for t in info["tools"])
    assert oracle_score(env) == 1.0

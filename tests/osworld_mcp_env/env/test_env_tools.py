"""The tool route through the env on the real desktop: scores, catalogs, error codes, effects."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from osworld_mcp_env.info import ToolCallRecord

pytestmark = [pytest.mark.desktop, pytest.mark.timeout(180)]
ENV_ID = "osworld_mcp_env:OSWorldMCP-v0"
STEP_TIMEOUT_S = 5.0  # the hang test waits this long; every real tool here answers in well under 1 s
CALC = "libreoffice_calc."


@pytest.fixture(scope="module")
def env() -> Iterator[gym.Env]:
    """One env (and desktop) for the module; each test resets it to its task."""
    e = gym.make(ENV_ID, step_timeout_s=STEP_TIMEOUT_S)
    yield e
    e.close()


def tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def terminate() -> dict[str, Any]:
    return {"name": "computer_use", "arguments": {"action": "terminate", "status": "success"}}


def wait(seconds: float = 0.5) -> dict[str, Any]:
    return {"name": "computer_use", "arguments": {"action": "wait", "time": seconds}}


@pytest.mark.parametrize(("value", "expected"), [("=SUM(A1:A5)", 1.0), ("42", 0.0)])
def test_calc_task_through_tools_scores_by_the_value_written(
    env: gym.Env, value: str, expected: float
) -> None:
    """set_cell_value + save + terminate: the right formula scores 1, a wrong value 0."""
    _obs, info = env.reset(options={"task": "calc-sum-column"})
    assert any(t["name"] == CALC + "set_cell_value" for t in info["tools"])
    for action in (tool(CALC + "set_cell_value", cell="B1", value=value), tool(CALC + "save")):
        _obs, reward, terminated, _tr, info = env.step(action)
        assert info["tool_call"]["exec_ok"] and info["tool_call"]["in_catalog"], info
        assert info["tool_call"]["dispatched"] and not terminated
        assert set(info["tool_call"]) == ToolCallRecord.__required_keys__  # bash has the same shape
        assert info["tool_call"]["returncode"] is None and info["tool_call"]["read_only"] is False
    _obs, reward, terminated, _tr, info = env.step(terminate())
    assert terminated and reward == expected, info.get("evaluation") or info.get("eval_error")


def test_catalog_follows_the_focused_app(env: gym.Env) -> None:
    """Calc focused: Calc tools only; an app without tools: []; the terminal: the os tools."""
    _obs, info = env.reset(options={"task": "calc-sum-column"})
    names = {t["name"] for t in info["tools"]}
    assert names and all(n.startswith(CALC) for n in names)
    assert {"name", "description", "parameters", "read_only"} <= set(info["tools"][0])
    desktop = env.unwrapped.desktop
    desktop.launch(["xmessage", "-geometry", "400x200+100+100", "no tools here"])
    obs, _r, _t, _tr, info = _step_until(env, lambda o, i: "xmessage" in i["active_window"].lower())
    assert info["tools"] == [] and "tools_error" not in info, (obs["active_app"], info["active_window"])
    desktop.launch(["xfce4-terminal"])
    obs, _r, _t, _tr, info = _step_until(env, lambda o, i: o["active_app"] == "os")
    names = {t["name"] for t in info["tools"]}
    assert names and all(n.startswith("os.") for n in names)


def _step_until(env: gym.Env, done: Any, tries: int = 40) -> tuple[Any, ...]:
    for _ in range(tries):
        out = env.step(wait(0.25))
        if done(out[0], out[4]):
            return out
    raise AssertionError(f"the focus never moved: {out[4]['active_window']!r}")


def test_unknown_tool_and_bad_arguments_dispatch_nothing(env: gym.Env) -> None:
    """Both are error values before anything reaches the desktop; the sheet is unchanged."""
    env.reset(options={"task": "calc-sum-column"})
    before = _column(env, "B")
    _obs, reward, terminated, _tr, info = env.step(tool(CALC + "no_such_tool"))
    assert info["error"]["code"] == "unknown_tool" and not info["tool_call"]["dispatched"]
    assert info["tool_call"]["in_catalog"] is False and not terminated and reward == 0.0
    for arguments in ({"cell": "B1"}, {"cell": 1, "value": "x"}, {"cell": "B1", "value": "x", "colour": 1}):
        _obs, _r, _t, _tr, info = env.step(tool(CALC + "set_cell_value", **arguments))
        assert info["error"]["code"] == "invalid_arguments", arguments
        assert info["tool_call"]["dispatched"] is False and info["tool_call"]["exec_ok"] is False
    assert _column(env, "B") == before


def _column(env: gym.Env, column: str) -> str:
    obs, _r, _t, _tr, info = env.step(tool(CALC + "get_column_data", column_name=column))
    assert info["tool_call"]["exec_ok"] and info["tool_call"]["read_only"] is True, info
    assert info["tool_call"]["effect"]["kind"] == "read_only"
    return obs["tool_result"]


def test_a_tool_that_raises_is_a_tool_error(env: gym.Env) -> None:
    env.reset(options={"task": "calc-sum-column"})
    obs, _r, terminated, _tr, info = env.step(tool(CALC + "rename_sheet", old_name="Nope", new_name="x"))
    assert info["error"]["code"] == "tool_error" and info["tool_call"]["dispatched"] and not terminated
    assert "Nope" in obs["tool_result"]


def test_a_hung_tool_times_out_and_the_desktop_keeps_working(env: gym.Env) -> None:
    """SIGSTOP the office inside the desktop: the call times out; after SIGCONT tools work again."""
    env.reset(options={"task": "calc-sum-column"})
    stopped = _signal(env, "soffice.bin", signal.SIGSTOP)
    assert stopped, "no soffice.bin in the desktop"
    try:
        _obs, _r, terminated, _tr, info = env.step(tool(CALC + "set_cell_value", cell="C1", value="late"))
        assert info["error"]["code"] == "timeout" and info["tool_call"]["dispatched"] and not terminated
        # The step's deadline, less the slice kept for the observation (env.OBSERVE_RESERVE_S).
        assert info["tool_call"]["latency_ms"] >= (STEP_TIMEOUT_S - 1.0) * 1000 * 0.9
        # Tools of other apps answer while the office is stopped.
        _obs, _r, _t, _tr, info = env.step(tool("os.calculator", expression="6*7"))
        assert info["tool_call"]["exec_ok"], info
    finally:
        _signal(env, "soffice.bin", signal.SIGCONT)
    # Straight after SIGCONT, while the timed-out call finishes in its server thread: the
    # office tools recover on the same document, without a reset (they used to answer
    # AttributeError or "No Calc spreadsheet is open" here), and a write saves and reads back.
    obs, _r, _t, _tr, info = env.step(tool(CALC + "get_workbook_info"))
    assert info["tool_call"]["exec_ok"] and "numbers.xlsx" in obs["tool_result"], (obs["tool_result"], info)
    for action in (tool(CALC + "set_cell_value", cell="D1", value="after"), tool(CALC + "save")):
        obs, _r, _t, _tr, info = env.step(action)
        assert info["tool_call"]["exec_ok"], (obs["tool_result"], info)
    assert '"after"' in _column(env, "D")
    obs, _r, _t, _tr, info = env.step(tool("os.calculator", expression="1+1"))
    assert info["tool_call"]["exec_ok"] and obs["screenshot"].any(), info


def _signal(env: gym.Env, comm: str, sig: signal.Signals) -> list[int]:
    pids = []
    for pid in env.unwrapped.desktop.processes():  # only this env's own desktop
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/comm").read_text().strip() == comm:
                os.kill(pid, sig)
                pids.append(pid)
    return pids


def test_zero_effect_and_read_only_are_reported(env: gym.Env) -> None:
    """A Writer replace that matches nothing executes with zero effect; a read tool is read-only."""
    _obs, info = env.reset(options={"task": "writer-replace-word"})
    assert any(t["name"] == "libreoffice_writer.find_and_replace" for t in info["tools"])
    obs, _r, _t, _tr, info = env.step(
        tool("libreoffice_writer.find_and_replace", pattern="zebra-nowhere", replacement="x")
    )
    call = info["tool_call"]
    assert call["exec_ok"] and call["effect"]["kind"] == "none" and call["effect"]["count"] == 0
    assert call["read_only"] is False and obs["tool_result"].startswith("No effect:")
    _obs, _r, _t, _tr, info = env.step(tool("libreoffice_writer.env_info"))
    assert info["tool_call"]["read_only"] is True and info["tool_call"]["effect"]["kind"] == "read_only"

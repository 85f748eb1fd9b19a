"""Faults as values: hostile actions and dead or hung desktop processes never raise out of the env.

Each core process of the desktop (the X server, the guest server, the window
manager, the MCP tool host) is killed as root from outside the sandbox; every
GUI, bash and tool step after that must come back as an error value within the
step deadline, and the next reset must give a working desktop. A small
``step_timeout_s`` keeps the tests short; nothing here asserts speed beyond the
deadline the env promises.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest
from osworld_mcp_env.devkit.fuzz import DEADLINE_SLACK_S, run_fuzz
from osworld_mcp_env.errors import GuestTimeout
from polling import wait_until

pytestmark = [pytest.mark.desktop, pytest.mark.slow]

STEP_TIMEOUT_S = 4.0
CLICK = {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [400, 300]}}
TYPE = {"name": "computer_use", "arguments": {"action": "type", "text": "echo hi\n"}}
BASH = {"name": "bash", "arguments": {"command": "echo alive"}}
TOOL = {"name": "os.calculator", "arguments": {"expression": "6*7"}}
WAIT_0 = {"name": "computer_use", "arguments": {"action": "wait", "time": 0}}


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


CORE_PROCESSES = {
    "Xvfb": lambda pid: _comm(pid) == "Xvfb",
    "guest server": lambda pid: "osworld_mcp_env.guest.server" in _cmdline(pid),
    "openbox": lambda pid: _comm(pid) == "openbox",
    "MCP host": lambda pid: "osworld-mcp-server" in _cmdline(pid) or "mcp_servers.cli" in _cmdline(pid),
}


def timed_step(env, action):
    started = time.monotonic()
    result = env.step(action)
    return time.monotonic() - started, result


@pytest.fixture
def fault_env(make_env):
    env = make_env(task="os-create-file", step_timeout_s=STEP_TIMEOUT_S, enable_bash=True, max_steps=500)
    env.reset()
    return env


def test_seeded_fuzz_run_raises_nothing_and_keeps_the_deadline(make_env):
    env = make_env(task="os-create-file", step_timeout_s=STEP_TIMEOUT_S, enable_bash=True, max_steps=101)
    report = run_fuzz(env, actions=300, seed=1, reset_every=100, enable_bash=True)
    assert report.actions == 300
    assert report.exceptions == [], report.table()
    assert report.over_deadline == [], report.table()
    assert report.expected_mismatches == [], report.table()
    # The run reached the desktop, not only the validator.
    assert report.codes["ok"] > 0 and report.codes["invalid_json"] > 0


@pytest.mark.parametrize("process", list(CORE_PROCESSES))
def test_a_killed_core_process_gives_error_values_and_reset_heals(fault_env, process):
    desktop = fault_env.unwrapped.desktop
    victims = [pid for pid in desktop.processes() if CORE_PROCESSES[process](pid)]
    assert victims, f"no {process} in the desktop"
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    for action in (CLICK, TYPE, BASH, TOOL, CLICK):
        elapsed, (_obs, reward, terminated, _truncated, info) = timed_step(fault_env, action)
        assert elapsed <= STEP_TIMEOUT_S + DEADLINE_SLACK_S, (action, elapsed)
        assert reward == 0.0 and not terminated
        if "error" in info:  # a step may still succeed (bash without X); it never raises
            assert info["error"]["code"] in ("desktop_error", "timeout", "tool_error"), info["error"]
    obs, info = fault_env.reset()
    assert obs["screenshot"].any()
    for action in (CLICK, BASH, TOOL):
        _obs, _r, _t, _tr, info = fault_env.step(action)
        assert "error" not in info, (action, info["error"])
        assert "observation_error" not in info, info["observation_error"]
    assert "alive" in fault_env.step(BASH)[0]["tool_result"]


def test_a_stopped_x_server_keeps_the_step_deadline(fault_env):
    desktop = fault_env.unwrapped.desktop
    (xvfb,) = [pid for pid in desktop.processes() if _comm(pid) == "Xvfb"]
    os.kill(xvfb, signal.SIGSTOP)
    shown = []
    try:
        for action in (CLICK, TYPE, {"name": "computer_use", "arguments": {"action": "wait", "time": 1}}):
            elapsed, (obs, reward, terminated, _tr, info) = timed_step(fault_env, action)
            assert elapsed <= STEP_TIMEOUT_S + DEADLINE_SLACK_S, (action, elapsed)
            assert info["observation_error"]["code"] == "desktop_unresponsive"
            assert reward == 0.0 and not terminated
            shown.append(obs["screenshot"])
            if action is not CLICK:
                continue
            # A real timeout, and reported as one: not a dead desktop.
            assert info["error"]["code"] == "timeout", info["error"]
    finally:
        os.kill(xvfb, signal.SIGCONT)
    # The last frame is shown again, each time as a new array: a caller keeps every observation.
    assert all(np.array_equal(shown[0], s) and not np.shares_memory(shown[0], s) for s in shown[1:])
    _obs, _r, _t, _tr, info = fault_env.step(WAIT_0)
    assert "error" not in info and "observation_error" not in info


def test_a_dead_guest_is_a_desktop_error_not_a_timeout(fault_env):
    desktop = fault_env.unwrapped.desktop
    for pid in [p for p in desktop.processes() if CORE_PROCESSES["guest server"](p)]:
        os.kill(pid, signal.SIGKILL)
    elapsed, (_obs, _r, _t, _tr, info) = timed_step(fault_env, CLICK)
    assert info["error"]["code"] == "desktop_error", info["error"]
    assert elapsed < STEP_TIMEOUT_S  # refused at once, not waited out


def _typed_file(desktop) -> str:
    data = desktop.read_file("/home/user/typed.txt")
    return data.decode() if data else ""


def _start_cat(env) -> None:
    """Types `cat > ~/typed.txt` into the task's terminal: what is typed next lands in the file."""
    _obs, _r, _t, _tr, info = env.step(
        {"name": "computer_use", "arguments": {"action": "type", "text": "cat > ~/typed.txt\n"}}
    )
    assert "error" not in info, info["error"]
    desktop = env.unwrapped.desktop
    wait_until(lambda: desktop.execute("pgrep -x cat", shell=True).ok, what="cat running")


def _end_cat(env) -> str:
    for action in (
        {"name": "computer_use", "arguments": {"action": "type", "text": "\nEND\n"}},
        {"name": "computer_use", "arguments": {"action": "key", "keys": ["ctrl", "d"]}},
    ):
        assert "error" not in env.step(action)[4]
    desktop = env.unwrapped.desktop
    wait_until(lambda: not desktop.execute("pgrep -x cat", shell=True).ok, what="cat exiting")
    return _typed_file(desktop)


LINES = "".join(f"line {i:04d} of the text that must stop.\n" for i in range(100))  # 3,800 characters


@contextlib.contextmanager
def busy_desktop(env):
    """A process of the user spinning on a CPU for the duration.

    Typing runs at native speed and waits, between batches of keys, until the desktop
    is idle (flow control). A spinning process keeps it busy, so each batch waits the
    pacing cap: a type of 3,800 characters then lasts minutes and is surely still
    running when its deadline, or its client, goes. Idle, a terminal takes all of them
    in well under a second, and nothing would be left to interrupt.
    """
    desktop = env.unwrapped.desktop
    pid = desktop.execute("setsid sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!", shell=True)
    try:
        yield
    finally:
        desktop.execute(f"kill {pid.output.strip()}", shell=True)


def test_an_interrupted_type_stops_at_the_deadline_and_does_not_spill(make_env):
    env = make_env(task="os-create-file", step_timeout_s=3.0, enable_mcp=False)
    env.reset()
    _start_cat(env)
    with busy_desktop(env):
        elapsed, (_obs, _r, _t, _tr, info) = timed_step(
            env, {"name": "computer_use", "arguments": {"action": "type", "text": LINES}}
        )
    assert elapsed <= 3.0 + DEADLINE_SLACK_S
    assert info["error"]["code"] == "timeout", info["error"]
    typed = info["error"]["typed"]
    assert 0 < typed < len(LINES)
    # The next action's keystrokes follow the interrupted ones at once: nothing of
    # the first action typed on after its step returned.
    assert _end_cat(env) == LINES[:typed] + "\nEND\n"


def test_typing_stops_when_the_client_hangs_up(make_env):
    """Without a deadline in the request, the guest notices the closed connection instead."""
    env = make_env(task="os-create-file", enable_mcp=False)
    env.reset()
    _start_cat(env)
    desktop = env.unwrapped.desktop
    client = desktop.client
    with busy_desktop(env), pytest.raises(GuestTimeout):
        # On a busy desktop typing 3,800 characters takes far more than the 1 s this request waits.
        client.request(
            "POST", "/gui", json_body={"action": "type", "arguments": {"text": LINES}}, timeout=1.0
        )
    content = _end_cat(env)
    assert content.endswith("\nEND\n")
    prefix = content.removesuffix("\nEND\n")
    assert LINES.startswith(prefix) and len(prefix) < len(LINES)


def test_four_thousand_characters_into_writer_finish_or_end_within_the_deadline(make_env):
    env = make_env(task="writer-replace-word", enable_mcp=False, step_timeout_s=60.0)
    env.reset()
    text = ("The quick brown fox jumps over the lazy dog. " * 90)[:4000]
    elapsed, (_obs, _r, _t, _tr, info) = timed_step(
        env, {"name": "computer_use", "arguments": {"action": "type", "text": text}}
    )
    assert elapsed <= 60.0 + DEADLINE_SLACK_S
    if "error" in info:
        assert info["error"]["code"] == "timeout" and info["error"]["typed"] < len(text)
    _obs, _r, _t, _tr, info = env.step(WAIT_0)
    assert "error" not in info, info["error"]

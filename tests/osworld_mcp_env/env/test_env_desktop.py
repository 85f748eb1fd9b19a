"""The env on the real embedded desktop: scores, bad input, isolation, teardown, vector envs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from osworld_mcp_env.backends.local.desktop import LocalDesktop
from osworld_mcp_env.info import ToolCallRecord
from osworld_mcp_env.spaces import INSTRUCTION_MAX_CHARS, TOOL_RESULT_MAX_CHARS
from osworld_mcp_env.tasks import load_task
from osworld_mcp_env.tasks.bundled import bundled_solution
from osworld_mcp_env.text import TRUNCATION_MARKER
from polling import wait_until

pytestmark = pytest.mark.desktop

ENV_ID = "osworld_mcp_env:OSWorldMCP-v0"


def run_actions(env: gym.Env, actions: list[dict]) -> tuple[float, bool, dict]:
    for action in actions:
        _obs, reward, terminated, truncated, info = env.step(action)
        assert "error" not in info, info["error"]
        if terminated or truncated:
            return reward, terminated, info
    raise AssertionError("the action list did not end the episode")


@pytest.fixture(scope="module")
def shared_env():
    env = gym.make(ENV_ID)
    yield env
    env.close()


@pytest.mark.parametrize(
    ("task", "variant", "expected"),
    [
        ("calc-sum-column", "oracle", 1.0),
        ("calc-sum-column", "wrong", 0.0),
        ("writer-replace-word", "oracle", 1.0),
        ("writer-replace-word", "wrong", 0.0),
        ("os-create-file", "oracle", 1.0),
        ("os-create-file", "wrong", 0.0),
    ],
)
def test_bundled_tasks_score_through_gui_actions_only(shared_env, task, variant, expected):
    obs, info = shared_env.reset(seed=0, options={"task": task})
    assert obs["screenshot"].shape == (1080, 1920, 3) and obs["screenshot"].dtype == np.uint8
    assert obs["instruction"] and info["task_id"] == task
    reward, terminated, info = run_actions(shared_env, bundled_solution(task, variant))
    assert terminated
    assert reward == expected, info.get("evaluation") or info.get("eval_error")
    assert "eval_error" not in info


def test_osworld_pyautogui_postconfig_saves_the_document(shared_env):
    """OSWorld's evaluators save through `python -c "import pyautogui; ..."` run inside the desktop."""
    from osworld_mcp_env.tasks import load_task

    task = load_task("calc-sum-column").to_dict()
    task["evaluator"]["postconfig"] = [
        {
            "type": "activate_window",
            "parameters": {"window_name": "numbers.xlsx - LibreOffice Calc", "strict": True},
        },
        {
            "type": "execute",
            "parameters": {
                "command": [
                    "python",
                    "-c",
                    "import pyautogui; import time; pyautogui.hotkey('ctrl', 's'); time.sleep(0.5);",
                ]
            },
        },
        {"type": "sleep", "parameters": {"seconds": 1.0}},
    ]
    shared_env.reset(options={"task": task})
    unsaved = [  # the agent types the answer but never saves; the postconfig does
        {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [162, 180]}},
        {"name": "computer_use", "arguments": {"action": "key", "keys": ["ctrl", "Home"]}},
        {"name": "computer_use", "arguments": {"action": "key", "keys": ["Right"]}},
        {"name": "computer_use", "arguments": {"action": "type", "text": "=SUM(A1:A5)\n"}},
        {"name": "computer_use", "arguments": {"action": "terminate", "status": "success"}},
    ]
    reward, terminated, info = run_actions(shared_env, unsaved)
    assert terminated and reward == 1.0, info.get("evaluation") or info.get("eval_error")


def test_calc_observation_names_the_app(shared_env):
    obs, info = shared_env.reset(options={"task": "calc-sum-column"})
    assert obs["active_app"] == "libreoffice_calc"
    assert "numbers.xlsx" in info["active_window"]
    assert obs["tool_result"] == ""


def test_a11y_tree_observation(make_env):
    env = make_env(task="calc-sum-column", a11y_tree=True, enable_mcp=False)
    obs, _info = env.reset()
    assert env.observation_space.contains(obs)
    tree = obs["a11y_tree"]
    assert tree.startswith("<desktop-frame") and 'name="numbers.xlsx - LibreOffice Calc"' in tree
    assert 'rows="1048576"' in tree  # the sheet is summarised, never walked


def test_hundred_malformed_actions_give_hundred_errors_and_dispatch_nothing(shared_env):
    shared_env.reset(options={"task": "os-create-file"})
    desktop = shared_env.unwrapped.desktop
    desktop.gui({"action": "mouse_move", "arguments": {"coordinate": [700, 500]}})
    before_files = desktop.execute("ls -la ~ | md5sum", shell=True).output
    malformed = [
        "{not json",
        "[]",
        json.dumps({"name": "computer_use", "arguments": {"action": "teleport"}}),
        {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [5000, 5]}},
        {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": "here"}},
        {"name": "computer_use", "arguments": {"action": "type", "text": 123}},
        {"name": "computer_use", "arguments": {"action": "key", "keys": ["no_such_key_name"]}},
        {"name": "libreoffice_calc.made_up_tool", "arguments": {}},
        {"name": "computer_use", "arguments": {"action": "type", "text": "x" * 10_000_000}},
        "x" * 10_000_000,
    ]
    codes = []
    for i in range(100):
        _obs, reward, terminated, truncated, info = shared_env.step(malformed[i % len(malformed)])
        assert reward == 0.0 and not terminated
        assert set(info["error"]) >= {"code", "message"}
        codes.append(info["error"]["code"])
        if truncated:
            break
    assert len(codes) == 50  # max_steps=50 truncates; every step before was an error value
    assert {"invalid_json", "unknown_action", "out_of_screen", "invalid_arguments", "unknown_tool"} <= set(
        codes
    )
    assert "payload_too_large" in codes
    assert desktop.client.request("GET", "/cursor_position")[2] == b"[700, 500]"
    assert desktop.execute("ls -la ~ | md5sum", shell=True).output == before_files
    obs, _ = shared_env.reset(options={"task": "os-create-file"})
    assert obs["screenshot"].any()


def test_fifty_more_malformed_actions_after_reset(make_env):
    env = make_env(task="os-create-file", max_steps=200)
    env.reset()
    errors = 0
    for i in range(100):
        _o, _r, terminated, truncated, info = env.step(
            {"name": "computer_use", "arguments": {"action": str(i)}}
        )
        errors += info["error"]["code"] == "unknown_action"
        assert not (terminated or truncated)
    assert errors == 100
    _o, _r, _t, _tr, info = env.step({"name": "computer_use", "arguments": {"action": "wait", "time": 0}})
    assert "error" not in info
    assert env.unwrapped.desktop.execute(["true"]).ok


def test_max_steps_truncates_and_scores(make_env):
    env = make_env(task="os-create-file", max_steps=2)
    env.reset()
    wait = {"name": "computer_use", "arguments": {"action": "wait", "time": 0}}
    assert env.step(wait)[3] is False
    _obs, reward, terminated, truncated, info = env.step(wait)
    assert truncated and not terminated and reward == 0.0
    assert info["evaluation"]["score"] == 0.0
    assert env.step(wait)[4]["error"]["code"] == "episode_over"


def test_oversize_texts_stay_in_the_space_and_max_episode_steps_scores_with_the_checker_on(make_env):
    """A 9,000-character instruction and a 200,000-character tool result still give obs in the space.

    Gymnasium's env checker (on at registration) checks the first reset and steps;
    any warning it gives fails here. ``max_episode_steps`` truncates through the
    env's own ``max_steps``, so the evaluator scores the truncated episode.
    """
    task = load_task("os-create-file").to_dict()
    task["instruction"] = "Create the file. " + "x" * 9_000
    marker = TRUNCATION_MARKER.split("{")[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = make_env(task=task, enable_bash=True, bash_output_chars=200_000, max_episode_steps=2)
        obs, _info = env.reset()
        assert env.observation_space.contains(obs)
        assert len(obs["instruction"]) <= INSTRUCTION_MAX_CHARS and marker in obs["instruction"]
        assert obs["instruction"].startswith("Create the file. xxx")
        seq = {"name": "bash", "arguments": {"command": "seq 1 40000"}}
        obs, _r, terminated, truncated, info = env.step(seq)
        assert "error" not in info and not (terminated or truncated)
        assert env.observation_space.contains(obs)
        assert len(obs["tool_result"]) <= TOOL_RESULT_MAX_CHARS and marker in obs["tool_result"]
        assert obs["tool_result"].startswith("[exit code 0]\n1\n2\n")
        wait = {"name": "computer_use", "arguments": {"action": "wait", "time": 0}}
        _obs, reward, terminated, truncated, info = env.step(wait)
    assert truncated and not terminated and reward == 0.0
    assert info["evaluation"]["score"] == 0.0 and "eval_error" not in info


def test_two_envs_stepping_in_parallel_do_not_see_each_other(make_env):
    calc, terminal = make_env(task="calc-sum-column"), make_env(task="os-create-file")
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda e: e.reset(), (calc, terminal)))
        steps = [
            (calc, {"name": "computer_use", "arguments": {"action": "type", "text": "calc-secret"}}),
            (
                terminal,
                {"name": "computer_use", "arguments": {"action": "type", "text": "echo t > ~/mine.txt\n"}},
            ),
        ]
        results = list(pool.map(lambda pair: pair[0].step(pair[1]), steps))
    assert all("error" not in r[4] for r in results)
    a, b = calc.unwrapped.desktop, terminal.unwrapped.desktop
    assert b.read_file("/home/user/mine.txt") == b"t\n"
    assert a.read_file("/home/user/mine.txt") is None
    assert b.read_file("/home/user/numbers.xlsx") is None and a.read_file("/home/user/numbers.xlsx")
    a_titles, b_titles = [w.title for w in a.windows()], [w.title for w in b.windows()]
    assert any("Calc" in t for t in a_titles) and not any("Calc" in t for t in b_titles)
    assert not any("Terminal" in t for t in a_titles)
    assert set(a.processes()).isdisjoint(b.processes())
    # Each sees only its own process table and a loopback-only network.
    ps_a = a.execute(["ps", "-eo", "comm="]).output.split()
    assert "soffice.bin" in ps_a and "xfce4-terminal" not in ps_a
    assert a.execute("ip -o link | wc -l", shell=True).output.strip() == "1"


def test_close_leaves_no_process_and_no_directory(make_env):
    env = make_env(task="calc-sum-column")
    env.reset()
    desktop = env.unwrapped.desktop
    pids, instance_dir, uid = desktop.processes(), desktop.instance_dir, desktop.host_uid
    assert len(pids) >= 5 and instance_dir.is_dir() and desktop.fb_dir.is_dir()
    env.close()
    assert not [p for p in pids if Path(f"/proc/{p}").exists() and _state(p) != "Z"]
    assert not instance_dir.exists() and not desktop.fb_dir.exists()
    if os.geteuid() == 0:
        assert _pids_of_uid(uid) == []


def test_garbage_collection_tears_the_desktop_down():
    desktop = LocalDesktop()
    pids, instance_dir = desktop.processes(), desktop.instance_dir
    del desktop
    import gc

    gc.collect()
    assert not [p for p in pids if Path(f"/proc/{p}").exists() and _state(p) != "Z"]
    assert not instance_dir.exists()


def test_sigterm_of_the_host_process_leaves_nothing(tmp_path):
    script = textwrap.dedent(
        """
        import json, sys, time
        import gymnasium as gym, osworld_mcp_env
        env = gym.make("osworld_mcp_env:OSWorldMCP-v0", task="os-create-file")
        env.reset()
        d = env.unwrapped.desktop
        print(json.dumps({"pids": d.processes(), "dir": str(d.instance_dir), "uid": d.host_uid}), flush=True)
        time.sleep(120)
        """
    )
    host = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    facts = json.loads(host.stdout.readline())
    assert facts["pids"]
    host.send_signal(signal.SIGTERM)
    assert host.wait(timeout=30) != 0
    wait_until(
        lambda: not [p for p in facts["pids"] if Path(f"/proc/{p}").exists() and _state(p) != "Z"],
        10,
        "the desktop's processes to end",
    )
    assert not Path(facts["dir"]).exists()
    if os.geteuid() == 0:
        assert _pids_of_uid(facts["uid"]) == []


def test_check_env_passes(make_env):
    env = make_env(task="os-create-file", record_timings=False)
    check_env(env.unwrapped, skip_render_check=True)


def test_async_vector_env_runs_an_episode():
    envs = gym.vector.AsyncVectorEnv(
        [lambda: gym.make(ENV_ID, task="os-create-file")] * 2, shared_memory=False
    )
    try:
        obs, _infos = envs.reset(seed=1)
        assert obs["screenshot"].shape == (2, 1080, 1920, 3)
        oracle = bundled_solution("os-create-file", "oracle")
        wrong = bundled_solution("os-create-file", "wrong")
        assert len(oracle) == len(wrong)
        for a, b in zip(oracle, wrong, strict=True):
            obs, rewards, terminated, _truncated, _infos = envs.step((json.dumps(a), json.dumps(b)))
        assert terminated.all()
        assert rewards.tolist() == [1.0, 0.0]
    finally:
        envs.close()


def test_sync_vector_env_steps_two_desktops():
    envs = gym.vector.SyncVectorEnv([lambda: gym.make(ENV_ID, task="os-create-file", enable_mcp=False)] * 2)
    try:
        obs, _infos = envs.reset(seed=3)
        assert obs["screenshot"].shape == (2, 1080, 1920, 3)
        wait = json.dumps({"name": "computer_use", "arguments": {"action": "wait", "time": 0}})
        obs, rewards, terminated, truncated, infos = envs.step((wait, "not json"))
        assert rewards.tolist() == [0.0, 0.0] and not terminated.any() and not truncated.any()
        assert infos["error"]["code"][1] == "invalid_json" and not infos["_error"][0]
    finally:
        envs.close()


def test_stale_guard_refuses_a_click_after_a_window_moved(make_env):
    env = make_env(task="os-create-file")  # the guard is on by default
    _obs, info = env.reset()
    old_frame = info["frame_id"]
    click = {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [400, 300]}}
    ok = env.step({**click, "arguments": {**click["arguments"], "frame_id": old_frame}})
    assert "error" not in ok[4]
    current = ok[4]["frame_id"]
    desktop = env.unwrapped.desktop

    def terminal_places() -> list[tuple[int, int]]:
        return [(w.x, w.y) for w in desktop.windows() if w.wm_class.startswith("xfce4-terminal")]

    before = terminal_places()
    desktop.execute("xdotool search --class xfce4-terminal windowmove %@ 300 200", shell=True)
    wait_until(lambda: terminal_places() != before, 10, "the window manager to move the terminal")
    _o, _r, _t, _tr, info = env.step({**click, "arguments": {**click["arguments"], "frame_id": current}})
    assert info["error"]["code"] == "stale_gui_frame"
    assert info["error"]["input_events_emitted"] is False
    fresh = info["frame_id"]
    _o, _r, _t, _tr, info = env.step({**click, "arguments": {**click["arguments"], "frame_id": fresh}})
    assert "error" not in info


def test_bash_channel_off_by_default_and_bounded_when_on(make_env):
    off = make_env(task="os-create-file")
    off.reset()
    assert off.step({"name": "bash", "arguments": {"command": "id"}})[4]["error"]["code"] == "unknown_tool"
    off.close()
    env = make_env(task="os-create-file", enable_bash=True, bash_output_chars=100)
    env.reset()
    obs, _r, _t, _tr, info = env.step({"name": "bash", "arguments": {"command": "id -un; pwd"}})
    assert obs["tool_result"] == "[exit code 0]\nuser\n/home/user\n"
    assert info["tool_call"]["exec_ok"] is True
    # The same record shape as an MCP call; what a command cannot know is None.
    assert set(info["tool_call"]) == ToolCallRecord.__required_keys__
    assert info["tool_call"]["returncode"] == 0 and info["tool_call"]["dispatched"] is True
    assert info["tool_call"]["effect"] is None and info["tool_call"]["in_catalog"] is False
    obs, *_ = env.step({"name": "bash", "arguments": {"command": "seq 1 1000"}})
    assert "[... truncated" in obs["tool_result"]
    obs, _r, _t, _tr, info = env.step({"name": "bash", "arguments": {"command": "sleep 5", "timeout": 1}})
    assert info["error"]["code"] == "timeout"
    assert info["tool_call"]["returncode"] == -1 and info["tool_call"]["exec_ok"] is False
    # A shell killed by SIGHUP also has returncode -1, and is no timeout.
    _o, _r, _t, _tr, info = env.step({"name": "bash", "arguments": {"command": "kill -HUP $$"}})
    assert "error" not in info and info["tool_call"]["returncode"] == -1
    assert env.step({"name": "bash", "arguments": {"command": 5}})[4]["error"]["code"] == "invalid_arguments"


def test_desktop_programs_get_default_signals_when_the_host_ignores_them(make_env):
    # A host run under nohup ignores SIGHUP; ignores survive exec, so without the guest's
    # reset every desktop shell would ignore it too (the suite run under nohup failed so).
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        env = make_env(task="os-create-file", enable_bash=True)
        env.reset()
    finally:
        signal.signal(signal.SIGHUP, previous)
    _o, _r, _t, _tr, info = env.step({"name": "bash", "arguments": {"command": "kill -HUP $$; echo alive"}})
    assert info["tool_call"]["returncode"] == -1, info["tool_call"]


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def _pids_of_uid(uid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid and _state(int(entry)) != "Z":
                    found.append(int(entry))
            except OSError:
                continue
    return found

"""Prepared resets: the next episode set up on a fresh desktop that the running agent cannot reach.

The desktop tests run a hostile episode beside a prepared desktop and check that the
prepared reset's state equals a cold reset's; that a dead or mismatched preparation
means the cold path, never an exception; and that ``close`` leaves no process of any
desktop the env made, a preparation under way included.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import signal
import threading
from pathlib import Path

import pytest
from osworld_mcp_env.backends.local import desktop as local
from osworld_mcp_env.backends.local.cgroups import DEFAULT_CPU_WEIGHT, GROUP_NAME
from osworld_mcp_env.env.config import PREPARING_CPU_WEIGHT
from osworld_mcp_env.env.core import OSWorldMCPEnv
from osworld_mcp_env.env.prepared_reset import PreparedEpisode, ResetPreparer
from osworld_mcp_env.errors import DesktopStartError
from osworld_mcp_env.tasks import load_task
from osworld_mcp_env.tasks.bundled import bundled_solution
from osworld_mcp_env.tasks.context import TaskContext
from polling import wait_until

TASK = "calc-sum-column"
READY_S = 180.0  # a preparation is a desktop start plus LibreOffice: generous on a loaded machine
PLACES = "/home/user /tmp /dev/shm /var/tmp /run/user/1000"
FILES = f"find {PLACES} -xdev \\( -type f -o -type l \\) 2>/dev/null | sort"
LO_TEMP = re.compile(r"lu\w+\.tmp")  # LibreOffice's randomly named scratch files in /tmp


def bash(env, command: str) -> tuple[str, dict]:
    call = {"name": "bash", "arguments": {"command": command}}
    obs, _reward, _terminated, _truncated, info = env.step(call)
    return obs["tool_result"], info


def desktop_state(env, info: dict) -> dict:
    """What a task's start is made of: the user's files, the windows, the document, the tools shown."""
    desktop = env.unwrapped.desktop
    listing = desktop.execute(FILES, shell=True).output.split()
    return {
        "files": [LO_TEMP.sub("lu*.tmp", path) for path in listing],
        "windows": [(w.title, w.wm_class, w.x, w.y, w.width, w.height) for w in desktop.windows()],
        "document": hashlib.sha256(desktop.read_file("/home/user/numbers.xlsx") or b"").hexdigest(),
        "tools": sorted(tool["name"] for tool in info["tools"]),
    }


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def pids_of_uids(uids: set[int]) -> list[int]:
    """Host processes whose real uid is one of ``uids``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                status = Path(f"/proc/{entry}/status").read_text()
            except OSError:
                continue
            uid = int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])
            if uid in uids and alive(int(entry)):
                found.append(int(entry))
    return found


def in_group(pids: list[int], group: Path) -> bool:
    """Every live one of ``pids`` is in the CPU cgroup ``group`` (a v1 ``cpu`` tree or v2's unified one)."""

    def member(line: str) -> bool:
        _id, controllers, path = line.split(":", 2)
        return path == f"/{GROUP_NAME}/{group.name}" and (
            controllers == "" or "cpu" in controllers.split(",")
        )

    return all(
        any(member(line) for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines())
        for pid in pids
        if alive(pid)
    )


def gone(desktop) -> bool:
    """The desktop's sandbox, processes and directories no longer exist."""
    uids = {desktop.uids.infra, desktop.uids.desktop}
    return not desktop.instance_dir.exists() and not pids_of_uids(uids)


@pytest.mark.desktop
def test_prepared_reset_after_a_hostile_episode_equals_a_cold_reset(make_env):
    env = make_env(task=TASK, prepare_resets=True, enable_bash=True)
    obs, info = env.reset()
    assert "desktop_ms" in info["timings"]
    cold = desktop_state(env, info)
    assert cold["tools"] and any("Calc" in w[0] for w in cold["windows"])
    used = env.unwrapped.desktop

    assert env.unwrapped.prepare_reset(TASK)
    prepared = env.unwrapped.preparer.ready(READY_S)
    assert prepared is not None
    prepared_pids = prepared.desktop.processes()
    assert prepared_pids
    cgroup = prepared.desktop.cgroup
    if cgroup.cpu_group is not None:  # the host gives CPU cgroups (CI's and ours do)
        assert cgroup.cpu_weight == PREPARING_CPU_WEIGHT and in_group(prepared_pids, cgroup.cpu_group)
        assert env.unwrapped.desktop.cgroup.cpu_weight == DEFAULT_CPU_WEIGHT

    # Episode N's agent looks for the prepared desktop, then attacks everything it can reach.
    listing, _ = bash(env, "ps -eo comm=")
    assert listing.split().count("Xvfb") == 1 and listing.split().count("soffice.bin") == 1, listing
    bash(
        env,
        "echo planted > /tmp/planted; echo planted > ~/planted; echo planted > /dev/shm/planted; "
        "echo planted >> ~/numbers.xlsx; pkill -9 soffice; pkill -9 Xvfb; kill -9 -1",
    )
    assert used.read_file("/tmp/planted") == b"planted\n"  # the attack ran in episode N's desktop
    wait_until(lambda: not any("Calc" in w.title for w in used.windows()), 60, "episode N's Calc to die")
    assert all(alive(pid) for pid in prepared_pids)
    assert any("Calc" in w.title for w in prepared.desktop.windows())

    obs, info = env.reset(options={"task": TASK, "prepare_next": TASK})
    assert "prepared_ms" in info["timings"] and env.unwrapped.desktop is prepared.desktop
    assert cgroup.cpu_group is None or cgroup.cpu_weight == DEFAULT_CPU_WEIGHT  # the episode's now
    state = desktop_state(env, info)
    assert not [path for path in state["files"] if "planted" in path]
    assert state == cold
    assert obs["active_app"] == "libreoffice_calc" and info["task_id"] == TASK
    wait_until(lambda: gone(used), 60, "the used desktop to be closed in the background")

    # The reset started the next preparation (``prepare_next``); a no-op episode scores 0.
    assert env.unwrapped.preparer.task == load_task(TASK)
    _obs, reward, terminated, _truncated, info = env.step(
        {"name": "computer_use", "arguments": {"action": "terminate", "status": "success"}}
    )
    assert terminated and reward == 0.0 and info["evaluation"]["score"] == 0.0
    assert env.unwrapped.preparer.ready(READY_S) is not None

    obs, info = env.reset()
    assert "prepared_ms" in info["timings"]
    for action in bundled_solution(TASK, "oracle"):
        _obs, reward, terminated, truncated, info = env.step(action)
        assert "error" not in info, info["error"]
        if terminated or truncated:
            break
    assert reward == 1.0, info.get("evaluation") or info.get("eval_error")


@pytest.mark.desktop
def test_a_dead_or_mismatched_preparation_takes_the_cold_path_and_close_leaves_nothing(make_env):
    env = make_env(task=TASK, prepare_resets=True, enable_mcp=False)
    preparer = env.unwrapped.preparer

    # A prepared desktop that died while it waited: the cold path, no exception.
    env.unwrapped.prepare_reset(TASK)
    dead = preparer.ready(READY_S)
    assert dead is not None
    for pid in dead.desktop.processes():
        with contextlib.suppress(ProcessLookupError):  # killing the sandbox's first takes the rest
            os.kill(pid, signal.SIGKILL)
    obs, info = env.reset()
    assert "desktop_ms" in info["timings"] and "prepared_ms" not in info["timings"]
    assert env.unwrapped.desktop is not dead.desktop and obs["active_app"] == "libreoffice_calc"
    wait_until(lambda: gone(dead.desktop), 60, "the dead prepared desktop to be closed")

    # Prepared for another task: discarded and closed, the reset is cold.
    env.unwrapped.prepare_reset("os-create-file")
    other = preparer.ready(READY_S)
    assert other is not None
    obs, info = env.reset()
    assert "desktop_ms" in info["timings"] and obs["active_app"] == "libreoffice_calc"
    wait_until(lambda: gone(other.desktop), 60, "the mismatched prepared desktop to be closed")

    # close() with one preparation done and discarded and another under way.
    env.unwrapped.prepare_reset("os-create-file")
    discarded = preparer.ready(READY_S)
    assert discarded is not None
    known = set(local._LIVE)
    env.unwrapped.prepare_reset(TASK)
    in_flight = wait_until(lambda: set(local._LIVE) - known, 60, "the next preparation's desktop")
    active = env.unwrapped.desktop
    env.close()
    for desktop in (active, discarded.desktop, *in_flight):
        assert gone(desktop), desktop.instance_dir
        assert desktop not in set(local._LIVE)


def test_prepared_resets_are_off_by_default():
    env = OSWorldMCPEnv(task=TASK)
    try:
        assert env.preparer is None and env.prepare_reset(TASK) is False
    finally:
        env.close()
    with pytest.raises(ValueError, match=r"preparing_cpu_weight must be in 1\.\.10000"):
        OSWorldMCPEnv(task=TASK, prepare_resets=True, preparing_cpu_weight=0)


class Resource:
    def __init__(self) -> None:
        self.closed = threading.Event()

    def close(self) -> None:
        self.closed.set()


def test_a_failed_preparation_is_a_reason_and_closes_what_it_made():
    made = Resource()

    def build(task, register):
        register(made)
        raise DesktopStartError("no X server")

    preparer = ResetPreparer(build)
    preparer.prepare(load_task(TASK))
    prepared, why_not = preparer.take(load_task(TASK))
    assert prepared is None and "DesktopStartError: no X server" in why_not
    assert made.closed.is_set()
    preparer.close()


def test_discarding_a_preparation_under_way_closes_its_desktop_at_once():
    made, registered, release = Resource(), threading.Event(), threading.Event()
    late = Resource()

    def build(task, register):
        register(made)
        registered.set()
        release.wait(60)  # a setup step that runs until its desktop is closed under it
        register(late)  # the preparation was discarded meanwhile: this raises
        raise AssertionError("register() did not stop a discarded preparation")

    preparer = ResetPreparer(build)
    preparer.prepare(load_task(TASK))
    assert registered.wait(60)
    preparer.discard()
    assert made.closed.wait(60)  # before the build returned
    release.set()
    preparer.close()
    assert late.closed.is_set() and preparer.task is None


class AnsweringDesktop(Resource):
    """The one desktop call the preparer makes (a liveness check), answered."""

    def windows(self) -> list:
        return []


def test_a_reset_does_not_wait_for_a_preparation_slower_than_a_cold_reset():
    task, release = load_task(TASK), threading.Event()
    first_build_s = 2.0

    def build(task, register):
        desktop = AnsweringDesktop()
        register(desktop)
        release.wait(first_build_s)  # the first build lasts 2 s; the second until released
        return PreparedEpisode(task, desktop, TaskContext(task.id, Path("/nonexistent")), None)

    preparer = ResetPreparer(build)
    preparer.prepare(task)
    first, why_not = preparer.take(task, cold_s=0.5)  # no duration known yet: it waits
    assert first is not None and why_not == ""
    first_build_s = 60.0
    preparer.prepare(task)
    second, why_not = preparer.take(task, cold_s=0.5)  # ~2 s left by the last build > 0.5 s
    assert second is None and "cold reset" in why_not
    release.set()
    preparer.close()

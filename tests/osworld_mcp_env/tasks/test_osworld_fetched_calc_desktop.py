"""A real OSWorld Calc task, run as is from a cache that ``osworld-mcp tasks fetch`` filled (``-m desktop``).

The task JSON is OSWorld's own (``libreoffice_calc/eb03d19a``: transpose B2:F5 to B8),
read from the shared corpus. Its input spreadsheet and its gold file come from the
loopback Hub of ``hub_server.py`` through ``tasks fetch``, generated stand-ins for the
real files (``test_tasks_fetch.calc_stand_ins``). The oracle types the transposed
table through the GUI and saves; the no-op ends at once. OSWorld's own postconfig
(activate the window, Ctrl+S through pyautogui) and ``compare_table`` score both.
"""

from __future__ import annotations

import gymnasium as gym
import pytest
from hub_server import Site
from osworld_mcp_env.tasks.cache import FileCache
from osworld_mcp_env.tasks.coverage import RUNNABLE_WITH_CACHE, assess
from task_data import OSWORLD_EXAMPLES
from test_tasks_fetch import CALC_TASK, run_cli, serve_calc_task, site  # noqa: F401 - site is a fixture

pytestmark = pytest.mark.desktop

TASK_FILE = OSWORLD_EXAMPLES / "libreoffice_calc" / f"{CALC_TASK}.json"
DOCUMENT = "/home/user/Students_Class_Subject_Marks.xlsx"
WAIT_STEPS = 60  # "wait" actions of 0.5 s an agent spends at most for Calc to come up
# Waits (at most 60 s) until Calc's save is on disk: the saved sheet holds E12, the last cell of the
# transposed table (the input ends at F5). A zip read while Calc writes it may be unreadable: read again.
WAIT_SAVED = f"""python3 - <<'EOF'
import time, zipfile
deadline = time.monotonic() + 60
while True:
    try:
        if b'r="E12"' in zipfile.ZipFile("{DOCUMENT}").read("xl/worksheets/sheet1.xml"):
            break
    except (zipfile.BadZipFile, KeyError, OSError):
        pass
    if time.monotonic() > deadline:
        raise SystemExit("Calc did not save the transposed table")
    time.sleep(0.2)
EOF"""


def gui(action: str, **arguments) -> dict:
    return {"name": "computer_use", "arguments": {"action": action, **arguments}}


def oracle() -> list[dict]:
    """Go to B8, type the transpose of B2:F5 (cell (r, c) = 10 r + c) row by row, save, wait for the file."""
    rows = ["\t".join(str(10 * r + c) for r in range(1, 5)) for c in range(1, 6)]
    return [
        gui("key", keys=["ctrl", "Home"]),
        *[gui("key", keys=["Down"]) for _ in range(7)],
        gui("key", keys=["Right"]),
        # Enter after Tab-entered cells returns to the column the row started in (B).
        gui("type", text="".join(f"{row}\n" for row in rows)),
        gui("key", keys=["ctrl", "s"]),
        {"name": "bash", "arguments": {"command": WAIT_SAVED}},
        gui("terminate", status="success"),
    ]


@pytest.fixture
def cache(site: Site, tmp_path_factory) -> str:  # noqa: F811 - the imported fixture
    serve_calc_task(site)
    root = tmp_path_factory.mktemp("fetched")
    assert run_cli([CALC_TASK, "--examples", str(OSWORLD_EXAMPLES), "--cache", str(root)], site) == 0
    assert assess(TASK_FILE, FileCache((root,))).status == RUNNABLE_WITH_CACHE
    return str(root)


def run_episode(env: gym.Env, actions: list[dict]) -> tuple[float, dict]:
    _obs, info = env.reset(options={"task": str(TASK_FILE)})
    for _ in range(WAIT_STEPS):
        if info["active_window"] == "Students_Class_Subject_Marks.xlsx - LibreOffice Calc":
            break
        _obs, _r, _t, _tr, info = env.step(gui("wait", time=0.5))
    assert "Students_Class_Subject_Marks.xlsx" in info["active_window"], info["active_window"]
    for action in actions:
        _obs, reward, terminated, truncated, info = env.step(action)
        assert "error" not in info, info["error"]
        assert info.get("tool_call", {}).get("returncode", 0) == 0, _obs["tool_result"]
        if terminated or truncated:
            assert "eval_error" not in info, info["eval_error"]
            return float(reward), info
    raise AssertionError("the actions did not end the episode")


def test_the_fetched_calc_task_scores_one_solved_and_zero_untouched(cache: str):
    env = gym.make(
        "osworld_mcp_env:OSWorldMCP-v0",
        enable_bash=True,
        enable_mcp=False,
        step_timeout_s=120,
        cache_dirs=(cache,),
    )
    try:
        reward, info = run_episode(env, oracle())
        assert reward == 1.0, info.get("evaluation")
        reward, info = run_episode(env, [gui("terminate", status="success")])
        assert reward == 0.0, info.get("evaluation")
    finally:
        env.close()

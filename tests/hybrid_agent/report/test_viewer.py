"""The viewer in headless Chromium: click markers where the GUI action clicked, index filters, linked PNGs."""

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hybrid_agent.recorder import EpisodeWriter, check_run_config
from hybrid_agent.report import write_viewer
from PIL import Image

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"
)
GREEN, BLUE = (0, 255, 0), (0, 0, 255)


def click(x, y, action="left_click"):
    return {"name": "computer_use", "arguments": {"action": action, "coordinate": [x, y]}}


def step(i, action):
    return {"step": i, "parse": {"ok": True, "call": action, "repairs": []}, "action": action, "tokens": {}}


def write_run(run_dir):
    """calc: success, two GUI steps on a 400x200 screen; os: failed; writer: errored, no steps."""
    check_run_config(run_dir, {"policy": "scripted", "agent": {"context": "win4"}})
    with ThreadPoolExecutor(1) as pool:
        calc = EpisodeWriter(run_dir, "calc-a", 0, {"task_id": "calc-a", "domain": "calc", "run": 0}, pool)
        calc.step(step(0, click(300, 50)), np.full((200, 400, 3), GREEN, np.uint8))
        arguments = {"action": "left_click_drag", "start_coordinate": [40, 150], "coordinate": [360, 180]}
        drag = {"name": "computer_use", "arguments": arguments}
        calc.step(step(1, drag), np.full((200, 400, 3), BLUE, np.uint8))
        calc.finish({"score": 1.0, "error": None, "wall_s": 1.0})
        os_task = EpisodeWriter(run_dir, "os-b", 0, {"task_id": "os-b", "domain": "os", "run": 0}, pool)
        os_task.step(step(0, {"name": "os.list", "arguments": {}}), np.zeros((200, 400, 3), np.uint8))
        os_task.finish({"score": 0.0, "error": None, "wall_s": 1.0})
        writer = EpisodeWriter(
            run_dir, "writer-c", 0, {"task_id": "writer-c", "domain": "writer", "run": 0}, pool
        )
        error = {"type": "policy_error", "code": "context_length", "message": "too long"}
        writer.finish({"score": None, "error": error, "wall_s": 1.0})


def chromium(tmp_path, url, *mode):
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
    ]
    flags += ["--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}"]
    flags += ["--force-device-scale-factor=1", "--hide-scrollbars"]
    done = subprocess.run(
        [CHROMIUM, *flags, *mode, url], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout


def test_screenshots_are_linked_files_and_a_page_elsewhere_links_back(tmp_path):
    write_run(tmp_path / "run")
    page = write_viewer(tmp_path / "run")
    text = page.read_text()
    assert "data:image" not in text and "src='episodes/calc-a__run0/step_000.png'" in text
    other = (
        write_viewer(tmp_path / "run", tmp_path / "out" / "v.html")
        if (tmp_path / "out").mkdir() is None
        else None
    )
    assert "src='../run/episodes/calc-a__run0/step_000.png'" in other.read_text()
    dom = chromium(tmp_path, other.as_uri(), "--dump-dom")
    assert dom.count('<img alt="step screenshot"') == 3


def test_the_click_marker_is_drawn_where_the_action_clicked(tmp_path):
    write_run(tmp_path / "run")
    page = write_viewer(tmp_path / "run")
    shot = tmp_path / "page.png"
    chromium(tmp_path, page.as_uri() + "?outcome=success", f"--screenshot={shot}", "--window-size=1000,1600")
    pixels = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    green = np.all(pixels == GREEN, axis=-1)
    ys, xs = np.nonzero(green)
    assert len(xs), "the step-0 screenshot was not rendered"
    top, bottom, left, right = ys.min(), ys.max(), xs.min(), xs.max()
    box = pixels[top : bottom + 1, left : right + 1]
    magenta = (box[..., 0] > 200) & (box[..., 1] < 90) & (box[..., 2] > 200)
    my, mx = np.nonzero(magenta)
    assert len(mx), "no marker drawn on the step-0 screenshot"
    # The ring's centre, as a fraction of the rendered image: the click at (300, 50) of 400 x 200.
    assert mx.mean() / (right - left + 1) == pytest.approx(300 / 400, abs=0.02)
    assert my.mean() / (bottom - top + 1) == pytest.approx(50 / 200, abs=0.03)


def test_a_drag_gets_two_markers_and_a_tool_call_none(tmp_path):
    write_run(tmp_path / "run")
    dom = chromium(tmp_path, write_viewer(tmp_path / "run").as_uri(), "--dump-dom")
    assert 'class="marker at" data-x="300" data-y="50"' in dom
    assert 'class="marker start" data-x="40" data-y="150"' in dom and "left:10.000%;top:75.000%" in dom
    assert 'class="marker end" data-x="360" data-y="180"' in dom
    assert dom.count('class="marker') == 3  # the os.list call points nowhere


@pytest.mark.parametrize(
    ("query", "shown"),
    [
        ("", {"calc-a", "os-b", "writer-c"}),
        ("?outcome=errored", {"writer-c"}),
        ("?outcome=failed", {"os-b"}),
        ("?domain=calc", {"calc-a"}),
        ("?error=policy_error:context_length", {"writer-c"}),
        ("?outcome=success&domain=os", set()),
    ],
)
def test_the_index_filters_hide_the_other_episodes(tmp_path, query, shown):
    write_run(tmp_path / "run")
    dom = chromium(tmp_path, write_viewer(tmp_path / "run").as_uri() + query, "--dump-dom")
    for task in ("calc-a", "os-b", "writer-c"):
        section = dom[dom.index(f'<section class="episode" id="ep-{task}__run0"') :].split(">", 1)[0]
        row = dom[dom.index(f'<a href="#ep-{task}__run0"') - 300 : dom.index(f'<a href="#ep-{task}__run0"')]
        row = row[row.rindex("<tr") :]
        assert ("hidden" not in section) == (task in shown), (task, section)
        assert ("hidden" not in row) == (task in shown), (task, row)
    assert f'<span id="shown">{len(shown)}</span> of 3 shown' in dom

"""The graphical zoom on the real desktop: no input, a crop of the screen, clicks read on it land.

Calc's grid at 1920x1080 (calc-sum-column): the region [0, 150, 479, 419] holds columns
A-F and rows 1-12; enlarged 4 times it fills the screen. The harness reads the reply
on the zoomed image (Qwen3-VL's 0..1000 grid), maps it back through the zoom, and the
env's guard checks it against the zoom's parent frame.
"""

from __future__ import annotations

import lxml.etree
import numpy as np
import pytest
from hybrid_agent.agent_loop import AgentConfig, AgentEpisode, AgentLoop
from hybrid_agent.policies.base import Generation
from osworld_mcp_env.evaluators.metrics.a11y import A11Y_NAMESPACES
from polling import wait_until

pytestmark = pytest.mark.desktop
REGION = [0, 150, 479, 419]
DOC = "/home/user/numbers.xlsx"


def gui(action: str, frame_id: int | None = None, **arguments) -> dict:
    args = {"action": action, **arguments}
    if frame_id is not None:
        args["frame_id"] = frame_id
    return {"name": "computer_use", "arguments": args}


def reply(action: str, x: int, y: int) -> Generation:
    call = f'{{"name": "computer_use", "arguments": {{"action": "{action}", "coordinate": [{x}, {y}]}}}}'
    return Generation(text=f"Action: {action}.\n<tool_call>\n{call}\n</tool_call>")


def name_box(env) -> str:
    """The Name Box's text (the single-line text field of Calc's formula bar), from the live tree."""
    tree = lxml.etree.fromstring(env.unwrapped.desktop.accessibility_tree().encode())
    fields = tree.xpath("//text[@st:single_line='true']", namespaces=A11Y_NAMESPACES)
    return (fields[0].text or "") if fields else ""


def damage(env) -> int | None:
    return env.unwrapped.desktop.client.focus().changes


def popups(env) -> list:
    return [w for w in env.unwrapped.desktop.client.layout().windows if w.override_redirect and w.width > 1]


@pytest.fixture
def calc(make_env):
    env = make_env(task="calc-sum-column", enable_mcp=False)  # the guard is on by default
    obs, info = env.reset()
    return env, obs, info


def test_a_zoom_sends_no_input_and_shows_the_region_enlarged_from_a_fresh_frame(calc):
    env, obs, info = calc
    before_damage, before_bytes = damage(env), env.unwrapped.desktop.read_file(DOC)
    zoomed, _r, _t, _tr, zinfo = env.step(gui("zoom", region=REGION))
    assert "error" not in zinfo, zinfo.get("error")
    assert zinfo["zoom"] == {"region": REGION, "scale": 4, "parent_frame_id": 2, "size": [1920, 1080]}
    assert zinfo["frame_id"] == info["frame_id"] + 1  # the crop's own capture, kept for the guard
    assert damage(env) == before_damage and env.unwrapped.desktop.read_file(DOC) == before_bytes
    # Each 4x4 block is one screen pixel of the region (nothing moved on the screen meanwhile).
    screen = env.unwrapped.render()
    crop = screen[150:420, 0:480]
    assert np.array_equal(zoomed["screenshot"][::4, ::4], crop)
    assert np.array_equal(zoomed["screenshot"][3::4, 3::4], crop)
    # Bad zooms are values: nothing enlarged, no traceback.
    for region, code in (([0, 150, 2000, 419], "out_of_screen"), ([0, 0, 1200, 100], "invalid_arguments")):
        obs, _r, _t, _tr, bad = env.step(gui("zoom", region=region))
        assert bad["error"]["code"] == code and "zoom" not in bad
        assert obs["screenshot"].shape == (1080, 1920, 3)


def test_a_click_read_on_the_zoom_lands_on_the_cell_the_mapping_names(calc):
    env, obs, _info = calc
    loop = AgentLoop(AgentConfig(zoom=True))  # Qwen3-VL: 0..1000 on the image it sees
    _o, _r, _t, _tr, zinfo = env.step(gui("zoom", region=REGION))
    episode = AgentEpisode("calc-sum-column", 0, obs["instruction"], _o, zinfo)
    # C4 on the zoomed image is around (932, 406) of 1920x1080: the grid's (486, 376).
    decision = loop.decide(loop.observe(episode), reply("left_click", 486, 376))
    # 486 -> 933 px of the image -> 0 + 933 // 4 = 233; 376 -> 406 px -> 150 + 406 // 4 = 251.
    assert decision.action == {
        "name": "computer_use",
        "arguments": {"action": "left_click", "coordinate": [233, 251], "frame_id": zinfo["frame_id"]},
    }
    _o, _r, _t, _tr, cinfo = env.step(decision.action)
    assert "error" not in cinfo, cinfo.get("error")
    wait_until(lambda: name_box(env) == "C4", 10, "the Name Box to show C4")
    assert "zoom" not in cinfo  # the next observation is the whole screen: the zoom counted once


def test_a_zoom_after_an_unrelated_change_still_refuses_a_click_under_a_menu_opened_since(calc):
    env, _obs, _info = calc
    _o, _r, _t, _tr, info = env.step(gui("key", keys=["Down"]))  # unrelated: the cursor goes to A2
    wait_until(lambda: name_box(env) == "A2", 10, "the cursor to move")
    _o, _r, _t, _tr, zinfo = env.step(gui("zoom", region=REGION))
    parent = zinfo["zoom"]["parent_frame_id"]
    assert parent == info["frame_id"] + 1  # the zoom's own capture, not the frame before it
    _o, _r, _t, _tr, info = env.step(gui("key", keys=["alt", "f"]))
    wait_until(lambda: len(popups(env)) >= 1, 10, "the File menu to open")
    menus = popups(env)
    loop = AgentLoop(AgentConfig(zoom=True, coordinates="absolute_screen"))
    episode = AgentEpisode("calc-sum-column", 0, "", _o, zinfo)
    # (240, 200) on the zoom is screen (60, 200): a cell in the parent frame, File > Templates now.
    decision = loop.decide(loop.observe(episode), reply("left_click", 240, 200))
    arguments = decision.action["arguments"]
    assert arguments == {"action": "left_click", "coordinate": [60, 200], "frame_id": parent}
    _o, _r, _t, _tr, info = env.step(decision.action)
    error = info["error"]
    assert error["code"] == "stale_gui_frame" and error["input_events_emitted"] is False
    assert popups(env) == menus  # no input: the menu is still open as it was
    env.step(gui("key", keys=["Escape"]))

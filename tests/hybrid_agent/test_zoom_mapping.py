"""The harness side of the zoom: points read on the zoomed image go back to the screen, for one reply.

Hand-computed: Qwen3-VL's 0..1000 grid on a 1920x1080 image, then the zoom's integer blocks.
"""

from __future__ import annotations

import json

import numpy as np
from hybrid_agent.agent_loop import AgentConfig, AgentEpisode, AgentLoop
from hybrid_agent.context import build_context
from hybrid_agent.policies.base import Generation
from hybrid_agent.settings import agent_setting
from hybrid_agent.skill import SKILL_TEXT, ZOOM_SKILL
from hybrid_agent.trajectory import Call, Frame, Observation
from hybrid_agent.zoom import unzoom_call
from osworld_mcp_env.actions import COMPUTER_USE_ACTIONS
from osworld_mcp_env.zoom import ZoomView
from PIL import Image

VIEW = ZoomView((0, 150, 479, 419), 4, parent_frame_id=9)  # 480x270 at 4x: the whole 1920x1080 image
ZOOM_INFO = {"frame_id": 9, "tools": [], "zoom": VIEW.to_info()}


def reply(arguments: dict) -> Generation:
    call = json.dumps({"name": "computer_use", "arguments": arguments})
    return Generation(text=f"Action: act.\n<tool_call>\n{call}\n</tool_call>")


def episode(info: dict) -> AgentEpisode:
    obs = {"screenshot": np.zeros((1080, 1920, 3), np.uint8), "instruction": "Do it.", "tool_result": ""}
    return AgentEpisode("t", 0, "Do it.", obs, info)


def decide(loop: AgentLoop, info: dict, arguments: dict):
    return loop.decide(loop.observe(episode(info)), reply(arguments))


def test_unzoom_maps_each_point_to_the_pixel_its_block_shows():
    click = Call("computer_use", {"action": "left_click", "coordinate": [933, 406]})
    assert unzoom_call(click, VIEW).arguments["coordinate"] == [233, 251]  # 0 + 933 // 4, 150 + 406 // 4
    edges = Call(
        "computer_use", {"action": "left_click_drag", "start_coordinate": [0, 0], "coordinate": [1919, 1079]}
    )
    mapped = unzoom_call(edges, VIEW).arguments
    assert mapped["start_coordinate"] == [0, 150] and mapped["coordinate"] == [479, 419]  # the corners
    nested = Call("computer_use", {"action": "zoom", "region": [400, 400, 803, 603]})
    assert unzoom_call(nested, VIEW).arguments["region"] == [100, 250, 200, 300]
    small = ZoomView((10, 10, 109, 59), 3, parent_frame_id=1)  # 300x150 of the 1920x1080 image
    assert unzoom_call(
        Call("computer_use", {"action": "mouse_move", "coordinate": [299, 149]}), small
    ).arguments["coordinate"] == [109, 59]
    margin = unzoom_call(Call("computer_use", {"action": "left_click", "coordinate": [300, 20]}), small)
    assert isinstance(margin, str) and "outside the zoomed region" in margin and "300x150" in margin
    keys = Call("computer_use", {"action": "key", "keys": ["ctrl", "s"]})
    assert unzoom_call(keys, small) == keys
    tool = Call("libreoffice_calc.set_cell_value", {"cell": "A1", "coordinate": [1, 2]})
    assert unzoom_call(tool, small) == tool


def test_a_reply_to_a_zoom_is_mapped_through_the_grid_and_the_zoom_and_cites_the_parent_frame():
    loop = AgentLoop(AgentConfig(zoom=True))
    decision = decide(loop, ZOOM_INFO, {"action": "left_click", "coordinate": [486, 376]})
    # Grid -> image: 486 * 1.92 = 933.12 -> 933, 376 * 1.08 = 406.08 -> 406; image -> screen: (233, 251).
    assert decision.action == {
        "name": "computer_use",
        "arguments": {"action": "left_click", "coordinate": [233, 251], "frame_id": 9},
    }
    assert decision.record["zoom"] == VIEW.to_info()
    assert decision.call.arguments["coordinate"] == [486, 376]  # the history keeps what the model wrote
    # Rounding at the far edge: 1000 -> 1920 is clamped to the image's last pixel 1919 -> 479.
    decision = decide(loop, ZOOM_INFO, {"action": "left_click", "coordinate": [1000, 1000]})
    assert decision.action["arguments"]["coordinate"] == [479, 419]
    # 0.26 of the grid is 0.4992 px: half up gives 0, the first block.
    decision = decide(loop, ZOOM_INFO, {"action": "left_click", "coordinate": [0.26, 0.26]})
    assert decision.action["arguments"]["coordinate"] == [0, 150]


def test_a_point_on_the_black_margin_executes_nothing():
    loop = AgentLoop(AgentConfig(zoom=True, coordinates="absolute_screen"))
    small = {**ZOOM_INFO, "zoom": ZoomView((10, 10, 109, 59), 3, parent_frame_id=9).to_info()}
    decision = decide(loop, small, {"action": "left_click", "coordinate": [300, 20]})
    assert decision.malformed and decision.record["parse"]["code"] == "out_of_space"
    assert "outside the zoomed region" in decision.feedback


def test_the_zoom_counts_for_the_reply_to_it_only():
    loop = AgentLoop(AgentConfig(zoom=True, coordinates="absolute_screen"))
    click = {"action": "left_click", "coordinate": [40, 40]}
    assert decide(loop, ZOOM_INFO, click).action["arguments"]["coordinate"] == [10, 160]
    # The env's next observation, after whatever the reply did, is the whole screen: no mapping.
    whole = {"frame_id": 10, "tools": []}
    assert decide(loop, whole, click).action["arguments"] == {**click, "frame_id": 10}
    # The model is told which it looks at.
    zoomed_text = loop.observe(episode(ZOOM_INFO)).request.messages[-1]["content"][-1]["text"]
    assert "The screenshot is a zoom of frame 9: part of the screen enlarged 4 times" in zoomed_text
    whole_text = loop.observe(episode(whole)).request.messages[-1]["content"][-1]["text"]
    assert "zoom" not in whole_text and "The screenshot is frame 10;" in whole_text


def test_the_study_is_not_offered_zoom_and_refuses_it_and_hcu_offers_and_accepts_it():
    study, hcu = AgentLoop(AgentConfig()), AgentLoop(agent_setting("hcu").apply(AgentConfig()))
    whole = {"frame_id": 3, "tools": []}
    zoom = {"action": "zoom", "region": [0, 0, 250, 250]}
    refused = decide(study, whole, zoom)
    assert refused.malformed and refused.record["parse"]["code"] == "unknown_gui_action"
    accepted = decide(hcu, whole, zoom)
    # Grid corners to screen pixels, as points are: 250 * 1.92 = 480, 250 * 1.08 = 270. No frame: no input.
    assert accepted.action["arguments"] == {"action": "zoom", "region": [0, 0, 480, 270]}
    enums = []
    for loop in (study, hcu):
        function = loop.adapter.functions((), (1920, 1080))[0]["function"]
        enums.append(function["parameters"]["properties"]["action"]["enum"])
    assert enums == [list(COMPUTER_USE_ACTIONS), [*COMPUTER_USE_ACTIONS, "zoom"]]


def _system(config: AgentConfig) -> str:
    frame = Frame(Image.new("RGB", (64, 48)))
    context = build_context([], Observation(frame), "Do it.", (), config.context_config())
    return context.messages[0]["content"]


def test_the_skill_text_teaches_zoom_where_it_is_offered():
    hcu = agent_setting("hcu").apply(AgentConfig())
    assert SKILL_TEXT in _system(hcu) and ZOOM_SKILL in _system(hcu)
    no_zoom = AgentConfig(skill_text=True)  # the skill text alone: no paragraph about an action not shown
    assert SKILL_TEXT in _system(no_zoom) and ZOOM_SKILL not in _system(no_zoom)
    assert '"zoom"' in _system(hcu) and '"zoom"' not in _system(no_zoom)

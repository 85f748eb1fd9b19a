"""The adapter registry and the Qwen families: spaces, screenshots, screen-pixel calls, out_of_space."""

import pytest
from hybrid_agent.adapters import AdapterOptions, ModelAdapter, adapter_names, get_adapter, register_adapter
from hybrid_agent.coords import CoordinatePolicy
from hybrid_agent.errors import ConfigError, RegistryError
from hybrid_agent.parse import ParsedAction, ParseError, ParseErrorCode
from hybrid_agent.policies.base import Generation
from hybrid_agent.trajectory import Call
from PIL import Image

SCREEN = (1920, 1080)


def _click(x, y):
    return (
        'Action: click\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", '
        f'"coordinate": [{x}, {y}]}}}}\n</tool_call>'
    )


def test_qwen_families_are_registered_and_unknown_names_list_them():
    assert {"qwen3-vl", "qwen3-vl-thinking", "qwen2.5-vl"} <= set(adapter_names())
    with pytest.raises(RegistryError, match=r"Did you mean 'qwen3-vl'\?"):
        get_adapter("qwen3-vI")


def test_a_second_class_under_a_taken_name_raises():
    class Other(ModelAdapter):
        def parse_text(self, text, tools):
            raise AssertionError("never called")

    with pytest.raises(RegistryError, match="Duplicate model adapter 'qwen3-vl'"):
        register_adapter("qwen3-vl")(Other)


def test_qwen3_vl_maps_the_grid_onto_the_screen_and_keeps_the_call_as_written():
    parsed = get_adapter("qwen3-vl").parse(_click(500, 500), [], SCREEN)
    assert isinstance(parsed, ParsedAction)
    assert parsed.call == Call("computer_use", {"action": "left_click", "coordinate": [960, 540]})
    assert parsed.as_written.arguments["coordinate"] == [500, 500]
    assert parsed.action_line == "click"


def test_qwen3_vl_grid_edge_is_inside_and_past_it_is_out_of_space():
    adapter = get_adapter("qwen3-vl")
    edge = adapter.parse(_click(1000, 1000), [], SCREEN)
    assert isinstance(edge, ParsedAction) and edge.call.arguments["coordinate"] == [1919, 1079]
    past = adapter.parse(_click(1001, 10), [], SCREEN)
    assert isinstance(past, ParseError) and past.code == ParseErrorCode.OUT_OF_SPACE
    assert "[0, 1000]" in past.message


def test_qwen25_vl_uses_the_released_max_pixels_so_the_centre_lands_at_the_centre():
    adapter = get_adapter("qwen2.5-vl")
    assert adapter.coordinates.max_pixels == 12845056
    assert adapter.space(SCREEN) == (1932, 1092)  # 69x39 cells of 28 px, under 12,845,056 pixels
    parsed = adapter.parse(_click(966, 546), [], SCREEN)
    assert isinstance(parsed, ParsedAction) and parsed.call.arguments["coordinate"] == [960, 540]
    out = adapter.parse(_click(1932, 10), [], SCREEN)
    assert isinstance(out, ParseError) and out.code == ParseErrorCode.OUT_OF_SPACE


def test_qwen25_vl_resizes_the_screenshot_to_its_space_and_qwen3_vl_does_not():
    frame = Image.new("RGB", SCREEN)
    assert get_adapter("qwen2.5-vl").preprocess(frame).size == (1932, 1092)
    assert get_adapter("qwen3-vl").preprocess(frame) is frame


def test_pixel_bounds_and_space_are_options():
    small = get_adapter("qwen2.5-vl", AdapterOptions(max_pixels=28 * 28 * 1280))
    assert small.space(SCREEN) == (1316, 728)
    screen = get_adapter("qwen3-vl", AdapterOptions(coordinates=CoordinatePolicy.ABSOLUTE_SCREEN))
    assert screen.space(SCREEN) == SCREEN
    with pytest.raises(ConfigError, match="min_pixels <= max_pixels"):
        get_adapter("qwen2.5-vl", AdapterOptions(min_pixels=10, max_pixels=5))


def test_the_prompt_states_the_space_the_mapping_uses():
    from hybrid_agent.prompt import PromptConfig

    assert "resolution is 1932x1092" in get_adapter("qwen2.5-vl").system_prompt([], SCREEN, PromptConfig())
    assert "resolution is 1000x1000" in get_adapter("qwen3-vl").system_prompt([], SCREEN, PromptConfig())


def test_thinking_replies_without_a_close_tag_execute_nothing_and_reasoning_apart_is_read():
    unfinished = get_adapter("qwen3-vl-thinking").parse("I will click.\n" + _click(1, 1), [], SCREEN)
    assert isinstance(unfinished, ParseError) and unfinished.code == ParseErrorCode.UNFINISHED_REASONING
    apart = Generation(text=_click(1, 1), reasoning="The button is top left.")
    parsed = get_adapter("qwen3-vl-thinking").parse(apart, [], SCREEN)
    assert isinstance(parsed, ParsedAction) and parsed.think == "The button is top left."

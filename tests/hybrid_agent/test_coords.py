"""Coordinate mapping: hand-computed points, clamping and round trips at three screen sizes."""

import math

import pytest
from hybrid_agent.coords import (
    CoordinateConfig,
    CoordinatePolicy,
    model_space,
    smart_resize,
    to_model,
    to_screen,
)
from hybrid_agent.errors import ConfigError

SCREENS = [(1920, 1080), (1280, 720), (1367, 769)]  # the last one odd on both axes
GRID = CoordinateConfig(policy=CoordinatePolicy.RELATIVE_GRID)
RESIZED = CoordinateConfig(policy=CoordinatePolicy.ABSOLUTE_RESIZED)
SCREEN = CoordinateConfig(policy=CoordinatePolicy.ABSOLUTE_SCREEN)


def test_relative_grid_points_by_hand():
    assert to_screen((500, 500), (1920, 1080), GRID) == (960, 540)
    assert to_screen((0, 0), (1920, 1080), GRID) == (0, 0)
    assert to_screen((1000, 1000), (1920, 1080), GRID) == (1919, 1079)  # 1920 clamped to the last pixel
    assert to_screen((333, 667), (1280, 720), GRID) == (426, 480)  # 426.24 -> 426, 480.24 -> 480
    assert to_screen((250, 250), (1367, 769), GRID) == (342, 192)  # 341.75 -> 342, 192.25 -> 192


def test_out_of_range_model_points_are_clamped():
    assert to_screen((-20, 1200), (1280, 720), GRID) == (0, 719)
    assert to_screen((5000, -1), (1280, 720), SCREEN) == (1279, 0)


def test_smart_resize_by_hand_and_against_transformers():
    # 1080x1920, factor 28, max 1280*28*28: area too large -> beta = sqrt(2073600/1003520) = 1.4375
    # h = floor(1080/1.4375/28)*28 = 26*28 = 728, w = floor(1920/1.4375/28)*28 = 47*28 = 1316.
    assert smart_resize(1080, 1920, 28, 56 * 56, 28 * 28 * 1280) == (728, 1316)
    assert smart_resize(1080, 1920, 32, 65536, 16777216) == (1088, 1920)
    assert smart_resize(20, 30, 28, 56 * 56, 28 * 28 * 1280) == (56, 84)  # too small: scaled up
    pytest.importorskip("transformers")
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize as reference

    for height, width in [(1080, 1920), (720, 1280), (769, 1367), (20, 30), (4000, 300)]:
        for factor, lo, hi in [(28, 3136, 1003520), (32, 65536, 16777216)]:
            assert smart_resize(height, width, factor, lo, hi) == reference(height, width, factor, lo, hi)


def test_absolute_resized_maps_through_the_resized_size():
    # The released processor's max_pixels (12,845,056): 1080x1920 only rounds to 1092x1932.
    assert model_space((1920, 1080), RESIZED) == (1932, 1092)
    assert to_screen((966, 546), (1920, 1080), RESIZED) == (960, 540)  # the centre maps to the centre
    small = CoordinateConfig(policy=CoordinatePolicy.ABSOLUTE_RESIZED, max_pixels=28 * 28 * 1280)
    assert model_space((1920, 1080), small) == (1316, 728)
    assert to_screen((658, 364), (1920, 1080), small) == (960, 540)


def test_prompt_resolution_follows_the_policy():
    assert model_space((1367, 769), GRID) == (1000, 1000)
    assert model_space((1367, 769), SCREEN) == (1367, 769)


@pytest.mark.parametrize("screen", SCREENS)
@pytest.mark.parametrize("config", [GRID, RESIZED, SCREEN], ids=["grid", "resized", "screen"])
def test_screen_to_model_to_screen_round_trip_error_is_bounded(screen, config):
    width, height = screen
    mw, mh = model_space(screen, config)
    # One model unit covers s = W / mw pixels: the error is at most s/2 rounded, plus the half-up rounding.
    bound_x, bound_y = math.floor(width / mw / 2 + 0.5), math.floor(height / mh / 2 + 0.5)
    for x in range(0, width, 7):
        back = to_screen(to_model((x, 0), screen, config), screen, config)
        assert abs(back[0] - x) <= bound_x
    for y in range(0, height, 7):
        back = to_screen(to_model((0, y), screen, config), screen, config)
        assert abs(back[1] - y) <= bound_y
    if config is SCREEN:
        assert all(to_model((x, x % height), screen, SCREEN) == (x, x % height) for x in range(width))


def test_model_to_screen_to_model_is_exact_when_the_screen_is_finer_than_the_grid():
    for x in range(0, 1000):
        assert to_model(to_screen((x, x), (1920, 1080), GRID), (1920, 1080), GRID) == (x, x)
    # 1000 is the far edge: clamped to pixel 1919, which reads back as 999.
    assert to_model(to_screen((1000, 1000), (1920, 1080), GRID), (1920, 1080), GRID) == (999, 999)


def test_bad_configs_are_refused():
    with pytest.raises(ConfigError):
        CoordinateConfig(min_pixels=10, max_pixels=5)
    with pytest.raises(ConfigError, match="Aspect ratio"):
        smart_resize(1, 500, 28, 3136, 1003520)

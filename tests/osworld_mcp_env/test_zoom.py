"""The zoom's validation and geometry, against hand-computed pixels."""

from __future__ import annotations

import numpy as np
import pytest
from osworld_mcp_env.actions import ActionLimits, GuiAction, cited_points, parse_action
from osworld_mcp_env.errors import ActionError
from osworld_mcp_env.zoom import ZoomView, zoom_image

SCREEN = (1920, 1080)


def zoom(**arguments) -> GuiAction | ActionError:
    return parse_action({"name": "computer_use", "arguments": {"action": "zoom", **arguments}}, SCREEN)


@pytest.mark.parametrize(
    ("region", "scale", "expected"),
    [
        ([0, 150, 479, 419], None, 4),  # 480x270: 1920 // 480 = 4, 1080 // 270 = 4
        ([0, 150, 479, 419], 2, 2),
        ([100, 100, 199, 149], None, 8),  # 100x50 would fit 19x: capped at max_zoom_scale
        ([0, 0, 959, 539], None, 2),  # exactly half the screen
        ([10.4, 20.6, 30, 40], None, 8),  # rounded as coordinates are: [10, 21, 30, 40]
    ],
)
def test_a_valid_zoom_resolves_its_scale(region, scale, expected):
    arguments = {"region": region} if scale is None else {"region": region, "scale": scale}
    action = zoom(**arguments)
    assert isinstance(action, GuiAction), action
    assert action.arguments["scale"] == expected
    assert cited_points("zoom", arguments) == []  # no input: the guard has no point to check
    assert not action.ends_episode


@pytest.mark.parametrize(
    ("arguments", "code", "words"),
    [
        ({}, "invalid_arguments", "needs the argument 'region'"),
        ({"region": [1, 2, 3]}, "invalid_arguments", "[x1, y1, x2, y2]"),
        ({"region": [1, 2, 3, "4"]}, "invalid_arguments", "four numbers"),
        ({"region": [1, 2, 3, True]}, "invalid_arguments", "four numbers"),
        ({"region": [10, 10, 10, 20]}, "invalid_arguments", "x1 < x2"),  # zero width
        ({"region": [30, 10, 20, 20]}, "invalid_arguments", "x1 < x2"),  # corners swapped
        ({"region": [-1, 10, 20, 20]}, "out_of_screen", "inside the 1920x1080 screen"),
        ({"region": [0, 0, 1920, 20]}, "out_of_screen", "inside the 1920x1080 screen"),
        ({"region": [0, 0, 960, 20]}, "invalid_arguments", "961x21 is too large"),  # one past half
        ({"region": [0, 0, 479, 269], "scale": 5}, "invalid_arguments", "at most 4x"),
        ({"region": [0, 0, 9, 9], "scale": 1}, "invalid_arguments", "[2, 8]"),
        ({"region": [0, 0, 9, 9], "scale": 9}, "invalid_arguments", "[2, 8]"),
        ({"region": [0, 0, 9, 9], "scale": 2.5}, "invalid_arguments", "integer"),
        ({"region": [0, 0, 9, 9], "coordinate": [1, 1]}, "invalid_arguments", "does not take"),
    ],
)
def test_a_bad_zoom_is_a_value(arguments, code, words):
    error = zoom(**arguments)
    assert isinstance(error, ActionError) and error.code == code, error
    assert words in error.message


def test_the_scale_bound_is_a_limit():
    limits = ActionLimits(max_zoom_scale=3)
    call = {"name": "computer_use", "arguments": {"action": "zoom", "region": [0, 0, 99, 99]}}
    action = parse_action(call, SCREEN, limits)
    assert isinstance(action, GuiAction) and action.arguments["scale"] == 3


def test_the_zoomed_image_repeats_each_pixel_in_a_block_at_the_top_left():
    screen = np.arange(6 * 8 * 3, dtype=np.uint8).reshape(6, 8, 3)  # 8 wide, 6 high
    out = zoom_image(screen, (2, 1, 4, 2), 2)  # 3x2 pixels, 2x: 6x4 of the 8x6 image
    assert out.shape == screen.shape and out is not screen
    assert (out[0:2, 0:2] == screen[1, 2]).all()  # block (0, 0) is screen pixel (2, 1)
    assert (out[2:4, 4:6] == screen[2, 4]).all()  # block (2, 1) is screen pixel (4, 2)
    assert (out[4:, :] == 0).all() and (out[:, 6:] == 0).all()  # the black margin


def test_a_point_on_the_zoom_maps_back_to_the_pixel_it_shows():
    view = ZoomView((100, 50, 199, 99), 3, parent_frame_id=7)  # 100x50 at 3x: 300x150
    assert view.size == (300, 150)
    assert view.to_screen((0, 0)) == (100, 50)
    assert view.to_screen((2, 2)) == (100, 50)  # the first block's last pixel: still (100, 50)
    assert view.to_screen((3, 5)) == (101, 51)
    assert view.to_screen((299, 149)) == (199, 99)  # the last pixel of the last block: the corner
    assert view.to_screen((300, 10)) is None and view.to_screen((10, 150)) is None  # the margin
    assert view.to_screen((-1, 0)) is None
    info = view.to_info()
    assert info == {"region": [100, 50, 199, 99], "scale": 3, "parent_frame_id": 7, "size": [300, 150]}
    assert ZoomView.from_info(info) == view


def test_forward_and_back_agree_on_every_block():
    rng = np.random.default_rng(0)
    screen = rng.integers(0, 256, (40, 64, 3), dtype=np.uint8)
    view = ZoomView((5, 7, 20, 18), 2, parent_frame_id=1)
    out = zoom_image(screen, view.region, view.scale)
    for zy in range(view.size[1]):
        for zx in range(view.size[0]):
            sx, sy = view.to_screen((zx, zy))
            assert (out[zy, zx] == screen[sy, sx]).all()

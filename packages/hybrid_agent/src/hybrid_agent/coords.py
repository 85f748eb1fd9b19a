"""Model coordinates <-> screen pixels, for every coordinate convention in use.

Three conventions, picked by an explicit :class:`CoordinatePolicy` (never by a
substring of a model name: the study's worst bug class was a checkpoint path
without "qwen3" that silently routed clicks through the wrong branch):

* ``RELATIVE_GRID`` - Qwen3-VL: ``[0, 1000]`` on both axes, whatever the screen;
* ``ABSOLUTE_RESIZED`` - Qwen2.5-VL: pixels of the image after ``smart_resize``
  (sides multiples of ``factor`` = 28, area within ``[min_pixels, max_pixels]``);
* ``ABSOLUTE_SCREEN`` - pixels of the real screen.

Every mapping uses the *real* screen size and rounds half up. :func:`to_screen` clamps
(the inclusive grid's 1000 lands one past the last pixel); a model adapter first refuses a
point outside the space with :func:`in_space` (``out_of_space``), so a wild coordinate is
an error the model is told about, never a click silently moved to the edge.

The Qwen2.5-VL bounds are the released processor's (``min_pixels`` 3,136,
``max_pixels`` 12,845,056), not the 1,003,520 of Qwen2-VL's README: with the smaller
bound a 1920x1080 screen maps through a 1316x728 space while the served model saw a
1932x1092 image, and a centre click lands ~450 px off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

from hybrid_agent.errors import ConfigError

Size = tuple[int, int]  # (width, height)
Point = tuple[float, float]  # (x, y)

# Qwen2.5-VL's preprocessor_config.json as released: 4 * 28 * 28 and 16384 * 28 * 28.
QWEN25_MIN_PIXELS = 3136
QWEN25_MAX_PIXELS = 12845056


class CoordinatePolicy(StrEnum):
    """Which space the model's coordinates live in."""

    RELATIVE_GRID = "relative_grid"
    ABSOLUTE_RESIZED = "absolute_resized"
    ABSOLUTE_SCREEN = "absolute_screen"


@dataclass(frozen=True)
class CoordinateConfig:
    """Coordinate convention of the policy model.

    Attributes:
        policy: The convention (default Qwen3-VL's relative grid).
        grid: Extent of the relative grid (1000 for Qwen3-VL; some code uses 999).
        factor: Side multiple of ``smart_resize`` (28 for Qwen2.5-VL, 32 for Qwen3-VL).
        min_pixels: Smallest image area after ``smart_resize`` (Qwen2.5-VL's released 3,136).
        max_pixels: Largest image area after ``smart_resize`` (Qwen2.5-VL's released 12,845,056).
    """

    policy: CoordinatePolicy = CoordinatePolicy.RELATIVE_GRID
    grid: int = 1000
    factor: int = 28
    min_pixels: int = QWEN25_MIN_PIXELS
    max_pixels: int = QWEN25_MAX_PIXELS

    def __post_init__(self) -> None:
        if self.grid < 1 or self.factor < 1 or not 0 < self.min_pixels <= self.max_pixels:
            raise ConfigError(
                f"Need grid >= 1, factor >= 1 and 0 < min_pixels <= max_pixels; got grid={self.grid}, "
                f"factor={self.factor}, min_pixels={self.min_pixels}, max_pixels={self.max_pixels}."
            )


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """Qwen-VL's resize rule: sides rounded to multiples of ``factor``, area kept in bounds.

    Each side is rounded to the nearest multiple of ``factor``; if the area then exceeds
    ``max_pixels`` (or falls below ``min_pixels``) both sides are scaled by the same
    factor first and rounded down (up) to multiples, keeping the aspect ratio.

    Returns:
        ``(height, width)`` of the resized image (the order transformers uses).

    Raises:
        ConfigError: For a non-positive side or an aspect ratio above 200.
    """
    if height < 1 or width < 1:
        raise ConfigError(f"Image sides must be >= 1, got {height}x{width}.")
    if max(height, width) / min(height, width) > 200:
        raise ConfigError(f"Aspect ratio above 200 is not supported, got {height}x{width}.")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def model_space(screen: Size, config: CoordinateConfig) -> Size:
    """``(width, height)`` of the space the model addresses; also what the prompt states."""
    width, height = screen
    if config.policy == CoordinatePolicy.RELATIVE_GRID:
        return (config.grid, config.grid)
    if config.policy == CoordinatePolicy.ABSOLUTE_RESIZED:
        h_bar, w_bar = smart_resize(height, width, config.factor, config.min_pixels, config.max_pixels)
        return (w_bar, h_bar)
    return (width, height)


def _round_half_up(value: float) -> int:
    # Python's round() is banker's rounding; half-up keeps the mapping monotone and symmetric.
    return math.floor(value + 0.5)


def _clamp(value: int, upper: int) -> int:
    return min(max(value, 0), upper)


def space_bounds(space: Size, policy: CoordinatePolicy) -> Size:
    """The largest valid ``(x, y)`` of a space: the grid is inclusive (0..1000), pixels end at size - 1."""
    if policy == CoordinatePolicy.RELATIVE_GRID:
        return space
    return (space[0] - 1, space[1] - 1)


def in_space(point: Point, space: Size, policy: CoordinatePolicy) -> bool:
    """Whether ``point`` lies inside the model's space (bounds included)."""
    x_max, y_max = space_bounds(space, policy)
    return 0 <= point[0] <= x_max and 0 <= point[1] <= y_max


def scale_to_screen(point: Point, space: Size, screen: Size) -> tuple[int, int]:
    """Scales a point of a ``space``-sized model space onto the screen, clamped to ``[0, W-1] x [0, H-1]``."""
    mw, mh = space
    width, height = screen
    x = _round_half_up(point[0] * width / mw)
    y = _round_half_up(point[1] * height / mh)
    return _clamp(x, width - 1), _clamp(y, height - 1)


def to_screen(point: Point, screen: Size, config: CoordinateConfig) -> tuple[int, int]:
    """Maps a model coordinate to a screen pixel, clamped to ``[0, W-1] x [0, H-1]``."""
    return scale_to_screen(point, model_space(screen, config), screen)


def to_model(pixel: Point, screen: Size, config: CoordinateConfig) -> tuple[int, int]:
    """Maps a screen pixel to the model's space (for labels and replays), clamped to it."""
    mw, mh = model_space(screen, config)
    width, height = screen
    x_max, y_max = space_bounds((mw, mh), config.policy)
    x = _round_half_up(pixel[0] * mw / width)
    y = _round_half_up(pixel[1] * mh / height)
    return _clamp(x, x_max), _clamp(y, y_max)


POINT_ARGUMENTS = ("coordinate", "start_coordinate")
REGION_ARGUMENT = "region"  # a zoom's [x1, y1, x2, y2]: two points, mapped as points are

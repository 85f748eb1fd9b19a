"""Model coordinates <-> screen pixels, for every coordinate convention in use.

Three conventions, picked by an explicit :class:`CoordinatePolicy` (never by a
substring of a model name: the study's worst bug class was a checkpoint path
without "qwen3" that silently routed clicks through the wrong branch):

* ``RELATIVE_GRID`` - Qwen3-VL: ``[0, 1000]`` on both axes, whatever the screen;
* ``ABSOLUTE_RESIZED`` - Qwen2.5-VL: pixels of the image after ``smart_resize``
  (sides multiples of ``factor`` = 28, area within ``[min_pixels, max_pixels]``);
* ``ABSOLUTE_SCREEN`` - pixels of the real screen.

Every mapping uses the *real* screen size, rounds half up and clamps to the screen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

from hybrid_agent.errors import ConfigError
from hybrid_agent.trajectory import Call

Size = tuple[int, int]  # (width, height)
Point = tuple[float, float]  # (x, y)


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
        min_pixels: Smallest image area after ``smart_resize``.
        max_pixels: Largest image area after ``smart_resize``.
    """

    policy: CoordinatePolicy = CoordinatePolicy.RELATIVE_GRID
    grid: int = 1000
    factor: int = 28
    min_pixels: int = 56 * 56
    max_pixels: int = 28 * 28 * 1280

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


def to_screen(point: Point, screen: Size, config: CoordinateConfig) -> tuple[int, int]:
    """Maps a model coordinate to a screen pixel, clamped to ``[0, W-1] x [0, H-1]``."""
    mw, mh = model_space(screen, config)
    width, height = screen
    x = _round_half_up(point[0] * width / mw)
    y = _round_half_up(point[1] * height / mh)
    return _clamp(x, width - 1), _clamp(y, height - 1)


def to_model(pixel: Point, screen: Size, config: CoordinateConfig) -> tuple[int, int]:
    """Maps a screen pixel to the model's space (for labels and replays), clamped to it."""
    mw, mh = model_space(screen, config)
    width, height = screen
    # The grid is inclusive (0..1000); resized and screen pixels end at size - 1.
    x_max, y_max = (mw, mh) if config.policy == CoordinatePolicy.RELATIVE_GRID else (mw - 1, mh - 1)
    x = _round_half_up(pixel[0] * mw / width)
    y = _round_half_up(pixel[1] * mh / height)
    return _clamp(x, x_max), _clamp(y, y_max)


_POINT_ARGUMENTS = ("coordinate", "start_coordinate")


def call_to_screen(call: Call, screen: Size, config: CoordinateConfig) -> Call:
    """Returns ``call`` with every coordinate argument mapped to screen pixels.

    MCP calls and GUI actions without coordinates are returned unchanged.
    """
    if not call.is_gui or not any(name in call.arguments for name in _POINT_ARGUMENTS):
        return call
    arguments = dict(call.arguments)
    for name in _POINT_ARGUMENTS:
        if name in arguments:
            arguments[name] = list(to_screen(tuple(arguments[name]), screen, config))
    return Call(call.name, arguments)

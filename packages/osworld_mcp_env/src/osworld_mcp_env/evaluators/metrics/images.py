"""Image metrics: ``compare_images`` and ``check_structure_sim`` (gimp), scored as OSWorld does.

Both use SSIM as scikit-image's ``structural_similarity`` computes it by default (7x7
uniform window, sample covariance, K1=0.01, K2=0.03, data range 255 for 8-bit images,
the mean over the window-valid interior; per channel, then averaged, for colour). It is
computed here with numpy so the package does not need scikit-image.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image, UnidentifiedImageError

from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric


def _box_mean(a: np.ndarray, win: int) -> np.ndarray:
    """Mean over every full ``win`` x ``win`` window (the "valid" part of a uniform filter)."""
    c = np.cumsum(np.cumsum(np.pad(a, ((1, 0), (1, 0))), axis=0), axis=1)
    return (c[win:, win:] - c[:-win, win:] - c[win:, :-win] + c[:-win, :-win]) / (win * win)


def ssim(x: np.ndarray, y: np.ndarray, *, win: int = 7, data_range: float = 255.0) -> float:
    """SSIM of two 2-D arrays, equal to skimage's default ``structural_similarity``."""
    x, y = x.astype(np.float64), y.astype(np.float64)
    ux, uy = _box_mean(x, win), _box_mean(y, win)
    norm = win * win / (win * win - 1)
    vx = norm * (_box_mean(x * x, win) - ux * ux)
    vy = norm * (_box_mean(y * y, win) - uy * uy)
    vxy = norm * (_box_mean(x * y, win) - ux * uy)
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    s = ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux * ux + uy * uy + c1) * (vx + vy + c2))
    return float(s.mean())


def open_image(path: Any, metric: str) -> Image.Image:
    """``Image.open``; a file PIL cannot open is OSWorld's crash, a 0 with the reason here."""
    try:
        return Image.open(path)
    except (OSError, UnidentifiedImageError) as exc:
        raise ZeroScore(f"{metric}: cannot open image {path!r} (OSWorld raises): {exc}") from exc


def structure_same(a: Image.Image, b: Image.Image, threshold: float = 0.9) -> bool:
    """OSWorld's ``structure_check_by_ssim``: both at least 7x7, same size, RGB SSIM >= threshold.

    The SSIM of RGB images is the mean of the three channels' (skimage's ``channel_axis``).
    """
    if min(a.size) < 7 or min(b.size) < 7 or a.size != b.size:
        return False
    x, y = np.asarray(a.convert("RGB")), np.asarray(b.convert("RGB"))
    return float(np.mean([ssim(x[..., c], y[..., c]) for c in range(3)])) >= threshold


@register_metric("compare_images", options=("reference_base_result",))
def compare_images(result: Any, expected: Any, **options: Any) -> float:
    """Grayscale SSIM after resizing both to the smaller size; rescaled above ``reference_base_result``.

    OSWorld takes ``min()`` of the two (width, height) tuples, which compares widths first.
    """
    if not result or not expected:
        return 0.0
    a = open_image(result, "compare_images").convert("L")
    b = open_image(expected, "compare_images").convert("L")
    size = min(a.size, b.size)
    a, b = a.resize(size, Image.Resampling.LANCZOS), b.resize(size, Image.Resampling.LANCZOS)
    if min(size) < 7:
        raise ZeroScore("compare_images: image smaller than the 7-pixel SSIM window (OSWorld raises)")
    score = ssim(np.asarray(a), np.asarray(b))
    base = options.get("reference_base_result")
    if base is None:
        return score
    return (score - base) / (1 - base) if score >= base + 0.01 else 0.0


@register_metric("check_structure_sim")
def check_structure_sim(result: Any, expected: Any, **options: Any) -> float:
    """1 when two same-size images have RGB SSIM >= 0.9 (per channel, averaged)."""
    if result is None or expected is None:
        return 0.0
    try:
        a, b = Image.open(result), Image.open(expected)
    except (OSError, UnidentifiedImageError):
        return 0.0  # OSWorld catches every error of this metric
    return float(structure_same(a, b))

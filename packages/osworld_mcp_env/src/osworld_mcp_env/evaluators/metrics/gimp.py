"""GIMP metrics, scored as OSWorld's: the config check and the image checks of its gimp tasks.

``result`` is the agent's image (OSWorld's ``src``), ``expected`` the task's original or
gold image (``tgt``). "Structure" is OSWorld's ``structure_check_by_ssim`` (RGB SSIM at
least 0.9, see :func:`.images.structure_same`) or, after a brightness change, the
mean squared error of the brightness-normalised images. The image maths is PIL's and
numpy's, as in OSWorld, so the numbers are the same.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
from PIL import Image, ImageStat

from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators.metrics.images import open_image, ssim, structure_same
from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric


@register_metric("check_config_status")
def check_config_status(result: Any, expected: Any, **options: Any) -> float:
    """1 when some line of the config reads ``(key ... value)``.

    Each line that is not a comment and not exactly a newline is stripped of spaces, of
    leading ``(`` and trailing ``)`` characters, and split on whitespace: a string
    ``key`` must be the first word, a two-word ``key`` the first two, and ``value`` the
    last word. Nesting is ignored, so an inner ``(hide-docks yes)`` line counts too.
    A line of blanks or of brackets only has no first word: OSWorld raises there.
    """
    if not isinstance(expected, Mapping) or "key" not in expected or "value" not in expected:
        raise EvaluationError(
            f"check_config_status: expected rules with key and value, got {expected!r:.200}."
        )
    if result is None:
        return 0.0
    key, value = expected["key"], expected["value"]
    try:
        with open(result, encoding="utf-8") as f:
            lines = f.readlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ZeroScore(f"check_config_status: cannot read {result!r} (OSWorld raises): {exc}") from exc
    if isinstance(key, str):
        key = [key]
    elif not (isinstance(key, list) and len(key) == 2):
        return 0.0  # OSWorld tests neither shape: no line can match
    for number, line in enumerate(lines, 1):
        if line.startswith("#") or line == "\n":
            continue
        words = line.strip().lstrip("(").rstrip(")\n").split()
        # OSWorld compares word by word with `and`: a short line raises only once its first words matched.
        for i, k in enumerate(key):
            if i >= len(words):
                raise ZeroScore(
                    f"check_config_status: line {number} is too short (OSWorld raises IndexError)"
                )
            if words[i] != k:
                break
        else:
            if words[-1] == value:
                return 1.0
    return 0.0


def _pair(result: Any, expected: Any, metric: str) -> tuple[Image.Image, Image.Image] | None:
    if result is None or expected is None:
        return None
    return open_image(result, metric), open_image(expected, metric)


def _brightness(image: Image.Image) -> float:
    return ImageStat.Stat(image.convert("L")).mean[0]


def _normalised(image: Image.Image, target: float = 128) -> Image.Image:
    current = _brightness(image)
    if current == 0:
        raise ZeroScore("a black image has no brightness to normalise (OSWorld divides by zero)")
    factor = target / current
    return image.point(lambda x: min(255, max(0, int(x * factor))))


def _same_by_mse(a: Image.Image, b: Image.Image, threshold: float) -> bool:
    if a.size != b.size:
        a = a.resize(b.size, Image.Resampling.LANCZOS)
    x = np.array(a.convert("RGB"), dtype=np.float32) / 255
    y = np.array(b.convert("RGB"), dtype=np.float32) / 255
    return bool(np.mean((x - y) ** 2) < threshold)


@register_metric("check_brightness_decrease_and_structure_sim", options=("threshold",))
def check_brightness_decrease_and_structure_sim(
    result: Any, expected: Any, threshold: float = 0.03, **options: Any
) -> float:
    """1 when the result is darker and, both brought to mean brightness 128, MSE < ``threshold``.

    ``threshold`` is OSWorld's keyword (default 0.03); multi_apps/4c26e3f3 passes its own.
    """
    images = _pair(result, expected, "check_brightness_decrease_and_structure_sim")
    if images is None:
        return 0.0
    src, tgt = images
    darker = _brightness(tgt) > _brightness(src)
    return float(darker and _same_by_mse(_normalised(src), _normalised(tgt), float(threshold)))


@register_metric("check_saturation_increase_and_structure_sim")
def check_saturation_increase_and_structure_sim(result: Any, expected: Any, **options: Any) -> float:
    """1 when the result's mean HSV saturation is higher and its hue and value planes keep the structure."""
    images = _pair(result, expected, "check_saturation_increase_and_structure_sim")
    if images is None:
        return 0.0
    src, tgt = (i.convert("HSV") for i in images)
    (h1, s1, v1), (h2, s2, v2) = src.split(), tgt.split()
    more = float(np.mean(np.array(s2))) < float(np.mean(np.array(s1)))
    return float(more and structure_same(h1, h2) and structure_same(v1, v2))


@register_metric("check_contrast_increase_and_structure_sim")
def check_contrast_increase_and_structure_sim(result: Any, expected: Any, **options: Any) -> float:
    """1 when the result's pixel standard deviation is higher and RGB SSIM >= 0.65."""
    images = _pair(result, expected, "check_contrast_increase_and_structure_sim")
    if images is None:
        return 0.0
    src, tgt = images
    higher = np.std(np.asarray(tgt, dtype=np.float32)) < np.std(np.asarray(src, dtype=np.float32))
    return float(higher and structure_same(src, tgt, 0.65))


@register_metric("check_file_exists_and_structure_sim")
def check_file_exists_and_structure_sim(result: Any, expected: Any, **options: Any) -> float:
    """1 when the exported file exists and has the original's structure."""
    if result is None or expected is None or not os.path.isfile(result):
        return 0.0
    metric = "check_file_exists_and_structure_sim"
    return float(structure_same(open_image(result, metric), open_image(expected, metric)))


@register_metric("check_palette_and_structure_sim")
def check_palette_and_structure_sim(result: Any, expected: Any, **options: Any) -> float:
    """1 when the result is a palette ("P" mode) image with the original's structure; any error is 0."""
    if result is None or expected is None:
        return 0.0
    try:
        src, tgt = Image.open(result), Image.open(expected)
        return float(src.mode == "P" and structure_same(src.convert("RGB"), tgt))
    except (OSError, ValueError):
        return 0.0  # OSWorld catches every error of this metric


@register_metric("check_image_mirror")
def check_image_mirror(result: Any, expected: Any, **options: Any) -> float:
    """1 when the result flipped left-right has the original's structure at SSIM >= 0.99."""
    images = _pair(result, expected, "check_image_mirror")
    if images is None:
        return 0.0
    src, tgt = images
    return float(structure_same(src.transpose(Image.Transpose.FLIP_LEFT_RIGHT), tgt, 0.99))


@register_metric("check_green_background")
def check_green_background(result: Any, expected: Any, **options: Any) -> float:
    """1 when every pixel that is not black in the original is green (G > R and G > B) in the result.

    OSWorld indexes both arrays ``[x, y]`` with ``x`` over the width, so it walks the
    transposed grid and raises on an image wider than high; both kept.
    """
    images = _pair(result, expected, "check_green_background")
    if images is None:
        return 0.0
    src, tgt = (np.array(i) for i in images)
    width, height = images[1].size
    try:
        for x in range(width):
            for y in range(height):
                if tuple(tgt[x, y][:3]) != (0, 0, 0):
                    r, g, b = src[x, y][:3]
                    if not (g > r and g > b):
                        return 0.0
    except (IndexError, ValueError, TypeError) as exc:
        raise ZeroScore(f"check_green_background: OSWorld's pixel walk raises here: {exc!r}") from exc
    return 1.0


def _content_box(image: Image.Image) -> tuple[int, int, int, int] | None:
    return image.convert("RGBA").split()[-1].getbbox()


@register_metric("check_image_size")
def check_image_size(result: Any, expected: Any, **options: Any) -> float:
    """1 when the image's width and height equal the rule's (each only when given).

    With ``ignore_transparent`` the size of the non-transparent content counts. OSWorld's
    condition is ``ignore_transparent and mode in (RGBA, LA) or 'transparency' in info``,
    so a palette image with a transparent colour is measured by content even without it.
    """
    if not isinstance(expected, Mapping):
        raise EvaluationError(f"check_image_size: expected a rule, got {expected!r:.200}.")
    if result is None:
        return 0.0
    image = open_image(result, "check_image_size")
    if (
        expected.get("ignore_transparent", False) and image.mode in ("RGBA", "LA")
    ) or "transparency" in image.info:
        box = _content_box(image)
        width, height = (0, 0) if box is None else (box[2] - box[0], box[3] - box[1])
    else:
        width, height = image.size
    return float(
        (expected.get("height") is None or height == expected["height"])
        and (expected.get("width") is None or width == expected["width"])
    )


@register_metric("check_image_file_size")
def check_image_file_size(result: Any, expected: Any, **options: Any) -> float:
    """1 when the file is smaller than ``rules["max_size"]`` bytes."""
    if not isinstance(expected, Mapping) or "max_size" not in expected:
        raise EvaluationError(f"check_image_file_size: expected a rule with max_size, got {expected!r:.200}.")
    if result is None:
        return 0.0
    try:
        return float(os.path.getsize(result) < expected["max_size"])
    except OSError as exc:
        raise ZeroScore(f"check_image_file_size: {exc} (OSWorld raises)") from exc


@register_metric("check_structure_sim_resized")
def check_structure_sim_resized(result: Any, expected: Any, **options: Any) -> float:
    """1 when the result, resized to the original's size, has the original's structure.

    A result with transparency is first cropped to its opaque content; the resize uses
    PIL's default filter, as OSWorld's call does.
    """
    images = _pair(result, expected, "check_structure_sim_resized")
    if images is None:
        return 0.0
    src, tgt = images
    if src.mode in ("RGBA", "LA") or "transparency" in src.info:
        src = src.convert("RGBA")
        box = src.split()[-1].getbbox()
        if box is None:
            return 0.0
        src = src.crop(box).convert("RGB")
    return float(structure_same(src.resize(tgt.size), tgt.convert("RGB")))


@register_metric("check_structure_sim_with_threshold", options=("ssim_threshold",))
def check_structure_sim_with_threshold(result: Any, expected: Any, **options: Any) -> float:
    """1 when the result's RGB SSIM against the gold image is at least ``ssim_threshold`` (0.85).

    A result of another size is first resized to the gold's (LANCZOS). The window is 7,
    or the smaller side when it is under 7 (made odd), as OSWorld picks it; a one-pixel
    window has no sample variance and, like every error of OSWorld's version, scores 0.
    """
    if result is None or expected is None:
        return 0.0
    try:
        src: Image.Image = Image.open(result)
        tgt = Image.open(expected)
        if src.size != tgt.size:
            src = src.resize(tgt.size, Image.Resampling.LANCZOS)
        x, y = np.asarray(src.convert("RGB")), np.asarray(tgt.convert("RGB"))
    except (OSError, ValueError) as exc:  # UnidentifiedImageError is an OSError
        raise ZeroScore(f"check_structure_sim_with_threshold: {exc} (OSWorld scores 0)") from exc
    side = min(x.shape[:2])
    win = 7 if side >= 7 else side - (side % 2 == 0)
    if win <= 1:
        return 0.0
    score = float(np.mean([ssim(x[..., c], y[..., c], win=win) for c in range(3)]))
    return float(score >= float(options.get("ssim_threshold", 0.85)))


@register_metric("check_textbox_on_leftside")
def check_textbox_on_leftside(result: Any, expected: Any, **options: Any) -> float:
    """1 when the leftmost dark pixel (grey < 128) of the image lies in its left 5 %."""
    if result is None:
        return 0.0
    image = open_image(result, "check_textbox_on_leftside")
    grey = np.asarray(image.convert("L"))
    width = image.size[0]
    dark_columns = np.nonzero((grey < 128).any(axis=0))[0]
    leftmost = int(dark_columns[0]) if dark_columns.size else width
    return float(leftmost < width * 0.05)

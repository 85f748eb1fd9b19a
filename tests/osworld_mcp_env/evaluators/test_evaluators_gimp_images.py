"""GIMP image metrics on hand-made images, with the score OSWorld's function gives and why.

``result`` is the agent's image (OSWorld's ``src``), ``expected`` the task's original.
Every expected score here was also checked by running OSWorld's own functions (with
scikit-image) on the same images, outside this repository.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators import METRICS, ZeroScore
from PIL import Image, ImageDraw, ImageEnhance


def metric(name: str):
    return METRICS.get(name).fn


def scene(width: int = 96, height: int = 96) -> Image.Image:
    """An asymmetric picture with structure: a gradient, a disc on the left, a bar at the top."""
    x = np.linspace(40, 200, width, dtype=np.float32)
    y = np.linspace(0, 40, height, dtype=np.float32)[:, None]
    base = np.stack([x + y, np.full_like(x + y, 90), 255 - x - y], axis=-1).clip(0, 255).astype(np.uint8)
    image = Image.fromarray(base, "RGB")
    draw = ImageDraw.Draw(image)
    draw.ellipse((8, 30, 40, 62), fill=(250, 220, 30))
    draw.rectangle((50, 6, 90, 14), fill=(20, 20, 160))
    return image


def save(tmp_path: Path, name: str, image: Image.Image) -> str:
    path = tmp_path / name
    image.save(path)
    return str(path)


def test_brightness_decrease_keeps_structure(tmp_path: Path):
    original = save(tmp_path, "o.png", scene())
    darker = save(tmp_path, "d.png", ImageEnhance.Brightness(scene()).enhance(0.7))
    check = metric("check_brightness_decrease_and_structure_sim")
    # Darker, and brought back to mean brightness 128 both match (MSE < 0.03): 1.
    assert check(darker, original) == 1.0
    # Not darker: 0, whatever the structure.
    assert check(original, original) == 0.0
    # Darker but mirrored: the normalised images differ (MSE >= 0.03): 0.
    mirrored = ImageEnhance.Brightness(scene().transpose(Image.Transpose.FLIP_LEFT_RIGHT)).enhance(0.7)
    assert check(save(tmp_path, "m.png", mirrored), original) == 0.0
    # `threshold` (OSWorld's keyword, default 0.03) bounds the MSE: every MSE of [0, 1] pixels is
    # below 1, so the mirrored image passes at 1.0; no MSE is below 0, so nothing passes at 0.
    assert check(save(tmp_path, "m.png", mirrored), original, threshold=1.0) == 1.0
    assert check(darker, original, threshold=0.0) == 0.0
    # A black result: normalising divides by a zero brightness inside OSWorld.
    with pytest.raises(ZeroScore):
        check(save(tmp_path, "k.png", Image.new("RGB", (96, 96))), original)


def hsv_scene(saturation_scale: float) -> Image.Image:
    h, s, v = scene().convert("HSV").split()
    s = s.point(lambda p: min(255, int(p * saturation_scale)))
    return Image.merge("HSV", (h, s, v)).convert("RGB")


def test_saturation_increase_keeps_hue_and_value(tmp_path: Path):
    original = save(tmp_path, "o.png", hsv_scene(1.0))
    check = metric("check_saturation_increase_and_structure_sim")
    assert check(save(tmp_path, "s.png", hsv_scene(1.4)), original) == 1.0
    assert check(save(tmp_path, "l.png", hsv_scene(0.6)), original) == 0.0  # less saturated


def test_contrast_increase_at_ssim_065(tmp_path: Path):
    original = save(tmp_path, "o.png", scene())
    check = metric("check_contrast_increase_and_structure_sim")
    assert check(save(tmp_path, "c.png", ImageEnhance.Contrast(scene()).enhance(1.4)), original) == 1.0
    assert check(save(tmp_path, "f.png", ImageEnhance.Contrast(scene()).enhance(0.6)), original) == 0.0


def test_exported_file_palette_and_mirror(tmp_path: Path):
    original = save(tmp_path, "o.png", scene())
    exists = metric("check_file_exists_and_structure_sim")
    assert exists(save(tmp_path, "e.png", scene()), original) == 1.0
    assert exists(str(tmp_path / "never-exported.png"), original) == 0.0
    # An RGB result is not palette-based; the same picture quantised to a palette is.
    palette = metric("check_palette_and_structure_sim")
    assert palette(save(tmp_path, "rgb.png", scene()), original) == 0.0
    assert palette(save(tmp_path, "p.png", scene().quantize(256)), original) == 1.0
    mirror = metric("check_image_mirror")
    assert (
        mirror(save(tmp_path, "mi.png", scene().transpose(Image.Transpose.FLIP_LEFT_RIGHT)), original) == 1.0
    )
    assert mirror(original, original) == 0.0


def test_green_background_walks_the_transposed_grid(tmp_path: Path):
    # Original: a black subject on a white background; result: the same subject on green.
    subject = Image.new("RGB", (40, 40), (255, 255, 255))
    ImageDraw.Draw(subject).rectangle((10, 10, 30, 30), fill=(0, 0, 0))
    green = Image.new("RGB", (40, 40), (20, 200, 30))
    ImageDraw.Draw(green).rectangle((10, 10, 30, 30), fill=(0, 0, 0))
    check = metric("check_green_background")
    assert check(save(tmp_path, "g.png", green), save(tmp_path, "s.png", subject)) == 1.0
    assert check(save(tmp_path, "w.png", subject), save(tmp_path, "s.png", subject)) == 0.0
    # Wider than high: OSWorld's [x, y] indexing runs off the array.
    wide = save(tmp_path, "wide.png", Image.new("RGB", (50, 40), (255, 255, 255)))
    with pytest.raises(ZeroScore):
        check(save(tmp_path, "wg.png", Image.new("RGB", (50, 40), (0, 255, 0))), wide)


def test_image_size_and_file_size(tmp_path: Path):
    size = metric("check_image_size")
    path = save(tmp_path, "i.png", scene(120, 80))
    assert size(path, {"width": 120, "height": 80}) == 1.0
    assert size(path, {"width": 120}) == 1.0  # no height rule: any height
    assert size(path, {"height": 96}) == 0.0
    # ignore_transparent: the opaque content's box counts (here 30x20 of a 120x80 canvas).
    canvas = Image.new("RGBA", (120, 80), (0, 0, 0, 0))
    canvas.paste(Image.new("RGBA", (30, 20), (255, 0, 0, 255)), (5, 5))
    cut = save(tmp_path, "cut.png", canvas)
    assert size(cut, {"width": 30, "height": 20, "ignore_transparent": True}) == 1.0
    assert size(cut, {"width": 120, "height": 80}) == 1.0  # RGBA without the option: the canvas
    with pytest.raises(EvaluationError):
        size(cut, None)
    file_size = metric("check_image_file_size")
    assert file_size(path, {"max_size": 500_000}) == 1.0
    assert file_size(path, {"max_size": Path(path).stat().st_size}) == 0.0  # strictly smaller


def test_resized_structure_and_text_on_the_left(tmp_path: Path):
    original = save(tmp_path, "o.png", scene())
    resized = metric("check_structure_sim_resized")
    assert resized(save(tmp_path, "big.png", scene().resize((192, 192))), original) == 1.0
    mirrored = scene().transpose(Image.Transpose.FLIP_LEFT_RIGHT).resize((192, 192))
    assert resized(save(tmp_path, "mb.png", mirrored), original) == 0.0
    left = metric("check_textbox_on_leftside")
    text = Image.new("RGB", (100, 40), (255, 255, 255))
    ImageDraw.Draw(text).rectangle((3, 10, 20, 20), fill=(0, 0, 0))
    assert left(save(tmp_path, "t.png", text), None) == 1.0  # leftmost dark x = 3 < 5
    ImageDraw.Draw(text).rectangle((0, 0, 99, 39), fill=(255, 255, 255))
    ImageDraw.Draw(text).rectangle((6, 10, 20, 20), fill=(0, 0, 0))
    assert left(save(tmp_path, "t2.png", text), None) == 0.0  # 6 >= 5


threshold_sim = METRICS.get("check_structure_sim_with_threshold").fn


def test_structure_sim_with_threshold_resizes_the_result_to_the_gold(tmp_path: Path):
    rng = np.random.default_rng(7)
    y, x = np.mgrid[0:60, 0:80]
    gold = Image.fromarray(np.stack([x * 3, y * 4, (x + y) * 2], axis=-1).astype(np.uint8))
    gold_path = tmp_path / "gold.png"
    gold.save(gold_path)
    same = tmp_path / "same.png"
    gold.save(same)
    assert threshold_sim(str(same), str(gold_path)) == 1.0
    # Noise of +-20 on smooth gradients: SSIM 0.514 (numpy's generator, seed 7), so the threshold decides.
    noisy = np.clip(np.asarray(gold, dtype=np.int16) + rng.integers(-20, 21, (60, 80, 3)), 0, 255)
    noisy_path = tmp_path / "noisy.png"
    Image.fromarray(noisy.astype(np.uint8)).save(noisy_path)
    assert threshold_sim(str(noisy_path), str(gold_path), ssim_threshold=0.85) == 0.0
    assert threshold_sim(str(noisy_path), str(gold_path), ssim_threshold=0.51) == 1.0
    assert threshold_sim(str(noisy_path), str(gold_path), ssim_threshold=0.52) == 0.0
    # A flat image twice the size, resized down, matches a flat gold of the same colour.
    flat_big, flat = tmp_path / "big.png", tmp_path / "flat.png"
    Image.new("RGB", (160, 120), (10, 200, 30)).save(flat_big)
    Image.new("RGB", (80, 60), (10, 200, 30)).save(flat)
    assert threshold_sim(str(flat_big), str(flat)) == 1.0
    # RGBA is compared as RGB; a 2-pixel-high image leaves a 1-pixel window: 0 as in OSWorld.
    tiny = tmp_path / "tiny.png"
    Image.new("RGBA", (80, 2)).save(tiny)
    assert threshold_sim(str(tiny), str(tiny)) == 0.0
    assert threshold_sim(None, str(gold_path)) == 0.0
    with pytest.raises(ZeroScore):
        threshold_sim(str(tmp_path / "missing.png"), str(gold_path))

"""Image metrics against scikit-image's SSIM, which OSWorld calls (values computed with skimage 0.26)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from osworld_mcp_env.evaluators import METRICS
from osworld_mcp_env.evaluators.metrics.images import ssim
from PIL import Image


def metric(name: str):
    return METRICS.get(name).fn


def pair() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (40, 53), dtype=np.uint8)
    b = np.clip(a.astype(int) + rng.integers(-40, 40, a.shape), 0, 255).astype(np.uint8)
    return a, b


def test_ssim_equals_skimage_default():
    a, b = pair()
    # skimage.metrics.structural_similarity(a, b) on these arrays returns 0.9578693637235679.
    assert ssim(a, b) == pytest.approx(0.9578693637235679, abs=1e-12)
    assert ssim(a, a) == 1.0


def test_compare_images_and_reference_base(tmp_path: Path):
    a, b = pair()
    pa, pb = tmp_path / "a.png", tmp_path / "b.png"
    Image.fromarray(a).save(pa)
    Image.fromarray(b).save(pb)
    # Same size, already grayscale: the LANCZOS resize to the same size leaves the pixels, so the
    # score is skimage's SSIM of the pair.
    assert metric("compare_images")(str(pa), str(pb)) == pytest.approx(0.9578693637235679, abs=1e-9)
    # reference_base_result 0.5: (0.95787 - 0.5) / 0.5; a base above the score gives 0.
    assert metric("compare_images")(str(pa), str(pb), reference_base_result=0.5) == pytest.approx(
        (0.9578693637235679 - 0.5) / 0.5, abs=1e-9
    )
    assert metric("compare_images")(str(pa), str(pb), reference_base_result=0.96) == 0.0
    assert metric("compare_images")(None, str(pb)) == 0.0


def test_check_structure_sim_threshold_and_size(tmp_path: Path):
    rng = np.random.default_rng(0)
    c = rng.integers(0, 256, (30, 31, 3), dtype=np.uint8)
    d = np.clip(c.astype(int) + rng.integers(-60, 60, c.shape), 0, 255).astype(np.uint8)
    pc, pd, small = tmp_path / "c.png", tmp_path / "d.png", tmp_path / "s.png"
    Image.fromarray(c).save(pc)
    Image.fromarray(d).save(pd)
    Image.fromarray(c[:20]).save(small)
    # skimage's RGB SSIM (channel_axis=2) of c, d is 0.9090591: >= 0.9 -> 1.
    assert metric("check_structure_sim")(str(pc), str(pd)) == 1.0
    # Different sizes: OSWorld returns 0 before computing SSIM.
    assert metric("check_structure_sim")(str(pc), str(small)) == 0.0
    noisy = np.clip(c.astype(int) + rng.integers(-120, 120, c.shape), 0, 255).astype(np.uint8)
    Image.fromarray(noisy).save(tmp_path / "n.png")
    assert metric("check_structure_sim")(str(pc), str(tmp_path / "n.png")) == 0.0

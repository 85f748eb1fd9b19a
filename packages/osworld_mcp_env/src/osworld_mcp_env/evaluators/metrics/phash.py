"""The perceptual hash OSWorld compares PDF images and video frames by (``imagehash.phash``).

Written with numpy (the DCT as a matrix product) so the package needs neither imagehash
nor scipy; it is not a registered metric, only what ``pdf`` and ``media`` share.
"""

from __future__ import annotations

import numpy as np
from PIL import Image


def _dct_rows(n: int, keep: int) -> np.ndarray:
    """The first ``keep`` rows of the unnormalised DCT-II matrix (``scipy.fftpack.dct``'s default)."""
    k = np.arange(keep)[:, None]
    return 2.0 * np.cos(np.pi * k * (2 * np.arange(n)[None, :] + 1) / (2 * n))


def phash(image: Image.Image, hash_size: int = 8, highfreq_factor: int = 4) -> np.ndarray:
    """``imagehash.phash`` as a bool array: grey 32x32 Lanczos thumbnail, 2-D DCT, low 8x8 above median.

    Equal bits to imagehash's except where a coefficient ties the median to rounding (a
    uniform image, whose AC coefficients are all zero: both hash float noise there).
    """
    size = hash_size * highfreq_factor
    pixels = np.asarray(image.convert("L").resize((size, size), Image.Resampling.LANCZOS), dtype=np.float64)
    basis = _dct_rows(size, hash_size)
    low = basis @ pixels @ basis.T
    return low > np.median(low)


def hash_distance(a: np.ndarray, b: np.ndarray) -> int:
    """Hamming distance of two hashes (imagehash's ``hash1 - hash2``)."""
    return int(np.count_nonzero(a != b))

"""CIELAB colour difference (CIEDE2000), the numbers scikit-image gives, without scikit-image.

OSWorld's ``evaluate_colored_words_in_tables`` converts sRGB to CIELAB (D65, 2°
observer) with ``skimage.color.rgb2lab`` and compares with ``deltaE_ciede2000``
(kL = kC = kH = 1). This module computes the same two functions for one colour
at a time (the tests compare against scikit-image's values to 1e-9).
"""

from __future__ import annotations

import math

# sRGB (linear) to XYZ, and the D65 white point of the 2° observer, as scikit-image uses them.
_XYZ_FROM_RGB = (
    (0.412453, 0.357580, 0.180423),
    (0.212671, 0.715160, 0.072169),
    (0.019334, 0.119193, 0.950227),
)
_WHITE_D65 = (0.95047, 1.0, 1.08883)


def srgb_to_lab(rgb: tuple[float, float, float]) -> tuple[float, float, float]:
    """CIELAB of an sRGB colour with channels in [0, 1]."""
    linear = [((c + 0.055) / 1.055) ** 2.4 if c > 0.04045 else c / 12.92 for c in rgb]
    xyz = [sum(m * c for m, c in zip(row, linear, strict=True)) for row in _XYZ_FROM_RGB]
    f = [
        v ** (1 / 3) if v > 0.008856 else 7.787 * v + 16 / 116
        for v in (x / w for x, w in zip(xyz, _WHITE_D65, strict=True))
    ]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


def _polar(a: float, b: float) -> tuple[float, float]:
    """Chroma and hue angle in [0, 2π)."""
    angle = math.atan2(b, a)
    return math.hypot(a, b), angle + 2 * math.pi if angle < 0 else angle


def ciede2000(lab1: tuple[float, float, float], lab2: tuple[float, float, float]) -> float:
    """The CIEDE2000 difference of two CIELAB colours (unit weights)."""
    l1, a1, b1 = lab1
    l2, a2, b2 = lab2
    mean_c = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(mean_c**7 / (mean_c**7 + 25**7)))
    c1, h1 = _polar(a1 * (1 + g), b1)
    c2, h2 = _polar(a2 * (1 + g), b2)

    mean_l = (l1 + l2) / 2
    s_l = 1 + 0.015 * (mean_l - 50) ** 2 / math.sqrt(20 + (mean_l - 50) ** 2)
    l_term = (l2 - l1) / s_l

    mean_c = (c1 + c2) / 2
    c_term = (c2 - c1) / (1 + 0.045 * mean_c)

    product = c1 * c2
    diff = h2 - h1
    if product == 0:
        dh = 0.0
        mean_h = h1 + h2  # one hue is undefined: the other one counts alone
    else:
        dh = diff - 2 * math.pi if diff > math.pi else diff + 2 * math.pi if diff < -math.pi else diff
        mean_h = h1 + h2
        if abs(diff) > math.pi:
            mean_h += 2 * math.pi if mean_h < 2 * math.pi else -2 * math.pi
        mean_h /= 2
    big_dh = 2 * math.sqrt(product) * math.sin(dh / 2)
    t = (
        1
        - 0.17 * math.cos(mean_h - math.radians(30))
        + 0.24 * math.cos(2 * mean_h)
        + 0.32 * math.cos(3 * mean_h + math.radians(6))
        - 0.20 * math.cos(4 * mean_h - math.radians(63))
    )
    h_term = big_dh / (1 + 0.015 * mean_c * t)

    rotation = math.radians(30) * math.exp(-(((math.degrees(mean_h) - 275) / 25) ** 2))
    r_c = 2 * math.sqrt(mean_c**7 / (mean_c**7 + 25**7))
    r_term = -math.sin(2 * rotation) * r_c * c_term * h_term
    return math.sqrt(max(l_term**2 + c_term**2 + h_term**2 + r_term, 0.0))

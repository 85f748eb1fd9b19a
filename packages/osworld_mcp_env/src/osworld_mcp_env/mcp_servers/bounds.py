r"""Fit a JSON value into a byte budget, keeping its shape and marking every cut.

A tool's result is built from things the agent controls (a 5 MB argument echoed
in a message, a sheet of a million rows, a file name that is not UTF-8), and the
wire must carry it to a model whose observation holds 65,536 characters. So
:func:`fit_json` shortens the longest strings and lists, halving their allowance
until the whole value fits, and leaves a ``[truncated ...]`` marker where it cut:
the model sees that something is missing and how much. Keys and small values are
kept, so the result still matches the tool's output schema.

Lone surrogates (``"\udcff"`` from a file name that is not UTF-8) cannot be
encoded as UTF-8 and NaN or infinity is not JSON: either would fail the whole
response, so :func:`scrub` replaces them (U+FFFD, ``"nan"``/``"inf"``).
"""

from __future__ import annotations

import json
import math
from typing import Any

MIN_STRING_CHARS = 64
"""Strings are never cut below this many characters (enum values, names, numbers as text)."""
MIN_ITEMS = 16
"""Lists and objects are never cut below this many entries (an object keeps its fields)."""
MAX_DEPTH = 32
"""Deeper values are replaced by a marker (no tool result nests this deep)."""


def encoded_size(value: Any) -> int:
    """The UTF-8 size of ``value`` as compact JSON.

    Raises:
        UnicodeEncodeError: On a lone surrogate (see :func:`scrub`).
        ValueError: On NaN or infinity (see :func:`scrub`).
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    return len(text.encode("utf-8"))


def scrub(value: Any) -> Any:
    """``value`` with lone surrogates replaced by U+FFFD and non-finite floats by their name."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, str):
        return (
            value if value.isascii() else value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        )
    if isinstance(value, list | tuple):
        return [scrub(v) for v in value]
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    return value


def fit_json(value: Any, max_bytes: int) -> tuple[Any, bool]:
    """Returns ``(value, cut)``: ``value`` shortened until its JSON fits ``max_bytes``.

    Args:
        value: A JSON-able value (strings, numbers, lists, dicts).
        max_bytes: The budget for the compact UTF-8 JSON of the result.

    Returns:
        The value (scrubbed of lone surrogates) and whether anything was cut. When
        even the smallest allowances do not fit, the value is a single marker string.
    """
    try:
        size = encoded_size(value)
    except (UnicodeEncodeError, ValueError):
        value = scrub(value)
        size = encoded_size(value)
    if size <= max_bytes:
        return value, False
    chars, items = max_bytes, max_bytes
    while chars > MIN_STRING_CHARS or items > MIN_ITEMS:
        chars, items = max(chars // 2, MIN_STRING_CHARS), max(items // 2, MIN_ITEMS)
        cut = _clip(value, chars, items, 0)
        if encoded_size(cut) <= max_bytes:
            return cut, True
    return clip_text(f"[truncated: a value of {size} bytes does not fit in {max_bytes}]", max_bytes), True


def clip_text(text: str, max_chars: int) -> str:
    """``text`` cut to about ``max_chars`` characters with a marker saying how much went."""
    if len(text) <= max_chars:
        return text
    keep = max(max_chars - 48, 0)
    return f"{text[:keep]}...[truncated {len(text) - keep} of {len(text)} chars]"


def _clip(value: Any, chars: int, items: int, depth: int) -> Any:
    if isinstance(value, str):
        return clip_text(value, chars)
    if depth >= MAX_DEPTH and isinstance(value, list | dict):
        return f"[truncated: nested deeper than {MAX_DEPTH}]"
    if isinstance(value, list):
        head = [_clip(v, chars, items, depth + 1) for v in value[:items]]
        return [*head, f"[truncated {len(value) - items} more items]"] if len(value) > items else head
    if isinstance(value, dict):
        keys = list(value)
        out = {k: _clip(value[k], chars, items, depth + 1) for k in keys[:items]}
        if len(keys) > items:
            out["..."] = f"[truncated {len(keys) - items} more keys]"
        return out
    return value

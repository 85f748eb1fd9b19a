"""GIMP metrics, scored as OSWorld's: ``check_config_status`` over GIMP's ``gimprc``/``sessionrc``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from osworld_mcp_env.errors import EvaluationError
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

"""Observation and action spaces: free unicode text and a fixed-size screenshot.

Gymnasium's ``Text`` accepts only characters of a fixed charset (alphanumerics by
default), but tool results, window titles and instructions carry any unicode.
:class:`FreeText` keeps ``Text``'s length bound and drops the charset check on
``contains``; ``sample`` still draws from a printable charset.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np
from gymnasium import spaces

SAMPLE_CHARSET = string.ascii_letters + string.digits + string.punctuation + " "


class FreeText(spaces.Text):
    """A string of at most ``max_length`` characters, any unicode."""

    def __init__(self, max_length: int, *, min_length: int = 0, seed: int | None = None) -> None:
        super().__init__(max_length, min_length=min_length, charset=SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        """True for any ``str`` whose length lies in [min_length, max_length]."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"FreeText({self.min_length}, {self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, FreeText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )


TOOL_RESULT_MAX_CHARS = 65_536
INSTRUCTION_MAX_CHARS = 8_192
APP_NAME_MAX_CHARS = 256
A11Y_MAX_CHARS = 2_000_000
ACTION_MAX_CHARS = 65_536


def observation_space(width: int, height: int, *, with_a11y: bool) -> spaces.Dict:
    """The env's observation space for a ``width`` x ``height`` screen."""
    fields: dict[str, spaces.Space] = {
        "screenshot": spaces.Box(0, 255, shape=(height, width, 3), dtype=np.uint8),
        "tool_result": FreeText(TOOL_RESULT_MAX_CHARS),
        "active_app": FreeText(APP_NAME_MAX_CHARS),
        "instruction": FreeText(INSTRUCTION_MAX_CHARS),
    }
    if with_a11y:
        fields["a11y_tree"] = FreeText(A11Y_MAX_CHARS)
    return spaces.Dict(fields)


def action_space() -> FreeText:
    """Actions are JSON calls as text (a dict is accepted too; see ``actions.parse_action``)."""
    return FreeText(ACTION_MAX_CHARS, min_length=1)

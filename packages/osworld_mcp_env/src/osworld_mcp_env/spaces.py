"""Observation and action spaces that say what the env returns and what ``step`` accepts.

Observation: Gymnasium's ``Text`` accepts only characters of a fixed charset
(alphanumerics by default), but tool results, window titles and instructions
carry any unicode. :class:`FreeText` keeps ``Text``'s length bound and drops the
charset check on ``contains``; ``sample`` still draws from a printable charset.
Each text field declares its bound here, once, and the env cuts every text field
to its declared bound (:func:`fit_text_fields`, with the stack's one marker), so
``observation_space.contains(obs)`` holds whatever the task, the tools or the
apps put into the text.

Action: ``step`` takes one call ``{"name", "arguments"}`` as JSON text or as a
mapping; :class:`CallSpace` says exactly that, bounded by the env's own
:class:`~osworld_mcp_env.actions.ActionLimits`.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from osworld_mcp_env.actions import ActionLimits, decode_json_object
from osworld_mcp_env.errors import ActionError
from osworld_mcp_env.text import truncate

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


def fit_text_fields(obs: dict[str, Any], space: spaces.Dict) -> dict[str, Any]:
    """Cuts each text field of ``obs`` to its space's ``max_length``, marker included; returns ``obs``.

    The bound comes from the space itself, so a field and its declaration cannot
    drift apart.
    """
    for key, field in space.items():
        value = obs.get(key)
        if isinstance(field, spaces.Text) and isinstance(value, str):
            obs[key] = truncate(value, field.max_length)
    return obs


Call = str | Mapping[str, Any]
"""One action as ``step`` takes it: JSON text or a mapping ``{"name", "arguments"}``."""


class CallSpace(spaces.Space[Call]):
    """What ``env.step`` accepts: one call ``{"name": ..., "arguments": {...}}``, as JSON text or a mapping.

    ``contains`` is the shape: strict JSON (the mapping's JSON form for a
    mapping) within ``limits`` (``max_payload_chars``, ``max_depth``), an object
    with a non-empty string ``name`` and, when given, an object ``arguments``.
    Whether the name is a known tool and the arguments fit it is ``step``'s
    answer, given as an error value (``unknown_tool``, ``invalid_arguments``):
    such a call is well-formed, inside the space.

    ``sample`` draws a well-formed call with a random ``<namespace>.<tool>``
    name and random string arguments, which the env refuses as an unknown tool
    without dispatching anything: a sample never drives the desktop.

    Args:
        limits: The env's action bounds (``EnvConfig.limits``); default ``ActionLimits()``.
        seed: Seeds ``sample``.
    """

    def __init__(self, limits: ActionLimits | None = None, *, seed: int | None = None) -> None:
        self.limits = limits if limits is not None else ActionLimits()
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        """Calls are text, not arrays."""
        return False

    def contains(self, x: Any) -> bool:
        """True for a well-formed call within the limits (see the class docstring)."""
        if not isinstance(x, str | Mapping):
            return False
        call = decode_json_object(x, self.limits)
        if isinstance(call, ActionError):
            return False
        name, arguments = call.get("name"), call.get("arguments", {})
        return isinstance(name, str) and bool(name) and isinstance(arguments, dict)

    def sample(self, mask: Any | None = None, probability: Any | None = None) -> dict[str, Any]:
        """A well-formed call that names no real tool (masks are not supported)."""
        if mask is not None or probability is not None:
            raise ValueError("CallSpace.sample takes no mask or probability.")
        rng = self.np_random

        def word() -> str:
            return "".join(rng.choice(list(string.ascii_lowercase), size=int(rng.integers(4, 12))))

        arguments = {word(): word() for _ in range(int(rng.integers(0, 3)))}
        return {"name": f"{word()}.{word()}", "arguments": arguments}

    def to_jsonable(self, sample_n: Iterable[Call]) -> list[Any]:
        """Calls are JSON already: text stays text, a mapping becomes a plain dict."""
        return [x if isinstance(x, str) else dict(x) for x in sample_n]

    def from_jsonable(self, sample_n: list[Any]) -> list[Call]:
        """The inverse of :meth:`to_jsonable`."""
        return list(sample_n)

    def __repr__(self) -> str:
        return f"CallSpace(max_payload_chars={self.limits.max_payload_chars})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, CallSpace) and self.limits == other.limits


def action_space(limits: ActionLimits | None = None) -> CallSpace:
    """The env's action space: calls bounded by ``limits`` (the env's ``EnvConfig.limits``)."""
    return CallSpace(limits)

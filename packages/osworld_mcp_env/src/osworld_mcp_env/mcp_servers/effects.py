"""The result model every tool returns: did it run, and what did it change.

OSWorld-MCP's servers answer ``success`` whenever no exception escaped, so a
regex that matched nothing reads like a job done. Here a tool returns a
:class:`ToolOutput` whose :class:`Effect` says what changed (cells written,
replacements made, slides touched, bytes saved). Zero effect is its own kind
(``"none"``) and the text the model reads starts with ``No effect:``.

On the wire (MCP ``CallToolResult``):

- ``isError`` false means the call executed; a tool that could not do its job
  raises :class:`mcp.server.mcpserver.exceptions.ToolError` instead.
- ``structuredContent`` is ``ToolOutput.model_dump()``: ``message``, ``effect``
  (always present) and ``data`` (what a read-only tool returns).
- ``content`` is one text block: a prefix naming the effect, the message, and
  ``data`` as JSON.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

# The text shown to the model is capped so a huge sheet cannot flood its context; the
# structured content keeps everything.
MAX_TEXT_CHARS = 20_000


class EffectKind(StrEnum):
    """What a tool call did to the desktop's state."""

    CHANGED = "changed"
    """The tool changed state and ``count`` says how much."""
    NONE = "none"
    """The tool ran but changed nothing (0 matches, value already set, ...)."""
    UNKNOWN = "unknown"
    """The tool acted (a key press, a dialog opened) but cannot observe the outcome."""
    READ_ONLY = "read_only"
    """The tool only reads; it never changes state."""


class Effect(BaseModel):
    """What a tool call changed.

    Attributes:
        kind: One of :class:`EffectKind`.
        changed: True when state changed, False for none/read-only, None when unknown.
        count: How many ``unit`` changed (0 for none); None when unknown or read-only.
        unit: What ``count`` counts: ``cells``, ``replacements``, ``paragraphs``,
            ``slides``, ``shapes``, ``bytes``, ``files``, ``settings``, ...
        targets: Where it changed (cell addresses, paths, slide numbers), capped at 200.
        details: Extra evidence (old and new values, file size, ...).
    """

    kind: EffectKind
    changed: bool | None
    count: int | None = None
    unit: str | None = None
    targets: list[str] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, count: int, unit: str, targets: list[str] | None = None, **details: Any) -> Effect:
        """Returns a ``changed`` effect, or a ``none`` effect when ``count`` is 0."""
        kind = EffectKind.CHANGED if count > 0 else EffectKind.NONE
        return cls(
            kind=kind,
            changed=count > 0,
            count=count,
            unit=unit,
            targets=(targets or [])[:200],
            details=details,
        )

    @classmethod
    def none(cls, unit: str, **details: Any) -> Effect:
        """Returns a zero effect (the call ran and changed nothing)."""
        return cls.of(0, unit, None, **details)

    @classmethod
    def unknown(cls, **details: Any) -> Effect:
        """Returns an effect the tool cannot observe (for example a key press in a browser)."""
        return cls(kind=EffectKind.UNKNOWN, changed=None, details=details)

    @classmethod
    def read_only(cls) -> Effect:
        """Returns the effect of a read-only tool."""
        return cls(kind=EffectKind.READ_ONLY, changed=False)

    def prefix(self) -> str:
        """Returns the text prefix the model sees (``Changed 3 cells:``, ``No effect:``, ...)."""
        if self.kind is EffectKind.CHANGED:
            return f"Changed {self.count} {self.unit}:"
        if self.kind is EffectKind.NONE:
            return "No effect:"
        if self.kind is EffectKind.UNKNOWN:
            return "Done (effect not observable):"
        return "Read:"


class ToolOutput(BaseModel):
    """What every tool returns; becomes ``structuredContent`` on the wire.

    Attributes:
        message: One human-readable sentence about what happened.
        effect: What changed (always present).
        data: The payload of a read-only tool (or extra output of a writing tool).
    """

    message: str
    effect: Effect
    data: Any = None

    def to_call_result(self) -> CallToolResult:
        """Returns the MCP result: one text block plus this model as structured content."""
        text = f"{self.effect.prefix()} {self.message}"
        if self.data is not None:
            text += "\n" + json.dumps(self.data, ensure_ascii=False, default=str)
        if len(text) > MAX_TEXT_CHARS:
            text = text[:MAX_TEXT_CHARS] + f"... [truncated, {len(text)} chars]"
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=self.model_dump(mode="json")
        )


def changed(
    message: str, count: int, unit: str, targets: list[str] | None = None, **details: Any
) -> ToolOutput:
    """Returns a writing tool's output; ``count == 0`` makes it a zero effect."""
    return ToolOutput(message=message, effect=Effect.of(count, unit, targets, **details))


def no_effect(message: str, unit: str, **details: Any) -> ToolOutput:
    """Returns the output of a call that ran and changed nothing."""
    return ToolOutput(message=message, effect=Effect.none(unit, **details))


def unknown_effect(message: str, **details: Any) -> ToolOutput:
    """Returns the output of a call whose outcome the tool cannot observe."""
    return ToolOutput(message=message, effect=Effect.unknown(**details))


def read(message: str, data: Any) -> ToolOutput:
    """Returns a read-only tool's output."""
    return ToolOutput(message=message, effect=Effect.read_only(), data=data)

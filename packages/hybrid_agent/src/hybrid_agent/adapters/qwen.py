"""The Qwen-VL families: ``<tool_call>{json}</tool_call>`` text, the stack's own prompt.

* ``qwen3-vl`` (Instruct, the default): Qwen3-VL's relative grid, ``[0, 1000]`` on both
  axes; the frame is sent as it is (the processor's own resize changes no coordinate).
* ``qwen3-vl-thinking``: the same with the reasoning opened by the chat template, so a
  reply without ``</think>`` executes nothing.
* ``qwen2.5-vl``: absolute pixels of the image after Qwen2.5-VL's ``smart_resize``
  (factor 28, the released processor's 3,136..12,845,056 pixels); the frame is resized
  with that rule before sending, so the image the model sees is the space it answers in.

The parser is :func:`hybrid_agent.parse.parse_response`; past turns are re-serialised
canonically (:func:`hybrid_agent.context.render_assistant`), as they always were.
"""

from __future__ import annotations

from collections.abc import Sequence

from hybrid_agent.adapters.base import ModelAdapter, register_adapter
from hybrid_agent.context import render_assistant
from hybrid_agent.coords import QWEN25_MAX_PIXELS, QWEN25_MIN_PIXELS, CoordinateConfig, CoordinatePolicy
from hybrid_agent.parse import ParseResult, parse_response
from hybrid_agent.toolset import ToolSpec
from hybrid_agent.trajectory import Step


@register_adapter("qwen3-vl")
class Qwen3VLAdapter(ModelAdapter):
    """Qwen3-VL Instruct: ``<tool_call>`` JSON, ``[0, 1000]`` relative coordinates."""

    family = "Qwen3-VL Instruct"
    default_coordinates = CoordinateConfig(policy=CoordinatePolicy.RELATIVE_GRID, grid=1000, factor=32)

    def parse_text(self, text: str, tools: Sequence[ToolSpec]) -> ParseResult:
        """The stack's ``<tool_call>`` parser (with its documented repairs)."""
        return parse_response(text, tools, thinking=self.thinking, actions=self.gui_actions)

    def assistant_turn(self, step: Step, keep_think: bool) -> str:
        """The canonical re-serialised call (repaired outputs appear repaired)."""
        return render_assistant(step, keep_think)


@register_adapter("qwen3-vl-thinking")
class Qwen3VLThinkingAdapter(Qwen3VLAdapter):
    """Qwen3-VL Thinking: as Instruct, with the reasoning opened by the chat template."""

    family = "Qwen3-VL Thinking"
    always_thinking = True


@register_adapter("qwen2.5-vl")
class Qwen25VLAdapter(Qwen3VLAdapter):
    """Qwen2.5-VL: ``<tool_call>`` JSON, absolute pixels of the smart-resized image."""

    family = "Qwen2.5-VL"
    default_coordinates = CoordinateConfig(
        policy=CoordinatePolicy.ABSOLUTE_RESIZED,
        factor=28,
        min_pixels=QWEN25_MIN_PIXELS,
        max_pixels=QWEN25_MAX_PIXELS,
    )

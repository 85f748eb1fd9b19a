"""Families trained on a provider's computer tool, served behind an OpenAI-compatible API.

For ``openai:URL#MODEL --adapter NAME`` with a self-hosted model that calls a GUI tool
named ``computer`` in a provider's vocabulary (the calls arrive as ``<tool_call>`` text,
which the ``openai:`` policy also writes for function calls):

* ``anthropic-cu``: Anthropic's ``computer`` tool (``{"action": "left_click",
  "coordinate": [x, y]}``, ``key`` ``text`` "ctrl+s", ``scroll`` by direction and notches
  ...) in pixels of the screenshot it saw, which is downscaled to Anthropic's recommended
  size for the screen's aspect ratio (XGA, WXGA, FWXGA;
  :func:`hybrid_agent.provider_actions.scaled_display`);
* ``openai-cu``: OpenAI's ``computer_use_preview`` actions (``{"type": "click", "x": ..,
  "y": .., "button": "left"}``, ``keypress``, ``scroll`` by ``scroll_x``/``scroll_y`` ...)
  in pixels of the screen, sent as it is.

Either tool's input is rewritten into the env's ``computer_use`` call by
:mod:`hybrid_agent.provider_actions` (the same rewrite the ``anthropic:`` and
``openai-cua:`` policies use) and then read by the stack's one parser, so an action the
env lacks is ``unknown_gui_action``, a malformed one ``invalid_arguments`` or
``missing_arguments``, and a point outside the display ``out_of_space``. An input the
provider's own schema forbids where a rewrite would have to guess its meaning (Anthropic:
a negative ``scroll_amount``) is ``invalid_arguments`` with the schema's rule
(:meth:`ProviderComputerAdapter.refusal`), never executed. The tasks end
with the ``terminate``/``answer`` functions listed beside ``computer``. Past turns are
shown as the model wrote them (its own vocabulary and display coordinates).

With ``--coordinates`` set, the screenshot goes unscaled and that space is used.
"""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from PIL import Image

from hybrid_agent.adapters.base import AdapterOptions, ModelAdapter, register_adapter
from hybrid_agent.coords import CoordinateConfig, CoordinatePolicy, Size
from hybrid_agent.parse import ParseError, ParseErrorCode, ParseResult, parse_response, split_think
from hybrid_agent.policies.calls import decode_arguments, map_calls
from hybrid_agent.prompt import END_FUNCTIONS_RULE, PromptConfig, end_functions, system_prompt
from hybrid_agent.provider_actions import anthropic_refusal, from_anthropic, from_openai, scaled_display
from hybrid_agent.toolset import ToolSpec
from hybrid_agent.trajectory import GUI_TOOL_NAME

COMPUTER = "computer"
_END_ACTIONS = tuple(f["function"]["name"] for f in end_functions())
_POINT = {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}


class ProviderComputerAdapter(ModelAdapter):
    """A ``computer`` tool in a provider's vocabulary; subclasses give the rewrite and the schema.

    Attributes:
        scaled: The screenshot is downscaled to the provider's display (the family's own
            space, not overridden by ``--coordinates``).
    """

    default_coordinates: ClassVar[CoordinateConfig] = CoordinateConfig(
        policy=CoordinatePolicy.ABSOLUTE_SCREEN
    )
    scales_display: ClassVar[bool] = False

    def __init__(self, options: AdapterOptions | None = None) -> None:
        """The family's display, unless ``options`` override the coordinate space."""
        super().__init__(options)
        self.scaled = self.scales_display and (options is None or options.coordinates is None)

    def space(self, screen: Size) -> Size:
        """The display the model is shown (the scaled screenshot's size, or the screen)."""
        return scaled_display(screen) if self.scaled else super().space(screen)

    def preprocess(self, image: Image.Image) -> Image.Image:
        """The screenshot at the display's size, so its pixels are the coordinates the model answers in."""
        size = self.space(image.size)
        return image if size == image.size else image.resize(size, Image.Resampling.LANCZOS)

    @abstractmethod
    def computer_function(self, display: Size) -> dict[str, Any]:
        """The ``computer`` function in this vocabulary, for a ``display``-sized screen."""

    @abstractmethod
    def rewrite(self, tool_input: Mapping[str, Any]) -> dict[str, Any]:
        """One ``computer`` input -> ``computer_use`` arguments (:mod:`hybrid_agent.provider_actions`)."""

    def refusal(self, tool_input: Mapping[str, Any]) -> str | None:
        """Why the provider's schema forbids ``tool_input`` (``None``: the rewrite may read it)."""
        return None

    def functions(self, tools: Sequence[ToolSpec], screen: Size) -> list[dict[str, Any]]:
        """``computer``, then ``terminate`` and ``answer``, then the MCP tools shown."""
        return [
            self.computer_function(self.space(screen)),
            *end_functions(),
            *(t.to_function() for t in tools),
        ]

    def system_prompt(self, tools: Sequence[ToolSpec], screen: Size, config: PromptConfig) -> str:
        """The stack's prompt listing this family's functions, ended by the end functions."""
        config = dataclasses.replace(config, resolution=self.space(screen))
        functions = self.functions(tools, screen)
        return system_prompt(
            tools, config, functions=functions, gui_tool=COMPUTER, end_rule=END_FUNCTIONS_RULE
        )

    def parse_text(self, text: str, tools: Sequence[ToolSpec]) -> ParseResult:
        """``computer`` and end-function calls rewritten into ``computer_use``, then the stack's parser.

        A ``computer`` input the provider's schema forbids (:meth:`refusal`) is an
        ``invalid_arguments`` error carrying the schema's rule.
        """
        refused: list[str] = []
        rewritten = map_calls(text, lambda call: self._to_env(call, refused))
        if refused:
            return ParseError(ParseErrorCode.INVALID_ARGUMENTS, refused[0], split_think(text)[0])
        return parse_response(rewritten, tools, thinking=self.thinking)

    def _to_env(self, call: dict[str, Any], refused: list[str]) -> dict[str, Any] | None:
        name = call.get("name")
        arguments = decode_arguments(call.get("arguments", call.get("input", {})))
        if name not in (COMPUTER, *_END_ACTIONS) or not isinstance(arguments, dict):
            return None  # MCP calls and malformed shapes: the parser reads them as they are
        reason = self.refusal(arguments) if name == COMPUTER else None
        if reason is not None:
            refused.append(reason)
            return None
        action = self.rewrite(arguments) if name == COMPUTER else {"action": name, **arguments}
        return {"name": GUI_TOOL_NAME, "arguments": action}


def _function(description: str, properties: dict[str, Any], required: str) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": [required]}
    return {
        "type": "function",
        "function": {"name": COMPUTER, "description": description, "parameters": parameters},
    }


@register_adapter("anthropic-cu")
class AnthropicComputerAdapter(ProviderComputerAdapter):
    """Anthropic's ``computer`` tool vocabulary on a display scaled to XGA/WXGA/FWXGA."""

    family = "Anthropic computer tool (computer_20250124 vocabulary)"
    scales_display = True

    def rewrite(self, tool_input: Mapping[str, Any]) -> dict[str, Any]:
        """:func:`~hybrid_agent.provider_actions.from_anthropic`."""
        return from_anthropic(tool_input)

    def refusal(self, tool_input: Mapping[str, Any]) -> str | None:
        """:func:`~hybrid_agent.provider_actions.anthropic_refusal` (a negative ``scroll_amount``)."""
        return anthropic_refusal(tool_input)

    def computer_function(self, display: Size) -> dict[str, Any]:
        """The tool's documented actions the env can carry out, on a ``display``-sized screen."""
        actions = [
            *("key", "type", "mouse_move", "left_click", "left_click_drag", "right_click", "middle_click"),
            *("double_click", "triple_click", "scroll", "wait", "screenshot"),
        ]
        properties = {
            "action": {"type": "string", "enum": actions},
            "coordinate": {**_POINT, "description": "(x, y) in pixels of the screenshot."},
            "start_coordinate": {**_POINT, "description": "(x, y) where left_click_drag starts."},
            "text": {"type": "string", "description": "Text to type, keys for key (xdotool: 'ctrl+s')."},
            "scroll_direction": {"type": "string", "enum": ["up", "down", "left", "right"]},
            "scroll_amount": {"type": "integer", "minimum": 0, "description": "Wheel notches."},
            "duration": {"type": "number", "description": "Seconds to wait."},
        }
        width, height = display
        return _function(f"Use a mouse and keyboard on a {width}x{height} screen.", properties, "action")


@register_adapter("openai-cu")
class OpenAIComputerAdapter(ProviderComputerAdapter):
    """OpenAI's ``computer_use_preview`` action vocabulary on the screen as it is."""

    family = "OpenAI computer_use_preview vocabulary"

    def rewrite(self, tool_input: Mapping[str, Any]) -> dict[str, Any]:
        """:func:`~hybrid_agent.provider_actions.from_openai`."""
        return from_openai(tool_input)

    def computer_function(self, display: Size) -> dict[str, Any]:
        """The tool's actions the env can carry out, on a ``display``-sized screen."""
        kinds = ["click", "double_click", "drag", "keypress", "move", "screenshot", "scroll", "type", "wait"]
        point = {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}}
        properties = {
            "type": {"type": "string", "enum": kinds},
            "x": {"type": "integer"},
            "y": {"type": "integer"},
            "button": {"type": "string", "enum": ["left", "right", "wheel"]},
            "keys": {"type": "array", "items": {"type": "string"}},
            "path": {"type": "array", "items": point, "minItems": 2},
            "scroll_x": {"type": "integer"},
            "scroll_y": {"type": "integer", "description": "Pixels; positive scrolls down."},
            "text": {"type": "string"},
        }
        width, height = display
        return _function(f"Control a {width}x{height} computer screen.", properties, "type")

"""The model adapter protocol and its registry: one object per model family.

Computer-use models disagree on everything around the call: the prompt or tool
schema they were trained on, the text their calls come in (``<tool_call>`` JSON,
``Action: click(start_box='(x,y)')``, pyautogui code, provider tool-use blocks), the
space their coordinates live in and the size of the screenshot they expect. An adapter
owns all four for one family (BrowserGym's action-set idea), so the agent loop, the
runner and the trainer call the same four methods whatever the model is and never
branch on its name:

* :meth:`ModelAdapter.system_prompt` / :meth:`ModelAdapter.functions`: what the model is
  told (the resolution stated is the space the mapping uses, :meth:`ModelAdapter.space`);
* :meth:`ModelAdapter.preprocess`: the screenshot as the family was trained to see it;
* :meth:`ModelAdapter.assistant_turn`: a past step as the model would have written it;
* :meth:`ModelAdapter.parse`: the reply (a policy's :class:`Generation` or its text) read
  into one env call **in screen pixels**, or a typed :class:`ParseError`. A coordinate
  outside the space is ``out_of_space``, never clamped. The raw reply stays in the step
  record (the agent loop records it before parsing).

A family subclasses :class:`ModelAdapter`, implements :meth:`ModelAdapter.parse_text`
(text -> call in the model's own space) and registers itself::

    @register_adapter("my-family")
    class MyAdapter(ModelAdapter):
        default_coordinates = CoordinateConfig(policy=CoordinatePolicy.RELATIVE_GRID)

        def parse_text(self, text, tools): ...

``get_adapter("my-family", AdapterOptions(max_pixels=...))`` then builds it.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from osworld_mcp_env.actions import ActionSpec
from osworld_mcp_env.registry import Registry
from PIL import Image

from hybrid_agent.coords import (
    POINT_ARGUMENTS,
    REGION_ARGUMENT,
    CoordinateConfig,
    CoordinatePolicy,
    Size,
    in_space,
    model_space,
    scale_to_screen,
    space_bounds,
)
from hybrid_agent.errors import ConfigError, RegistryError
from hybrid_agent.parse import ParsedAction, ParseError, ParseErrorCode, ParseResult, split_think
from hybrid_agent.parse import unfinished_reasoning as _unfinished
from hybrid_agent.policies.base import TOOL_CALL_STOP, Generation
from hybrid_agent.prompt import PromptConfig, computer_use_function, offered_actions, system_prompt
from hybrid_agent.toolset import ToolSpec
from hybrid_agent.trajectory import Call, Step

DEFAULT_ADAPTER = "qwen3-vl"


@dataclass(frozen=True)
class AdapterOptions:
    """Run settings an adapter reads (the CLI's ``--coordinates``/``--min-pixels``/``--max-pixels``).

    Attributes:
        coordinates: Override the family's coordinate space (``None``: the family's own).
        min_pixels: Override the family's smallest resized image area.
        max_pixels: Override the family's largest resized image area.
        thinking: The model runs in Thinking mode (its chat template opens ``<think>``).
        zoom: Offer the graphical ``zoom`` in ``computer_use`` (``hcu`` setting): the families
            that use the stack's ``computer_use`` function show and accept it; a family with
            its own GUI vocabulary (UI-TARS, CogAgent, OpenCUA, HybridCUA, provider tools)
            keeps its own.
    """

    coordinates: CoordinatePolicy | None = None
    min_pixels: int | None = None
    max_pixels: int | None = None
    thinking: bool = False
    zoom: bool = False

    def apply(self, config: CoordinateConfig) -> CoordinateConfig:
        """``config`` with the overrides given here (validated by :class:`CoordinateConfig`)."""
        changes: dict[str, Any] = {}
        if self.coordinates is not None:
            changes["policy"] = CoordinatePolicy(self.coordinates)
        if self.min_pixels is not None:
            changes["min_pixels"] = self.min_pixels
        if self.max_pixels is not None:
            changes["max_pixels"] = self.max_pixels
        return dataclasses.replace(config, **changes)


def reply_text(generation: Generation | str) -> str:
    """The reply as the model wrote it: server-side reasoning back in front as ``<think>...</think>``.

    A server with a reasoning parser returns the reasoning apart from the content; the
    rest of the stack (records, parser, ``keep_think``) reads the one text a model without
    a parser would have produced. A plain string is returned as it is.
    """
    if isinstance(generation, str):
        return generation
    if generation.reasoning is None or "</think>" in generation.text:
        return generation.text
    return f"<think>\n{generation.reasoning}\n</think>\n\n{generation.text}"


class ModelAdapter(ABC):
    """One model family's prompt, reply format, coordinate space and screenshot rule.

    Attributes:
        name: The registered name (set by :func:`register_adapter`).
        family: The models it serves, for ``--help`` and the docs' table.
        default_coordinates: The family's coordinate space as released.
        always_thinking: The family always opens its reasoning in the prompt (a Thinking model).
        stop: Strings that end a reply (``PolicyRequest.stop``): ``</tool_call>`` for one call
            per reply; none for a family whose reply holds several calls.
        coordinates: The space in force (defaults + :class:`AdapterOptions` overrides).
        thinking: Replies without ``</think>`` never finished reasoning and execute nothing.
        gui_actions: The ``computer_use`` vocabulary offered and accepted
            (:func:`hybrid_agent.prompt.offered_actions`).
    """

    name: ClassVar[str] = ""
    family: ClassVar[str] = ""
    default_coordinates: ClassVar[CoordinateConfig] = CoordinateConfig()
    always_thinking: ClassVar[bool] = False
    stop: ClassVar[tuple[str, ...]] = (TOOL_CALL_STOP,)

    def __init__(self, options: AdapterOptions | None = None) -> None:
        """Fixes the coordinate space and reasoning mode from the family's defaults and ``options``."""
        options = options or AdapterOptions()
        self.coordinates = options.apply(self.default_coordinates)
        self.thinking = options.thinking or self.always_thinking
        self.gui_actions: Mapping[str, ActionSpec] = offered_actions(options.zoom)

    # --- what the model sees -----------------------------------------------------------------
    def space(self, screen: Size) -> Size:
        """``(width, height)`` of the space the model addresses on ``screen``; the prompt states it."""
        return model_space(screen, self.coordinates)

    def preprocess(self, image: Image.Image) -> Image.Image:
        """The screenshot as the family sees it.

        A model that answers in pixels of its resized image must get exactly that image,
        so it is resized here (bicubic, as the Qwen processors do) rather than trusting a
        server's processor settings; for a relative grid or screen pixels the frame goes
        as it is (a processor's own resize changes no coordinate).
        """
        if self.coordinates.policy != CoordinatePolicy.ABSOLUTE_RESIZED:
            return image
        size = self.space(image.size)
        return image if size == image.size else image.resize(size, Image.Resampling.BICUBIC)

    def system_prompt(self, tools: Sequence[ToolSpec], screen: Size, config: PromptConfig) -> str:
        """The system message: by default the stack's prompt with this space's resolution and vocabulary."""
        return system_prompt(
            tools,
            dataclasses.replace(config, resolution=self.space(screen)),
            functions=self.functions(tools, screen),
        )

    def functions(self, tools: Sequence[ToolSpec], screen: Size) -> list[dict[str, Any]]:
        """The tool schema for transports that send tools apart (function calling)."""
        return [
            computer_use_function(self.space(screen), self.gui_actions),
            *(tool.to_function() for tool in tools),
        ]

    def assistant_turn(self, step: Step, keep_think: bool) -> str:
        """A past step's assistant turn: by default the reply as written, reasoning dropped unless kept."""
        think, rest = split_think(step.response)
        head = f"<think>\n{think}\n</think>\n\n" if keep_think and think else ""
        return head + rest.strip()

    # --- what the reply means ------------------------------------------------------------------
    @abstractmethod
    def parse_text(self, text: str, tools: Sequence[ToolSpec]) -> ParseResult:
        """Reads one reply into a call in the model's own coordinate space (reasoning already finished)."""

    def parse(self, output: Generation | str, tools: Sequence[ToolSpec], screen: Size) -> ParseResult:
        """Reads a reply into one env call with GUI coordinates in screen pixels.

        Args:
            output: The policy's answer, or its text.
            tools: The MCP tools shown this step.
            screen: ``(width, height)`` of the real screen.

        Returns:
            A :class:`ParsedAction` (``call`` in screen pixels, ``model_call`` as written),
            or a :class:`ParseError` (``unfinished_reasoning``, ``out_of_space``, the family's codes).
        """
        text = reply_text(output)
        if _unfinished(text, self.thinking):
            return ParseError(
                ParseErrorCode.UNFINISHED_REASONING,
                "Your reasoning never ended (no </think>), so nothing was executed. Close the reasoning "
                "with </think>, then give one action.",
                text,
            )
        parsed = self.parse_text(text, tools)
        if isinstance(parsed, ParseError):
            return parsed
        then: list[ParsedAction] = []
        for follow in parsed.then:
            mapped = self.to_screen(follow, screen) if follow.call.is_gui else follow
            if isinstance(mapped, ParseError):
                return mapped
            then.append(mapped)
        first = self.to_screen(parsed, screen) if parsed.call.is_gui else parsed
        return first if isinstance(first, ParseError) else dataclasses.replace(first, then=tuple(then))

    def to_screen(self, parsed: ParsedAction, screen: Size) -> ParseResult:
        """Maps a parsed GUI call's points onto the screen; a point outside the space is ``out_of_space``.

        A zoom's ``region`` is two points, its corners, each mapped as a point is.
        """
        call = parsed.call
        space = self.space(screen)
        arguments = dict(call.arguments)
        for key in (*POINT_ARGUMENTS, REGION_ARGUMENT):
            if key not in arguments:
                continue
            values = [float(v) for v in arguments[key]]
            points = [(values[i], values[i + 1]) for i in range(0, len(values), 2)]
            if not all(in_space(point, space, self.coordinates.policy) for point in points):
                x_max, y_max = space_bounds(space, self.coordinates.policy)
                return ParseError(
                    ParseErrorCode.OUT_OF_SPACE,
                    f"{key} {list(arguments[key])} is outside the coordinate space: x must be in "
                    f"[0, {x_max}] and y in [0, {y_max}].",
                    parsed.think,
                )
            arguments[key] = [v for point in points for v in scale_to_screen(point, space, screen)]
        written = parsed.model_call if parsed.model_call is not None else call
        return dataclasses.replace(parsed, call=Call(call.name, arguments), model_call=written)


ADAPTERS: Registry[type[ModelAdapter]] = Registry(
    "model adapter", error=RegistryError, providers=("hybrid_agent.adapters",)
)
"""Adapter classes by name."""


def register_adapter(name: str) -> Callable[[type[ModelAdapter]], type[ModelAdapter]]:
    """Registers a :class:`ModelAdapter` subclass under ``name`` (and sets its ``name``).

    Raises:
        RegistryError: ``name`` is taken by another class, or the target is not an adapter.
    """
    register = ADAPTERS.register(name)

    def wrap(cls: type[ModelAdapter]) -> type[ModelAdapter]:
        if not (isinstance(cls, type) and issubclass(cls, ModelAdapter)):
            raise RegistryError(f"register_adapter({name!r}) needs a ModelAdapter subclass, got {cls!r}.")
        if "name" in vars(cls) and cls.name != name:
            raise RegistryError(f"{cls.__qualname__} is already registered as {cls.name!r}.")
        cls.name = name
        return register(cls)

    return wrap


def get_adapter(name: str = DEFAULT_ADAPTER, options: AdapterOptions | None = None) -> ModelAdapter:
    """Builds the adapter registered under ``name``.

    Raises:
        RegistryError: An unknown name (the message lists the known ones).
        ConfigError: ``options`` give an invalid coordinate space.
    """
    cls = ADAPTERS.get(name)
    try:
        return cls(options)
    except ValueError as exc:
        raise ConfigError(f"Adapter {name!r}: {exc}") from exc


def adapter_names() -> tuple[str, ...]:
    """The registered adapter names, sorted."""
    return tuple(ADAPTERS.names())

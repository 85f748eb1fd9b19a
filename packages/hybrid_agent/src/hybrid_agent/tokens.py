"""Exact input-token accounting of a built context, with the model's own rules.

A Qwen-VL processor turns each image into ``<|vision_start|>`` + n x
``<|image_pad|>`` + ``<|vision_end|>``, where n is the number of merged patches
of the smart-resized image (1920x1080 -> 1920x1088 -> 60 x 34 = 2,040 for
Qwen3-VL). :class:`TokenCounter` renders the chat template, tokenizes the text
once (each image as a single pad token) and adds ``n - 1`` per image from the
image size alone, so counting needs neither pixels, torch nor torchvision.
Tests check it against ``Qwen3VLProcessor`` itself.

Why not call the processor directly: without torchvision, transformers cannot
construct ``Qwen3VLProcessor`` (its video processor class is unavailable), and
the processor also normalises every pixel, which the benchmark does not need.
:meth:`TokenCounter.from_processor` reads the same settings from a processor
when one is at hand.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from hybrid_agent.coords import smart_resize
from hybrid_agent.errors import ConfigError
from hybrid_agent.messages import Message, images_of

# A ChatML template with Qwen-VL image markers, enough for the messages this package
# builds (tools are rendered into the system text, so no tool branch is needed).
# Real checkpoints bring their own template; this one is for tests and the benchmark.
QWEN_CHATML_TEMPLATE = (
    "{%- for m in messages -%}"
    "<|im_start|>{{ m.role }}\n"
    "{%- if m.content is string %}{{ m.content }}"
    "{%- else %}{% for c in m.content %}"
    "{%- if c.type == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{%- elif c.type == 'text' %}{{ c.text }}{% endif %}"
    "{%- endfor %}{% endif %}<|im_end|>\n"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@dataclass(frozen=True)
class VisionGrid:
    """How a Qwen-VL image processor cuts an image into tokens.

    Attributes:
        patch_size: ViT patch side (16 for Qwen3-VL, 14 for Qwen2/2.5-VL).
        merge_size: Patches merged per side into one token (2).
        min_pixels: Smallest image area after resizing.
        max_pixels: Largest image area after resizing.
    """

    patch_size: int = 16
    merge_size: int = 2
    min_pixels: int = 65_536
    max_pixels: int = 16_777_216

    def __post_init__(self) -> None:
        if self.patch_size < 1 or self.merge_size < 1:
            raise ConfigError(
                f"patch_size and merge_size must be >= 1, got {self.patch_size}, {self.merge_size}."
            )

    @classmethod
    def qwen3_vl(cls) -> VisionGrid:
        """Qwen3-VL's released preprocessor settings (patch 16, merge 2, 64K..16M pixels)."""
        return cls(patch_size=16, merge_size=2, min_pixels=65_536, max_pixels=16_777_216)

    @classmethod
    def qwen2_5_vl(cls) -> VisionGrid:
        """Qwen2.5-VL's released preprocessor settings (patch 14, merge 2, 3136..12.8M pixels)."""
        return cls(patch_size=14, merge_size=2, min_pixels=3_136, max_pixels=12_845_056)

    @classmethod
    def from_image_processor(cls, processor: Any) -> VisionGrid:
        """Reads the settings of a transformers Qwen-VL image processor (PIL or torchvision backend)."""
        size = getattr(processor, "size", None) or {}
        min_pixels = size.get("shortest_edge", getattr(processor, "min_pixels", None))
        max_pixels = size.get("longest_edge", getattr(processor, "max_pixels", None))
        if min_pixels is None or max_pixels is None:
            raise ConfigError(
                f"{type(processor).__name__} gives no pixel bounds (size shortest_edge/longest_edge or "
                "min_pixels/max_pixels); pass a Qwen-VL image processor or build VisionGrid(...) directly."
            )
        return cls(
            patch_size=processor.patch_size,
            merge_size=processor.merge_size,
            min_pixels=min_pixels,
            max_pixels=max_pixels,
        )

    @property
    def factor(self) -> int:
        """Side multiple of the resized image: one merged token covers ``factor`` x ``factor`` pixels."""
        return self.patch_size * self.merge_size

    def grid(self, width: int, height: int) -> tuple[int, int, int]:
        """``(t, h, w)`` patch grid of one image, as ``image_grid_thw`` reports it."""
        h_bar, w_bar = smart_resize(height, width, self.factor, self.min_pixels, self.max_pixels)
        return 1, h_bar // self.patch_size, w_bar // self.patch_size

    def tokens(self, width: int, height: int) -> int:
        """Vision tokens of one image of ``width`` x ``height`` pixels."""
        t, h, w = self.grid(width, height)
        return t * h * w // (self.merge_size**2)


class ChatTokenizer(Protocol):
    """The part of a transformers tokenizer the counter needs."""

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any:
        """Renders messages with a Jinja chat template."""
        ...

    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]:
        """Tokenizes text to ids."""
        ...

    def convert_tokens_to_ids(self, token: str) -> int:
        """Looks up a token id."""
        ...


@dataclass(frozen=True)
class ContextTokens:
    """Input tokens of one context.

    Attributes:
        total: Every input token, text and vision (what the server bills as prompt tokens).
        vision: Tokens standing for image patches.
        per_image: Vision tokens of each image, in order.
    """

    total: int
    vision: int
    per_image: tuple[int, ...]

    @property
    def text(self) -> int:
        """Tokens that are not image patches (template, prompt, tool results, markers)."""
        return self.total - self.vision


class TokenCounter:
    """Counts a context's input tokens exactly as a Qwen-VL processor would tokenize it."""

    def __init__(
        self,
        tokenizer: ChatTokenizer,
        vision: VisionGrid,
        chat_template: str | None = None,
        image_token: str = "<|image_pad|>",
    ) -> None:
        """Wraps a tokenizer and the processor's vision settings.

        Args:
            tokenizer: A transformers tokenizer.
            vision: The image processor's grid settings.
            chat_template: Template to render with; ``None`` uses the tokenizer's own.
            image_token: The pad token a processor expands per image.
        """
        self.tokenizer = tokenizer
        self.vision = vision
        self.chat_template = chat_template
        self.image_token = image_token
        self.image_token_id = tokenizer.convert_tokens_to_ids(image_token)

    @classmethod
    def from_processor(cls, processor: Any) -> TokenCounter:
        """Uses a processor's tokenizer, image-processor settings and chat template."""
        return cls(
            processor.tokenizer,
            VisionGrid.from_image_processor(processor.image_processor),
            chat_template=processor.chat_template,
            image_token=getattr(processor, "image_token", "<|image_pad|>"),
        )

    def render(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        """The prompt text the server sees, with one pad token per image."""
        return self.tokenizer.apply_chat_template(
            list(messages),
            chat_template=self.chat_template,
            tokenize=False,
            add_generation_prompt=add_generation_prompt,
        )

    def count(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> ContextTokens:
        """Counts the input tokens of ``messages``.

        Raises:
            ConfigError: When the rendered text's pad tokens do not match the images (a
                template that drops images, or a pad token typed into a text part).
        """
        ids = self.tokenizer.encode(self.render(messages, add_generation_prompt), add_special_tokens=False)
        images = images_of(messages)
        pads = sum(1 for token in ids if token == self.image_token_id)
        if pads != len(images):
            raise ConfigError(
                f"The rendered prompt has {pads} {self.image_token} tokens for {len(images)} images; "
                "the chat template must render each image part as one pad token."
            )
        per_image = tuple(self.vision.tokens(*image.size) for image in images)
        vision = sum(per_image)
        return ContextTokens(total=len(ids) - pads + vision, vision=vision, per_image=per_image)

    def count_output(self, text: str) -> int:
        """Tokens of a model output (its raw text, as generated)."""
        return len(self.tokenizer.encode(text, add_special_tokens=False))


@dataclass
class TaskTokens:
    """Token use of one task: one entry per model call (retries included)."""

    input_per_call: list[int] = field(default_factory=list)
    output_per_call: list[int] = field(default_factory=list)

    def add(self, input_tokens: int, output_tokens: int = 0) -> None:
        """Records one model call."""
        self.input_per_call.append(input_tokens)
        self.output_per_call.append(output_tokens)

    @property
    def total_input(self) -> int:
        """Sum of input tokens over the task's calls (the study's TotalIn)."""
        return sum(self.input_per_call)

    @property
    def total_output(self) -> int:
        """Sum of output tokens."""
        return sum(self.output_per_call)

    @property
    def peak_input(self) -> int:
        """Largest single-call input (the study's PeakIn of this task)."""
        return max(self.input_per_call, default=0)


@dataclass(frozen=True)
class TokenSummary:
    """Token statistics over tasks.

    Attributes:
        tasks: Number of tasks.
        input_per_task: Mean input tokens per task.
        input_per_step: Mean input tokens per call over all calls.
        peak_p95: 95th percentile (linear interpolation) of the per-task peak input.
        peak_max: Largest per-task peak input.
        output_per_task: Mean output tokens per task.
    """

    tasks: int
    input_per_task: float
    input_per_step: float
    peak_p95: float
    peak_max: int
    output_per_task: float

    def to_metrics(self, prefix: str = "tokens") -> Mapping[str, float]:
        """Namespaced metrics (``tokens/input_per_task``, ...)."""
        return {
            f"{prefix}/input_per_task": self.input_per_task,
            f"{prefix}/input_per_step": self.input_per_step,
            f"{prefix}/peak_p95": self.peak_p95,
            f"{prefix}/peak_max": float(self.peak_max),
            f"{prefix}/output_per_task": self.output_per_task,
        }


def summarize_tokens(tasks: Sequence[TaskTokens]) -> TokenSummary:
    """Summarises token use over tasks (empty tasks count as zero-token tasks).

    Raises:
        ConfigError: For an empty sequence (a mean over nothing is not a number worth reporting).
    """
    if not tasks:
        raise ConfigError("summarize_tokens needs at least one task.")
    calls = [n for task in tasks for n in task.input_per_call]
    peaks = np.array([task.peak_input for task in tasks], dtype=float)
    return TokenSummary(
        tasks=len(tasks),
        input_per_task=float(np.mean([task.total_input for task in tasks])),
        input_per_step=float(np.mean(calls)) if calls else 0.0,
        peak_p95=float(np.percentile(peaks, 95)),
        peak_max=int(peaks.max()),
        output_per_task=float(np.mean([task.total_output for task in tasks])),
    )


def estimate_input_tokens(messages: Sequence[Message], vision: VisionGrid | None = None) -> int:
    """A tokenizer-free estimate: exact vision tokens plus one token per 4 characters of text.

    For policies that report no usage (scripted, replay of old records); reports mark
    such counts as estimates. Use :class:`TokenCounter` for exact counts.
    """
    vision = vision or VisionGrid.qwen3_vl()
    chars, tokens = 0, 0
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            chars += len(content)
            continue
        for part in content:
            if part["type"] == "image":
                tokens += vision.tokens(*part["image"].size)
            else:
                chars += len(part.get("text", ""))
    return tokens + chars // 4

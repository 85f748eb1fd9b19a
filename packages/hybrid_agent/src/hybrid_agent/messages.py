"""Chat-message parts, and conversion to the OpenAI-compatible wire format.

The builder emits the format transformers' ``apply_chat_template`` and Qwen-VL
processors take: ``{"role": ..., "content": [{"type": "text", "text": ...},
{"type": "image", "image": PIL.Image}]}``. OpenAI-compatible servers (vLLM,
SGLang) want images as ``image_url`` parts with a data URL; :func:`to_openai`
converts, encoding PNG only here, at the edge.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

from PIL import Image

Message = dict[str, Any]


def text_part(text: str) -> dict[str, Any]:
    """A text content part."""
    return {"type": "text", "text": text}


def image_part(image: Image.Image) -> dict[str, Any]:
    """An image content part holding the PIL image itself (no encoding)."""
    return {"type": "image", "image": image}


def count_images(messages: Sequence[Message]) -> int:
    """Number of image parts in a message list."""
    return sum(
        1
        for message in messages
        if isinstance(message["content"], list)
        for part in message["content"]
        if part["type"] == "image"
    )


def images_of(messages: Sequence[Message]) -> list[Image.Image]:
    """The images of a message list, in order (what a processor's ``images=`` takes)."""
    return [
        part["image"]
        for message in messages
        if isinstance(message["content"], list)
        for part in message["content"]
        if part["type"] == "image"
    ]


def png_base64(image: Image.Image) -> str:
    """The image as base64 PNG text (what provider APIs take in their image blocks)."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def data_url(image: Image.Image) -> str:
    """The image as a PNG data URL (OpenAI's ``image_url`` and ``computer_screenshot``)."""
    return "data:image/png;base64," + png_base64(image)


def to_openai(messages: Sequence[Message]) -> list[Message]:
    """Converts builder messages to the OpenAI chat format (images as PNG data URLs)."""
    out: list[Message] = []
    for message in messages:
        content = message["content"]
        if isinstance(content, list):
            content = [
                {"type": "image_url", "image_url": {"url": data_url(part["image"])}}
                if part["type"] == "image"
                else dict(part)
                for part in content
            ]
        out.append({"role": message["role"], "content": content})
    return out

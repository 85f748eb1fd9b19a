"""Calls with XML-tagged arguments: GLM-4.5V and Qwen3-Coder.

Both families are shown the stack's tools (``computer_use`` first, then the MCP tools)
and write one call per reply; only the spelling of the arguments differs:

* GLM-4.5V (its chat template's tool-call format)::

      <tool_call>computer_use
      <arg_key>action</arg_key>
      <arg_value>left_click</arg_value>
      <arg_key>coordinate</arg_key>
      <arg_value><|begin_of_box|>[480,500,520,540]<|end_of_box|></arg_value>
      </tool_call>

  GLM-4.5V grounds with boxes between ``<|begin_of_box|>`` and ``<|end_of_box|>``; a box
  given as a point argument is read as its centre (repair ``box_centre``). A GLM-4.5V
  reply without ``<tool_call>`` is read in its GUI-agent format instead
  (``<|begin_of_box|>left_click(start_box='[503,271]')<|end_of_box|>`` and the rest of
  its PC action space, :mod:`hybrid_agent.adapters.glm_gui`), on the same grid.
* Qwen3-Coder::

      <tool_call>
      <function=computer_use>
      <parameter=action>
      left_click
      </parameter>
      <parameter=coordinate>
      [500, 300]
      </parameter>
      </function>
      </tool_call>

Argument text becomes the JSON type the tool's schema declares
(:func:`~hybrid_agent.adapters.calls.typed_value`); the call is then checked exactly as
a ``<tool_call>`` JSON call is (:func:`hybrid_agent.parse.call_from_object`). Both use
the relative ``[0, 1000]`` grid (GLM-4.5V's boxes are normalised to 1000).
"""

from __future__ import annotations

import dataclasses
import re
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from hybrid_agent.adapters.base import ModelAdapter, register_adapter
from hybrid_agent.adapters.calls import point_of, typed_value
from hybrid_agent.adapters.glm_gui import parse_gui_reply
from hybrid_agent.coords import POINT_ARGUMENTS, CoordinateConfig, CoordinatePolicy, Size
from hybrid_agent.parse import ParseError, ParseErrorCode, ParseResult, call_from_object, split_think
from hybrid_agent.prompt import PromptConfig, system_prompt
from hybrid_agent.toolset import ToolSpec

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_BOX_TOKENS = re.compile(r"<\|begin_of_box\|>|<\|end_of_box\|>")


def tool_call_body(rest: str, repairs: list[str]) -> str | ParseError:
    """The text inside the reply's one ``<tool_call>`` (an unclosed last block is repaired)."""
    count = rest.count(_OPEN)
    if count != 1:
        code = ParseErrorCode.NO_TOOL_CALL if count == 0 else ParseErrorCode.MULTIPLE_TOOL_CALLS
        return ParseError(code, "Emit exactly one <tool_call>...</tool_call> block.")
    body = rest.split(_OPEN, 1)[1]
    if _CLOSE not in body:
        repairs.append("missing_close_tag")
        return body
    body, trailing = body.split(_CLOSE, 1)
    if trailing.strip():
        repairs.append("trailing_text")
    return body


def _unmatched(body: str, pattern: re.Pattern[str]) -> str:
    return pattern.sub("", body).strip()


class TaggedAdapter(ModelAdapter):
    """Shared reading: the block, its name and argument pairs, typed values, the stack's call checks."""

    default_coordinates = CoordinateConfig(policy=CoordinatePolicy.RELATIVE_GRID, grid=1000)
    call_format: str = ""

    def system_prompt(self, tools: Sequence[ToolSpec], screen: Size, config: PromptConfig) -> str:
        """The stack's prompt, with this space's resolution and the family's call spelling."""
        changed = dataclasses.replace(config, resolution=self.space(screen), call_format=self.call_format)
        return system_prompt(tools, changed)

    @abstractmethod
    def split(self, body: str) -> tuple[str, list[tuple[str, str]]] | ParseError:
        """``(name, [(key, raw value), ...])`` of one block body."""

    def parse_text(self, text: str, tools: Sequence[ToolSpec]) -> ParseResult:
        """Reads the one tagged call into a checked call (model space)."""
        think, rest = split_think(text)
        repairs: list[str] = []
        body = tool_call_body(rest, repairs)
        if isinstance(body, ParseError):
            return ParseError(body.code, body.message, think)
        split = self.split(body)
        if isinstance(split, ParseError):
            return ParseError(split.code, split.message, think)
        name, pairs = split
        arguments: dict[str, Any] = {}
        for key, raw in pairs:
            if key in arguments:
                return ParseError(
                    ParseErrorCode.INVALID_ARGUMENTS, f"Argument {key!r} is given twice.", think
                )
            value = raw
            if _BOX_TOKENS.search(value):
                value = _BOX_TOKENS.sub("", value)
                repairs.append("box_tokens")
            arguments[key] = typed_value(name, key, value, tools)
        for key in POINT_ARGUMENTS:
            point = arguments.get(key)
            if isinstance(point, list) and len(point) == 4:
                centre = point_of(point, key)
                if isinstance(centre, ParseError):
                    return ParseError(centre.code, centre.message, think)
                arguments[key] = centre
                repairs.append("box_centre")
        return call_from_object({"name": name, "arguments": arguments}, rest, think, tools, repairs)


_GLM_PAIR = re.compile(r"<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>", re.DOTALL)


@register_adapter("glm-4.5v")
class GLM45VAdapter(TaggedAdapter):
    """GLM-4.5V: ``<tool_call>name<arg_key>k</arg_key>...`` or its GUI-agent ``left_click(start_box=...)``."""

    family = "GLM-4.5V"
    call_format = (
        "One call in tags, the function name first, then each argument as a key/value pair:\n"
        "<tool_call><function-name>\n<arg_key><argument-name></arg_key>\n<arg_value><value></arg_value>\n"
        "</tool_call>"
    )

    def parse_text(self, text: str, tools: Sequence[ToolSpec]) -> ParseResult:
        """A ``<tool_call>`` in tags, else GLM-4.5V's own GUI-agent action (``glm_gui``)."""
        think, rest = split_think(text)
        if _OPEN in rest:
            return super().parse_text(text, tools)
        return parse_gui_reply(rest, think)

    def split(self, body: str) -> tuple[str, list[tuple[str, str]]] | ParseError:
        """The name before the first ``<arg_key>``, then the key/value pairs; stray text is an error."""
        name = body.split("<arg_key>", 1)[0].strip()
        if not name or "<" in name:
            return ParseError(ParseErrorCode.MISSING_NAME, "Write the function name right after <tool_call>.")
        pairs = [(key.strip(), value) for key, value in _GLM_PAIR.findall(body)]
        left = _unmatched(body[body.find(name) + len(name) :], _GLM_PAIR)
        if left:
            return ParseError(
                ParseErrorCode.INVALID_SYNTAX,
                f"Unreadable text in the call: {left[:80]!r}. "
                "Write <arg_key>k</arg_key><arg_value>v</arg_value>.",
            )
        return name, pairs


_CODER_FUNCTION = re.compile(r"^\s*<function=([^>\s]+)>(.*)</function>\s*$", re.DOTALL)
_CODER_PARAMETER = re.compile(r"<parameter=([^>\s]+)>(.*?)</parameter>", re.DOTALL)


@register_adapter("qwen3-coder")
class Qwen3CoderAdapter(TaggedAdapter):
    """Qwen3-Coder: ``<tool_call><function=name><parameter=k>v</parameter></function></tool_call>``."""

    family = "Qwen3-Coder"
    call_format = (
        "One call in tags:\n<tool_call>\n<function=<function-name>>\n<parameter=<argument-name>>\n<value>\n"
        "</parameter>\n</function>\n</tool_call>"
    )

    def split(self, body: str) -> tuple[str, list[tuple[str, str]]] | ParseError:
        """The ``<function=...>`` element and its ``<parameter=...>`` children; stray text is an error."""
        found = _CODER_FUNCTION.match(body)
        if found is None:
            return ParseError(
                ParseErrorCode.INVALID_SYNTAX,
                "Write the call as <function=name><parameter=key>value</parameter></function>.",
            )
        name, inner = found.groups()
        left = _unmatched(inner, _CODER_PARAMETER)
        if left:
            return ParseError(
                ParseErrorCode.INVALID_SYNTAX,
                f"Unreadable text in the call: {left[:80]!r}. Write <parameter=key>value</parameter>.",
            )
        return name, [(key, value) for key, value in _CODER_PARAMETER.findall(inner)]

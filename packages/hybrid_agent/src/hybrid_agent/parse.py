"""Model text -> one call, or a structured parse error the runner feeds back.

Accepted output: optional ``<think>...</think>``, an ``Action:`` line, exactly
one ``<tool_call>{json}</tool_call>``. Only repairs whose meaning is certain are
made, and each is reported in :attr:`ParsedAction.repairs`:

* ``trailing_text`` - text after ``</tool_call>`` or after the JSON object inside it;
* ``missing_close_tag`` - the output ends inside the single ``<tool_call>``;
* ``missing_brace`` - the JSON lacks exactly one final ``}``;
* ``flat_shape`` - ``{"name": ..., "action": ...}`` with the arguments beside the name
  instead of under ``"arguments"`` (what Qwen3-VL Instruct emits in most turns);
* ``arguments_string`` - ``"arguments"`` is a JSON string holding the object (the
  OpenAI function-calling wire form);
* ``functions_prefix`` - the name carries OpenAI's ``functions.`` prefix;
* ``default_wait_time`` - ``wait`` without ``time`` waits 1 second (the study's default);
* ``qualified_name`` - a bare MCP name matching exactly one shown tool.

A call inside unfinished reasoning is never read: an output that opens ``<think>``
and never closes it, or (Thinking mode, whose chat template opens the reasoning in
the prompt) has no ``</think>`` at all, is ``unfinished_reasoning`` whatever it
contains, so a draft ``terminate`` the model was still weighing does not run.

Ambiguous shapes stay errors: two calls, an ``"arguments"`` object *and* argument
keys beside it (``ambiguous_shape``), a bare name that two shown tools share.

Everything else is a :class:`ParseError` with a distinct ``code``. A
``computer_use`` call is validated against ``osworld_mcp_env.actions`` (the table
the prompt's schema comes from), so an unknown GUI action is an error, never an
MCP call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from osworld_mcp_env.actions import COMPUTER_USE_ACTIONS, TERMINAL_ACTIONS, ActionSpec, parse_action
from osworld_mcp_env.errors import ActionError

from hybrid_agent.toolset import ToolSpec
from hybrid_agent.trajectory import GUI_TOOL_NAME, Call

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_ACTION_LINE = re.compile(r"^[ \t]*Action:[ \t]*(.+?)[ \t]*$", re.MULTILINE)


class ParseErrorCode(StrEnum):
    """Why a model output could not become a call."""

    NO_TOOL_CALL = "no_tool_call"
    MULTIPLE_TOOL_CALLS = "multiple_tool_calls"
    INVALID_JSON = "invalid_json"
    MISSING_NAME = "missing_name"
    MISSING_ARGUMENTS = "missing_arguments"
    INVALID_ARGUMENTS = "invalid_arguments"
    UNKNOWN_GUI_ACTION = "unknown_gui_action"
    GUI_ACTION_AS_TOOL = "gui_action_as_tool"
    UNKNOWN_TOOL = "unknown_tool"
    AMBIGUOUS_SHAPE = "ambiguous_shape"
    UNFINISHED_REASONING = "unfinished_reasoning"
    INVALID_SYNTAX = "invalid_syntax"  # a call written as code (UI-TARS, pyautogui ...) that does not parse
    OUT_OF_SPACE = "out_of_space"  # a coordinate outside the model's coordinate space (set by the adapter)
    TRUNCATED = "truncated"  # the output budget cut the reply off (set by the agent loop)
    INTERFACE_REFUSED = "interface_refused"  # a call of an interface the episode's mode refuses (agent loop)


@dataclass(frozen=True)
class ParseError:
    """A malformed output, returned as a value.

    Attributes:
        code: The failure mode.
        message: What was wrong and what is expected, written for the model.
        think: The reasoning text, if any (kept for logs).
    """

    code: ParseErrorCode
    message: str
    think: str | None = None

    def render(self) -> str:
        """The feedback text shown to the model in the next turn."""
        return f"Error [{self.code}]: {self.message}"

    def to_action_error(self) -> ActionError:
        """The same mistake in the env package's shared error shape."""
        return ActionError(code=str(self.code), message=self.message)


@dataclass(frozen=True)
class ParsedAction:
    """A well-formed output.

    Attributes:
        call: The call to execute (from a model adapter: GUI coordinates in screen pixels).
        action_line: The text of the ``Action:`` line, or ``None`` when absent.
        think: The reasoning text, or ``None``.
        repairs: Names of the repairs made (empty when the output was clean).
        model_call: The call in the model's own coordinate space, when an adapter mapped
            ``call`` onto the screen (kept for records and the history); ``None``: the same as ``call``.
        then: Further calls of the same reply, executed in order after this one, each as its own
            env step (HybridCUA's turns); empty for the families that make one call per reply.
    """

    call: Call
    action_line: str | None
    think: str | None
    repairs: tuple[str, ...] = ()
    model_call: Call | None = None
    then: tuple[ParsedAction, ...] = ()

    @property
    def as_written(self) -> Call:
        """The call in the model's own space (``model_call``, else ``call``)."""
        return self.model_call if self.model_call is not None else self.call

    @property
    def is_gui(self) -> bool:
        """True for ``computer_use``."""
        return self.call.is_gui

    @property
    def is_terminal(self) -> bool:
        """True for the table's episode-ending actions (``terminate``, ``answer``)."""
        return self.call.is_gui and self.call.arguments.get("action") in TERMINAL_ACTIONS


ParseResult = ParsedAction | ParseError


def split_think(text: str) -> tuple[str | None, str]:
    """Splits off reasoning: everything up to the last ``</think>``.

    Returns:
        ``(think, rest)``; ``think`` is ``None`` when there is no ``</think>``.
    """
    end = text.rfind("</think>")
    if end < 0:
        return None, text
    think = text[:end]
    start = think.find("<think>")
    if start >= 0:
        think = think[start + len("<think>") :]
    return think.strip(), text[end + len("</think>") :]


def extract_action_line(text: str) -> str | None:
    """Returns the first ``Action:`` line before any ``<tool_call>`` (think already removed)."""
    head = text.split(_OPEN, 1)[0]
    match = _ACTION_LINE.search(head)
    return match.group(1) if match else None


def _decode_call(body: str, repairs: list[str]) -> dict[str, Any] | ParseError:
    body = body.strip()
    decoder = json.JSONDecoder()
    try:
        obj, end = decoder.raw_decode(body)
    except json.JSONDecodeError as exc:
        try:
            obj, end = decoder.raw_decode(body + "}")
        except json.JSONDecodeError:
            return ParseError(
                ParseErrorCode.INVALID_JSON, f"The <tool_call> body is not valid JSON: {exc.msg}."
            )
        if end != len(body) + 1:
            return ParseError(
                ParseErrorCode.INVALID_JSON, f"The <tool_call> body is not valid JSON: {exc.msg}."
            )
        repairs.append("missing_brace")
        return _check_object(obj)
    rest = body[end:].strip()
    if rest:
        if rest.startswith("{"):
            return ParseError(
                ParseErrorCode.MULTIPLE_TOOL_CALLS, "Put exactly one JSON object in one <tool_call>."
            )
        repairs.append("trailing_text")
    return _check_object(obj)


def _check_object(obj: Any) -> dict[str, Any] | ParseError:
    if not isinstance(obj, dict):
        return ParseError(ParseErrorCode.INVALID_JSON, "The <tool_call> body must be a JSON object.")
    return obj


# Model-space bounds for the env's validator: coordinates are checked for shape here;
# mapping onto the real screen (and clamping) is hybrid_agent.coords' job.
_MODEL_SPACE = (2**31, 2**31)


def validate_gui(
    arguments: Mapping[str, Any], actions: Mapping[str, ActionSpec] = COMPUTER_USE_ACTIONS
) -> ParseError | None:
    """Checks ``computer_use`` arguments against the offered vocabulary (shape only, model space).

    ``actions``: what the model was offered (``hybrid_agent.prompt.offered_actions``): an
    action of the env's table that the prompt did not show is refused as unknown.
    """
    action = arguments.get("action")
    if action is None:
        return ParseError(ParseErrorCode.MISSING_ARGUMENTS, "computer_use needs an 'action' argument.")
    if not isinstance(action, str) or action not in actions:
        return ParseError(
            ParseErrorCode.UNKNOWN_GUI_ACTION,
            f"computer_use has no action {action!r}. Valid actions: {', '.join(actions)}.",
        )
    missing = [name for name in actions[action].required if name not in arguments]
    if missing:
        return ParseError(
            ParseErrorCode.MISSING_ARGUMENTS, f"computer_use action {action!r} needs: {', '.join(missing)}."
        )
    checked = parse_action({"name": GUI_TOOL_NAME, "arguments": dict(arguments)}, screen_size=_MODEL_SPACE)
    if isinstance(checked, ActionError):
        message = checked.message
        if checked.code == "out_of_screen":
            message = f"computer_use action {action!r}: coordinates must be non-negative numbers."
        return ParseError(ParseErrorCode.INVALID_ARGUMENTS, message)
    return None


def _resolve_mcp(name: str, arguments: Mapping[str, Any], tools: Sequence[ToolSpec], repairs: list[str]):
    by_name = {tool.qualified_name: tool for tool in tools}
    tool = by_name.get(name)
    if tool is None and "." not in name:
        matches = [t for t in tools if t.name == name]
        if len(matches) == 1:
            tool = matches[0]
            repairs.append("qualified_name")
    if tool is None:
        shown = ", ".join(sorted(by_name)) or "none"
        return ParseError(
            ParseErrorCode.UNKNOWN_TOOL, f"No tool named {name!r} is available. Shown tools: {shown}."
        )
    missing = [p for p in tool.required if p not in arguments]
    if missing:
        return ParseError(
            ParseErrorCode.MISSING_ARGUMENTS, f"Tool {tool.qualified_name!r} needs: {', '.join(missing)}."
        )
    return tool.qualified_name


def unfinished_reasoning(text: str, thinking: bool = False) -> bool:
    """Whether ``text`` ends inside its reasoning.

    True when the last ``<think>`` has no ``</think>`` after it, or, with ``thinking``
    (the prompt opened the reasoning), when there is no ``</think>`` at all.
    """
    opened, closed = text.rfind("<think>"), text.rfind("</think>")
    return closed < opened or (thinking and closed < 0)


def parse_response(
    text: str,
    tools: Sequence[ToolSpec] | None = None,
    thinking: bool = False,
    actions: Mapping[str, ActionSpec] = COMPUTER_USE_ACTIONS,
) -> ParseResult:
    """Parses one model output.

    Args:
        text: The raw model output.
        tools: The MCP tools shown this step. When given, MCP names are checked against
            them (unknown name -> ``unknown_tool``; missing required parameters ->
            ``missing_arguments``) and a bare name is qualified if exactly one shown tool
            has it. When ``None``, MCP calls are only checked for shape.
        thinking: The model runs in Thinking mode (its prompt opens ``<think>``): an output
            without ``</think>`` never finished reasoning and yields no call.
        actions: The ``computer_use`` vocabulary the model was offered (the study's by default).

    Returns:
        A :class:`ParsedAction`, or a :class:`ParseError` whose ``render()`` goes back to the model.
    """
    if unfinished_reasoning(text, thinking):
        return ParseError(
            ParseErrorCode.UNFINISHED_REASONING,
            "Your reasoning never ended (no </think>), so nothing was executed. Close the reasoning "
            "with </think>, then give one <tool_call>.",
            text,
        )
    think, rest = split_think(text)
    count = rest.count(_OPEN)
    if count == 0:
        return ParseError(ParseErrorCode.NO_TOOL_CALL, "Emit one <tool_call>{...}</tool_call> block.", think)
    if count > 1:
        return ParseError(ParseErrorCode.MULTIPLE_TOOL_CALLS, "Emit exactly one <tool_call> per step.", think)
    repairs: list[str] = []
    after_open = rest.split(_OPEN, 1)[1]
    if _CLOSE in after_open:
        body, trailing = after_open.split(_CLOSE, 1)
        if trailing.strip():
            repairs.append("trailing_text")
    else:
        body = after_open
        repairs.append("missing_close_tag")
    obj = _decode_call(body, repairs)
    if isinstance(obj, ParseError):
        return ParseError(obj.code, obj.message, think)
    return call_from_object(obj, rest, think, tools, repairs, actions)


# Keys a call object may carry beside "name" and "arguments" without changing its meaning.
_ENVELOPE_KEYS = frozenset({"name", "arguments", "type", "id"})
_FUNCTIONS_PREFIX = "functions."
DEFAULT_WAIT_S = 1.0


def _call_arguments(obj: dict[str, Any], repairs: list[str]) -> dict[str, Any] | ParseError:
    """The arguments object of a call in the nested, flat or string-encoded shape."""
    arguments = obj.get("arguments")
    extra = {key: value for key, value in obj.items() if key not in _ENVELOPE_KEYS}
    if arguments is None:
        repairs.append("flat_shape")
        return extra
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            message = f'"arguments" is a string but not JSON: {exc.msg}.'
            return ParseError(ParseErrorCode.INVALID_JSON, message)
        repairs.append("arguments_string")
    if not isinstance(arguments, dict):
        return ParseError(ParseErrorCode.MISSING_ARGUMENTS, '"arguments" must be a JSON object.')
    if extra:
        return ParseError(
            ParseErrorCode.AMBIGUOUS_SHAPE,
            f'The call has an "arguments" object and also {sorted(extra)} beside it; '
            'put every argument inside "arguments".',
        )
    return arguments


def _call_name(obj: dict[str, Any], repairs: list[str]) -> str | None:
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return None
    if name.startswith(_FUNCTIONS_PREFIX) and len(name) > len(_FUNCTIONS_PREFIX):
        repairs.append("functions_prefix")
        name = name[len(_FUNCTIONS_PREFIX) :]
    return name


def call_from_object(
    obj: dict[str, Any],
    rest: str,
    think: str | None,
    tools: Sequence[ToolSpec] | None,
    repairs: list[str],
    actions: Mapping[str, ActionSpec] = COMPUTER_USE_ACTIONS,
) -> ParseResult:
    """Checks one decoded ``{"name", "arguments"}`` call (any family's) as the ``<tool_call>`` parser does.

    Args:
        obj: The call object (nested, flat or string-encoded arguments).
        rest: The reply text outside the reasoning (its ``Action:`` line is read).
        think: The reasoning text, if any.
        tools: The MCP tools shown (``None``: MCP calls are checked for shape only).
        repairs: Repairs already made; this call's are appended.
        actions: The ``computer_use`` vocabulary the model was offered.
    """
    name = _call_name(obj, repairs)
    if name is None:
        return ParseError(ParseErrorCode.MISSING_NAME, 'The call needs a string "name".', think)
    arguments = _call_arguments(obj, repairs)
    if isinstance(arguments, ParseError):
        return ParseError(arguments.code, arguments.message, think)
    if name == GUI_TOOL_NAME:
        if arguments.get("action") == "wait" and "time" not in arguments:
            arguments = {**arguments, "time": DEFAULT_WAIT_S}
            repairs.append("default_wait_time")
        error = validate_gui(arguments, actions)
        if error is not None:
            return ParseError(error.code, error.message, think)
    elif name in actions:
        return ParseError(
            ParseErrorCode.GUI_ACTION_AS_TOOL,
            f'{name!r} is a GUI action: call {{"name": "computer_use", '
            f'"arguments": {{"action": "{name}", ...}}}}.',
            think,
        )
    elif tools is not None:
        resolved = _resolve_mcp(name, arguments, tools, repairs)
        if isinstance(resolved, ParseError):
            return ParseError(resolved.code, resolved.message, think)
        name = resolved
    # Dedupe while keeping order: 'trailing_text' can be noted both inside and after the tag.
    unique = tuple(dict.fromkeys(repairs))
    return ParsedAction(Call(name, arguments), extract_action_line(rest), think, unique)

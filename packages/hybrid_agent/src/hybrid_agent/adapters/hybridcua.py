"""HybridCUA: one function, a shell for everything, pyautogui heredocs on a 0..999 grid for the GUI.

"Learning to Orchestrate GUI and CLI for Computer-Use Agents" (``ZJU-REAL/HybridCUA``)
gives its model a single function, ``computer_use`` (``cli`` in an A/B variant, the
``hybridcua-cli`` adapter here), whose ``action`` is one of:

* ``bash``: run ``command`` in a shell (``timeout`` seconds optional). GUI work is a
  command too: ``python3 <<'PY' ... import pyautogui ... PY`` with positions on a
  0..999 grid (the screen treated as 1000x1000); one command may do several GUI steps;
* ``wait`` (``time`` seconds), ``terminate`` (``status`` success | failure), ``answer``
  (``text``): the control actions.

A reply is ``Action: <one sentence>`` followed by one or more calls in Qwen3-Coder's
tags; every parameter is a raw string (no JSON decoding, so a command needs no
escaping)::

    Action: Open the report in LibreOffice Writer.
    <tool_call>
    <function=computer_use>
    <parameter=action>
    bash
    </parameter>
    <parameter=command>
    libreoffice --writer ~/report.docx &
    </parameter>
    </function>
    </tool_call>

All the calls of a reply run in order, each as its own env step (each counts against the
step budget); the turn is one record (:attr:`ParsedAction.then` holds the calls after the
first). ``bash`` goes to the env's bash channel (``enable_bash=True``) with
``pyautogui_grid`` 999, so the heredoc's pyautogui scales ``round(v * W / 999)`` inside
the desktop; the control actions go to ``computer_use``. MCP tools are not offered: the
function is the whole action space.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from hybrid_agent.adapters.base import ModelAdapter, register_adapter
from hybrid_agent.coords import CoordinateConfig, CoordinatePolicy, Size
from hybrid_agent.parse import (
    ParsedAction,
    ParseError,
    ParseErrorCode,
    ParseResult,
    extract_action_line,
    split_think,
)
from hybrid_agent.prompt import PromptConfig, render_tools_block
from hybrid_agent.toolset import ToolSpec
from hybrid_agent.trajectory import GUI_TOOL_NAME, Call

GRID = 999
"""The largest grid coordinate: HybridCUA scales ``round(v * W / 999)``."""
ACTIONS = ("bash", "wait", "terminate", "answer")
STATUSES = ("success", "failure")
# The parameters each action takes, required first; any other is an error.
_PARAMETERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "bash": (("command",), ("timeout",)),
    "wait": (("time",), ()),
    "terminate": (("status",), ()),
    "answer": (("text",), ()),
}
# pyautogui functions the prompt names, in the grid's terms where they take a position.
PYAUTOGUI_FUNCTIONS = (
    "click(x, y)",
    "doubleClick(x, y)",
    "tripleClick(x, y)",
    "rightClick(x, y)",
    "middleClick(x, y)",
    "moveTo(x, y)",
    "dragTo(x, y, duration=0.5)",
    "mouseDown(x, y)",
    "mouseUp(x, y)",
    "scroll(clicks, x, y)",
    "hscroll(clicks, x, y)",
    "write(text, interval=0.02)",
    "press(key)",
    "hotkey(key1, key2, ...)",
    "keyDown(key) / keyUp(key)",
)

_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_FUNCTION = re.compile(r"^\s*<function=([^>\s]+)>(.*?)(?:</function>\s*)?$", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=([^>\s]+)>(.*?)</parameter>", re.DOTALL)


def function_schema(name: str) -> dict[str, Any]:
    """The one function HybridCUA's model is given, as a JSON function object."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": (
                "Operate the Linux desktop. `bash` runs a shell command as the desktop user and returns "
                "its output; drive the screen from bash with pyautogui in a python3 heredoc, positions on "
                f"a 0-{GRID} grid. `wait` pauses, `terminate` ends the task, `answer` ends it with an answer."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": list(ACTIONS), "description": "What to do."},
                    "command": {"type": "string", "description": "The shell command (action=bash)."},
                    "timeout": {"type": "number", "description": "Seconds the command may run (default 30)."},
                    "time": {"type": "number", "description": "Seconds to wait (action=wait)."},
                    "status": {"type": "string", "enum": list(STATUSES), "description": "action=terminate."},
                    "text": {"type": "string", "description": "The answer (action=answer)."},
                },
                "required": ["action"],
            },
        },
    }


def hybridcua_prompt(name: str, screen: Size) -> str:
    """HybridCUA's system message, written for this stack: the function, the grid, the reply format."""
    width, height = screen
    functions = "\n".join(f"- pyautogui.{line}" for line in PYAUTOGUI_FUNCTIONS)
    return f"""You are a computer-use agent working on a Linux desktop ({width}x{height} screen) to finish \
the user's task. After each step you get a new screenshot and the output of your commands.

# Tools

You have one function:
{render_tools_block([function_schema(name)])}

## action=bash
Runs `command` in a shell as the desktop user and returns what it printed (`timeout`: seconds, \
default 30). Prefer a direct command when the shell can do the job: reading and writing files, \
converting documents, querying settings, starting programs.

For anything that needs the screen, write Python with pyautogui in a quoted heredoc:
python3 <<'PY'
import pyautogui
pyautogui.click(500, 300)
PY
Positions are on a 0-{GRID} grid: the screen is treated as 1000x1000 whatever its size, (0, 0) is \
the top-left corner and ({GRID}, {GRID}) the bottom-right. Aim at the centre of the element in the \
latest screenshot. One heredoc may do several GUI steps in a row. Useful functions:
{functions}

## Control actions
- action=wait, time=<seconds>: let the screen change.
- action=terminate, status=success|failure: the task is done, or cannot be done.
- action=answer, text=<answer>: end the task with the answer it asks for.

# Response format

Each turn, first write one line `Action: <one sentence on what you do next>`, then your calls, \
each in this form (every value is raw text, nothing is escaped):
<tool_call>
<function={name}>
<parameter=action>
bash
</parameter>
<parameter=command>
ls ~/Documents
</parameter>
</function>
</tool_call>
You may write several <tool_call> blocks; they run in order, one step each."""


def render_reply(action_line: str, calls: Sequence[Mapping[str, str]], name: str = GUI_TOOL_NAME) -> str:
    """A reply in HybridCUA's format: the ``Action:`` line, then one ``<tool_call>`` per call.

    The inverse of :meth:`HybridCUAAdapter.parse_text` (each value is written raw, one
    newline after its opening tag and before its closing one), for replies made from
    recorded steps (:mod:`hybrid_agent.rewrite`).

    Args:
        action_line: The one sentence after ``Action:`` (a single line).
        calls: Each call's parameters as raw strings, ``action`` first (``{"action": "bash",
            "command": "ls"}``).
        name: The function's name (``computer_use``, or ``cli`` for the A/B variant).

    Raises:
        ValueError: A value holds ``</parameter>`` or the action line a newline: no
            reply could carry it so that it parses back.
    """
    if "\n" in action_line:
        raise ValueError(f"The Action line must be one line, got {action_line!r}.")
    blocks = []
    for call in calls:
        parameters = []
        for key, value in call.items():
            if "</parameter>" in value:
                raise ValueError(f"Parameter {key!r} holds '</parameter>': it cannot be written raw.")
            parameters.append(f"<parameter={key}>\n{value}\n</parameter>\n")
        blocks.append(f"<tool_call>\n<function={name}>\n{''.join(parameters)}</function>\n</tool_call>")
    return "\n".join([f"Action: {action_line}", *blocks])


def _raw(value: str) -> str:
    """A parameter's text as written: one newline after the opening and before the closing tag dropped."""
    value = value.removeprefix("\n")
    return value.removesuffix("\n")


def _seconds(action: str, key: str, raw: str) -> float | ParseError:
    try:
        seconds = float(raw.strip())
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        return ParseError(
            ParseErrorCode.INVALID_ARGUMENTS,
            f"action={action}: {key} must be a number of seconds > 0, got {raw!r}.",
        )
    return seconds


def _env_call(action: str, parameters: dict[str, str]) -> Call | ParseError:
    """The env call one HybridCUA call becomes (``bash`` channel, or a ``computer_use`` control action)."""
    if action == "bash":
        command = parameters["command"]
        if not command.strip():
            return ParseError(ParseErrorCode.INVALID_ARGUMENTS, "action=bash needs a non-empty command.")
        arguments: dict[str, Any] = {"command": command, "pyautogui_grid": GRID}
        if "timeout" in parameters:
            timeout = _seconds(action, "timeout", parameters["timeout"])
            if isinstance(timeout, ParseError):
                return timeout
            arguments["timeout"] = timeout
        return Call("bash", arguments)
    if action == "wait":
        time = _seconds(action, "time", parameters["time"])
        return time if isinstance(time, ParseError) else Call(GUI_TOOL_NAME, {"action": "wait", "time": time})
    if action == "terminate":
        status = parameters["status"].strip()
        if status not in STATUSES:
            return ParseError(
                ParseErrorCode.INVALID_ARGUMENTS,
                f"action=terminate: status must be success or failure, got {status!r}.",
            )
        return Call(GUI_TOOL_NAME, {"action": "terminate", "status": status})
    return Call(GUI_TOOL_NAME, {"action": "answer", "text": parameters["text"].strip()})


def read_call(block: str, name: str) -> tuple[Call, Call] | ParseError:
    """One ``<tool_call>`` body -> (the call as written, raw strings; the env call)."""
    found = _FUNCTION.match(block)
    if found is None:
        return ParseError(
            ParseErrorCode.INVALID_SYNTAX,
            f"Write each call as <function={name}><parameter=action>...</parameter>...</function>.",
        )
    function, inner = found.groups()
    if function != name:
        return ParseError(ParseErrorCode.UNKNOWN_TOOL, f"The only function is {name!r}, got {function!r}.")
    parameters: dict[str, str] = {}
    for key, value in _PARAMETER.findall(inner):
        if key in parameters:
            return ParseError(ParseErrorCode.INVALID_ARGUMENTS, f"Parameter {key!r} is given twice.")
        parameters[key] = _raw(value)
    left = _PARAMETER.sub("", inner).strip()
    if left:
        return ParseError(
            ParseErrorCode.INVALID_SYNTAX,
            f"Unreadable text in the call: {left[:80]!r}. Write <parameter=key>value</parameter>.",
        )
    action = parameters.pop("action", "").strip()
    if action not in ACTIONS:
        return ParseError(
            ParseErrorCode.UNKNOWN_GUI_ACTION, f"action must be one of {', '.join(ACTIONS)}, got {action!r}."
        )
    required, optional = _PARAMETERS[action]
    missing = [key for key in required if key not in parameters]
    extra = sorted(set(parameters) - set(required) - set(optional))
    if missing or extra:
        wanted = ", ".join([*required, *(f"{key} (optional)" for key in optional)])
        return ParseError(
            ParseErrorCode.INVALID_ARGUMENTS,
            f"action={action} takes {wanted}; missing {missing}, unexpected {extra}.",
        )
    env_call = _env_call(action, parameters)
    if isinstance(env_call, ParseError):
        return env_call
    return Call(name, {"action": action, **parameters}), env_call


@register_adapter("hybridcua")
class HybridCUAAdapter(ModelAdapter):
    """HybridCUA's one function ``computer_use``: bash (pyautogui heredocs on 0..999) + control actions."""

    family = "HybridCUA"
    function_name: ClassVar[str] = GUI_TOOL_NAME
    # Positions live inside the commands (scaled in the desktop); the frame goes as it is.
    default_coordinates = CoordinateConfig(policy=CoordinatePolicy.ABSOLUTE_SCREEN)
    stop: ClassVar[tuple[str, ...]] = ()  # a reply may hold several <tool_call> blocks: no stop string

    def system_prompt(self, tools: Sequence[ToolSpec], screen: Size, config: PromptConfig) -> str:
        """HybridCUA's prompt: its one function, the grid and the reply format (no MCP tools)."""
        return hybridcua_prompt(self.function_name, screen)

    def functions(self, tools: Sequence[ToolSpec], screen: Size) -> list[dict[str, Any]]:
        """The one function, for transports that send tools apart."""
        return [function_schema(self.function_name)]

    def parse_text(self, text: str, tools: Sequence[ToolSpec]) -> ParseResult:
        """Every ``<tool_call>`` of the reply, in order: the first as the call, the rest in ``then``."""
        think, rest = split_think(text)
        blocks = _BLOCK.findall(rest)
        if not blocks:
            return ParseError(
                ParseErrorCode.NO_TOOL_CALL,
                f"End with at least one <tool_call><function={self.function_name}>.",
                think,
            )
        repairs = ["missing_close_tag"] if not rest.rstrip().endswith("</tool_call>") else []
        action_line = extract_action_line(rest)
        parsed: list[ParsedAction] = []
        for index, block in enumerate(blocks, start=1):
            read = read_call(block, self.function_name)
            if isinstance(read, ParseError):
                where = f"Call {index} of {len(blocks)}: " if len(blocks) > 1 else ""
                return ParseError(read.code, where + read.message, think)
            written, env_call = read
            parsed.append(ParsedAction(env_call, action_line, think, tuple(repairs), model_call=written))
        first, *then = parsed
        return ParsedAction(
            first.call, action_line, think, tuple(repairs), model_call=first.model_call, then=tuple(then)
        )


@register_adapter("hybridcua-cli")
class HybridCUACliAdapter(HybridCUAAdapter):
    """HybridCUA's A/B variant: the same function named ``cli``."""

    family = "HybridCUA (function named cli)"
    function_name: ClassVar[str] = "cli"


__all__ = [
    "GRID",
    "HybridCUAAdapter",
    "HybridCUACliAdapter",
    "function_schema",
    "hybridcua_prompt",
    "read_call",
    "render_reply",
]

"""GLM-4.5V's own GUI-agent replies: a plain-text explanation, then one boxed action call.

GLM-4.5V's GUI-agent guide (``zai-org/GLM-V``, ``examples/gui-agent/agent.md``, "Desktop
Environment") gives the PC action space and asks for "Plain text explanation with
action(param='...')" followed by a ``Memory:`` list. The model marks the call with its
box tokens::

    I need to dismiss the error dialog first, so I click its OK button.
    <|begin_of_box|>left_click(start_box='[586,446]', element_info='OK button')<|end_of_box|>
    Memory:
    []

Verbs and what they become (``computer_use`` actions; ``element_info`` only describes
the target and is not used):

=============================================  ===========================================
``left_click`` / ``right_click`` /             ``left_click`` / ``right_click`` /
``middle_click(start_box='[x,y]')``            ``middle_click``
``hover(start_box=...)``                       ``mouse_move``
``left_double_click(start_box=...)``           ``double_click``
``left_drag(start_box=..., end_box=...)``      ``left_click_drag`` (start -> end)
``key(keys='ctrl+c')``                         ``key``, keys split on ``+``
``type(content='...')``                        ``type`` at the focus
``scroll(start_box=..., direction='down',      ``scroll`` by ``step`` wheel notches (default 5),
step=5)``                                      ``up`` or ``down`` only (its schema's enum)
``WAIT()``                                     ``wait`` 5 s
``DONE()`` / ``FAIL()``                        ``terminate`` success / failure
=============================================  ===========================================

Coordinates are thousandths of the screenshot's width and height (0-999: "normalized by
the image width ... and scaled by 1000", GLM-V's README), the ``[0, 1000]`` relative grid
of :mod:`hybrid_agent.coords`: ``[503,271]`` on 1920x1080 is (966, 293). A four-number
box is read as its centre. The box tokens may be missing (a server that drops special
tokens); then the one line that is a call, optionally after ``Action:``, is read. A text
whose quotes break the call (``type(content='It's done')``) is read as meant (repair
``unescaped_quotes``, :func:`~hybrid_agent.adapters.calls.content_call`).
"""

from __future__ import annotations

import re
from typing import Any

from hybrid_agent.adapters.calls import (
    NOTCH_PIXELS,
    CodeCall,
    gui_action,
    parse_text_call,
    point_of,
    split_keys,
    with_think,
)
from hybrid_agent.parse import ParseError, ParseErrorCode, ParseResult

WAIT_S = 5.0  # the action space's "Wait for 5 seconds"
DEFAULT_STEPS = 5  # scroll's documented default step count

_BOXED = re.compile(r"<\|begin_of_box\|>(.*?)<\|end_of_box\|>", re.DOTALL)
_BOX_TOKENS = re.compile(r"<\|begin_of_box\|>|<\|end_of_box\|>")
_CALL = re.compile(r"^[A-Za-z_]\w*\s*\(")  # a boxed span that opens a call (closed or not)
_ACTION_PREFIX = re.compile(r"Action:[ \t]*$")
_CALL_LINE = re.compile(r"^[ \t]*(?:Action:[ \t]*)?([A-Za-z_]\w*\s*\(.*\))[ \t]*$", re.MULTILINE)

_POINTED = {
    "left_click": "left_click",
    "right_click": "right_click",
    "middle_click": "middle_click",
    "hover": "mouse_move",
    "left_double_click": "double_click",
}
_ENDS = {"DONE": "success", "FAIL": "failure"}
VERBS = (*_POINTED, "left_drag", "key", "type", "scroll", "WAIT", *_ENDS)


def _point(call: CodeCall, key: str) -> list[float] | ParseError:
    if key not in call.kwargs:
        return ParseError(ParseErrorCode.MISSING_ARGUMENTS, f"{call.name} needs {key}='[x,y]'.")
    return point_of(call.kwargs[key], f"{call.name}'s {key}")


def _scroll(call: CodeCall) -> dict[str, Any] | ParseError:
    direction = call.kwargs.get("direction")
    if direction not in ("up", "down"):
        return ParseError(
            ParseErrorCode.INVALID_ARGUMENTS, f"scroll needs direction='up' or 'down', got {direction!r}."
        )
    steps = call.kwargs.get("step", DEFAULT_STEPS)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        return ParseError(ParseErrorCode.INVALID_ARGUMENTS, f"step must be an integer >= 1, got {steps!r}.")
    arguments: dict[str, Any] = {
        "action": "scroll",
        "pixels": (1 if direction == "up" else -1) * steps * NOTCH_PIXELS,
    }
    if "start_box" in call.kwargs:
        point = _point(call, "start_box")
        if isinstance(point, ParseError):
            return point
        arguments["coordinate"] = point
    return arguments


def to_arguments(call: CodeCall) -> dict[str, Any] | ParseError:
    """The ``computer_use`` arguments of one GLM-4.5V PC action (model space)."""
    name = call.name
    if name in _POINTED:
        point = _point(call, "start_box")
        return point if isinstance(point, ParseError) else {"action": _POINTED[name], "coordinate": point}
    if name == "left_drag":
        start = _point(call, "start_box")
        if isinstance(start, ParseError):
            return start
        end = _point(call, "end_box")
        if isinstance(end, ParseError):
            return end
        return {"action": "left_click_drag", "start_coordinate": start, "coordinate": end}
    if name == "key":
        keys = split_keys(call.kwargs.get("keys", call.kwargs.get("key", "")))
        return keys if isinstance(keys, ParseError) else {"action": "key", "keys": keys}
    if name == "type":
        content = call.kwargs.get("content")
        if not isinstance(content, str):
            return ParseError(ParseErrorCode.MISSING_ARGUMENTS, "type needs content='...'.")
        return {"action": "type", "text": content}
    if name == "scroll":
        return _scroll(call)
    if name == "WAIT":
        return {"action": "wait", "time": WAIT_S}
    if name in _ENDS:
        return {"action": "terminate", "status": _ENDS[name]}
    return ParseError(ParseErrorCode.UNKNOWN_GUI_ACTION, f"No action {name!r}. Valid: {', '.join(VERBS)}.")


def action_source(rest: str) -> str | ParseError:
    """The one action call of a reply: the boxed call, else the one line that is a call."""
    boxed = [span.strip() for span in _BOXED.findall(rest) if _CALL.match(span.strip())]
    if not boxed:
        boxed = [line.strip() for line in _CALL_LINE.findall(_BOX_TOKENS.sub("", rest))]
    if len(boxed) == 1:
        return boxed[0]
    if boxed:
        return ParseError(
            ParseErrorCode.MULTIPLE_TOOL_CALLS, f"Give exactly one action per step, got {len(boxed)}."
        )
    return ParseError(
        ParseErrorCode.NO_TOOL_CALL,
        "End with one action such as <|begin_of_box|>left_click(start_box='[x,y]')<|end_of_box|>, "
        "or one <tool_call>...</tool_call> block.",
    )


def parse_gui_reply(rest: str, think: str | None) -> ParseResult:
    """Reads a GLM-4.5V GUI-agent reply (reasoning already split off) into a ``computer_use`` call."""
    source = action_source(rest)
    if isinstance(source, ParseError):
        return with_think(source, think)
    repairs: list[str] = []
    call = parse_text_call(source, repairs)
    if isinstance(call, ParseError):
        return with_think(call, think)
    arguments = to_arguments(call)
    if isinstance(arguments, ParseError):
        return with_think(arguments, think)
    head = _BOX_TOKENS.sub("", rest).split(source, 1)[0]
    explanation = _ACTION_PREFIX.sub("", head).strip()  # GLM's "plain text explanation"
    return gui_action(arguments, think or explanation or None, source.splitlines()[0], repairs)

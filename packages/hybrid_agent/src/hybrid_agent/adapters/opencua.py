"""OpenCUA: ``## Thought`` / ``## Action`` / ``## Code`` with one pyautogui statement in a python block.

The code is never run. The env has no route that executes model code: its OSWorld
guest backend *generates* pyautogui from ``computer_use`` actions
(``osworld_mcp_env.backends.pyautogui_code``), so the route for OpenCUA is the inverse:
each statement is read with :mod:`ast` (literal arguments only) and becomes the
``computer_use`` action it names, which every backend executes (the guest backend as
pyautogui again). Supported statements:

==============================================  =====================================
``pyautogui.click(x, y[, clicks=n, button=b])``  ``left_click`` / ``double_click`` /
                                                ``triple_click`` / ``right_click`` / ``middle_click``
``pyautogui.doubleClick`` / ``rightClick`` /     the click of that name
``middleClick`` / ``tripleClick``
``computer.triple_click(x=, y=)``               ``triple_click`` (the function OpenCUA's prompt
                                                advertises; ``computer.tripleClick`` too)
``pyautogui.moveTo(x, y)``                       ``mouse_move``
``pyautogui.dragTo(x, y)``                       ``left_click_drag`` from the pointer
``pyautogui.moveTo(x1, y1)`` then                one ``left_click_drag`` from (x1, y1)
``pyautogui.dragTo(x2, y2)`` (one block)         to (x2, y2): the usual drag
``pyautogui.scroll(n[, x, y])`` / ``hscroll``    ``scroll`` / ``hscroll``, n notches
``pyautogui.write`` / ``typewrite(message)``     ``type``
``pyautogui.press(key or [keys])`` / ``hotkey``  ``key``
``computer.wait()``                             ``wait`` 5 s
``computer.terminate(status=..., answer=...)``  ``terminate``; with an answer: ``answer``
==============================================  =====================================

OpenCUA-7B/32B answer in pixels of the image Qwen2.5-VL's ``smart_resize`` makes
(factor 28, 3,136..12,845,056 pixels). The env takes one action per step, so a block
of more than one statement is ``multiple_tool_calls``, except the drag pair above.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from hybrid_agent.adapters.base import ModelAdapter, register_adapter
from hybrid_agent.adapters.calls import (
    NOTCH_PIXELS,
    CodeCall,
    gui_action,
    parse_code_calls,
    point_of,
    split_keys,
    with_think,
)
from hybrid_agent.coords import QWEN25_MAX_PIXELS, QWEN25_MIN_PIXELS, CoordinateConfig, CoordinatePolicy, Size
from hybrid_agent.parse import ParseError, ParseErrorCode, ParseResult, split_think
from hybrid_agent.prompt import PromptConfig
from hybrid_agent.toolset import ToolSpec

_CODE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)
_SECTION = re.compile(r"^##[ \t]*(Thought|Action):[ \t]*(.*?)(?=^##|\Z)", re.MULTILINE | re.DOTALL)
WAIT_S = 5.0

_CLICK_NAMES = {
    "click": None,
    "leftClick": "left_click",
    "doubleClick": "double_click",
    "tripleClick": "triple_click",
    "triple_click": "triple_click",
    "rightClick": "right_click",
    "middleClick": "middle_click",
}
_BY_COUNT = {1: "left_click", 2: "double_click", 3: "triple_click"}
_BY_BUTTON = {"right": "right_click", "middle": "middle_click"}


def _arg(call: CodeCall, name: str, index: int) -> Any:
    if name in call.kwargs:
        return call.kwargs[name]
    return call.args[index] if len(call.args) > index else None


def _xy(call: CodeCall, offset: int = 0) -> list[float] | ParseError | None:
    x, y = _arg(call, "x", offset), _arg(call, "y", offset + 1)
    if x is None and y is None:
        return None
    return point_of([x, y], f"{call.name}'s x, y")


def _click(call: CodeCall, short: str) -> dict[str, Any] | ParseError:
    point = _xy(call)
    if point is None:
        return ParseError(ParseErrorCode.MISSING_ARGUMENTS, f"{call.name} needs x and y.")
    if isinstance(point, ParseError):
        return point
    action = _CLICK_NAMES[short]
    if action is None:  # pyautogui.click: clicks= and button= pick the action
        button, clicks = call.kwargs.get("button", "left"), call.kwargs.get("clicks", 1)
        action = _BY_BUTTON.get(button) if button != "left" else _BY_COUNT.get(clicks)
        if action is None or (button != "left" and clicks != 1):
            return ParseError(
                ParseErrorCode.INVALID_ARGUMENTS,
                f"click(button={button!r}, clicks={clicks!r}) has no action here.",
            )
    return {"action": action, "coordinate": point}


def _scroll(call: CodeCall, action: str) -> dict[str, Any] | ParseError:
    clicks = _arg(call, "clicks", 0)
    if isinstance(clicks, bool) or not isinstance(clicks, int | float):
        return ParseError(ParseErrorCode.INVALID_ARGUMENTS, f"{call.name} needs a number of clicks.")
    arguments: dict[str, Any] = {"action": action, "pixels": round(clicks * NOTCH_PIXELS)}
    point = _xy(call, offset=1)
    if isinstance(point, ParseError):
        return point
    if point is not None:
        arguments["coordinate"] = point
    return arguments


def _keys(call: CodeCall) -> dict[str, Any] | ParseError:
    value: Any = call.kwargs.get("keys", list(call.args) if len(call.args) != 1 else call.args[0])
    keys = split_keys(
        value if isinstance(value, list | tuple) else [value] if isinstance(value, str) else value
    )
    return keys if isinstance(keys, ParseError) else {"action": "key", "keys": keys}


def to_arguments(call: CodeCall) -> dict[str, Any] | ParseError:
    """The ``computer_use`` arguments of one pyautogui / ``computer.*`` statement (model space)."""
    module, _, short = call.name.rpartition(".")
    if module not in ("pyautogui", "computer"):
        return ParseError(
            ParseErrorCode.UNKNOWN_GUI_ACTION, f"Only pyautogui.* and computer.* calls, got {call.name}."
        )
    if short in _CLICK_NAMES:
        return _click(call, short)
    if short == "moveTo":
        point = _xy(call)
        if point is None:
            return ParseError(ParseErrorCode.MISSING_ARGUMENTS, "moveTo needs x and y.")
        return point if isinstance(point, ParseError) else {"action": "mouse_move", "coordinate": point}
    if short == "dragTo":
        point = _xy(call)
        if point is None:
            return ParseError(ParseErrorCode.MISSING_ARGUMENTS, "dragTo needs x and y.")
        return point if isinstance(point, ParseError) else {"action": "left_click_drag", "coordinate": point}
    if short in ("scroll", "vscroll"):
        return _scroll(call, "scroll")
    if short == "hscroll":
        return _scroll(call, "hscroll")
    if short in ("write", "typewrite"):
        text = _arg(call, "message", 0)
        if not isinstance(text, str):
            return ParseError(ParseErrorCode.MISSING_ARGUMENTS, f"{short} needs message='...'.")
        return {"action": "type", "text": text}
    if short in ("press", "hotkey"):
        return _keys(call)
    if short == "wait":
        return {"action": "wait", "time": WAIT_S}
    if short == "terminate":
        answer = call.kwargs.get("answer")
        if isinstance(answer, str) and answer.strip():
            return {"action": "answer", "text": answer}
        return {"action": "terminate", "status": call.kwargs.get("status", "success")}
    return ParseError(ParseErrorCode.UNKNOWN_GUI_ACTION, f"{call.name} has no desktop action here.")


def _block_arguments(calls: Sequence[CodeCall]) -> dict[str, Any] | ParseError:
    """One block's ``computer_use`` arguments: one statement, or ``moveTo`` + ``dragTo`` as one drag."""
    shorts = [call.name.rpartition(".")[2] for call in calls]
    if shorts == ["moveTo", "dragTo"]:
        start = to_arguments(calls[0])
        if isinstance(start, ParseError):
            return start
        end = to_arguments(calls[1])
        if isinstance(end, ParseError):
            return end
        return {**end, "start_coordinate": start["coordinate"]}
    if len(calls) != 1:
        code = ParseErrorCode.NO_TOOL_CALL if not calls else ParseErrorCode.MULTIPLE_TOOL_CALLS
        return ParseError(
            code,
            f"Give exactly one action per step, got {len(calls)} statements "
            "(a drag may be pyautogui.moveTo then pyautogui.dragTo).",
        )
    return to_arguments(calls[0])


@register_adapter("opencua")
class OpenCUAAdapter(ModelAdapter):
    """OpenCUA-7B/32B: one pyautogui statement, pixels of the Qwen2.5-VL-resized screenshot."""

    family = "OpenCUA-7B / OpenCUA-32B"
    default_coordinates = CoordinateConfig(
        policy=CoordinatePolicy.ABSOLUTE_RESIZED,
        factor=28,
        min_pixels=QWEN25_MIN_PIXELS,
        max_pixels=QWEN25_MAX_PIXELS,
    )

    def system_prompt(self, tools: Sequence[ToolSpec], screen: Size, config: PromptConfig) -> str:
        """OpenCUA's answer layout and the statements accepted, with the screenshot's size."""
        width, height = self.space(screen)
        return (
            f"{config.preamble}\n\n"
            "Answer in three sections:\n## Thought: your reasoning\n"
            "## Action: what you do next, in one sentence\n"
            "## Code:\n```python\n<one pyautogui statement>\n```\n\n"
            f"Coordinates are pixels of the {width}x{height} screenshot. "
            "Statements: pyautogui.click(x=, y=), pyautogui.doubleClick, pyautogui.rightClick, "
            "pyautogui.moveTo, pyautogui.dragTo (a drag: moveTo then dragTo), "
            "pyautogui.scroll(clicks), pyautogui.hscroll(clicks), "
            "pyautogui.write(message=), pyautogui.press(key), pyautogui.hotkey(key, key), "
            "computer.triple_click(x=, y=), computer.wait(), "
            "computer.terminate(status='success' or 'failure', answer=)."
        )

    def parse_text(self, text: str, tools: Sequence[ToolSpec]) -> ParseResult:
        """Reads the last python block's statement (or drag pair); ``## Thought`` is the reasoning."""
        think, rest = split_think(text)
        sections = {name: body.strip() for name, body in _SECTION.findall(rest)}
        think = sections.get("Thought") or think
        blocks = _CODE.findall(rest)
        if not blocks:
            return ParseError(
                ParseErrorCode.NO_TOOL_CALL, "End with ## Code: and one ```python``` block.", think
            )
        calls = parse_code_calls(blocks[-1])
        if isinstance(calls, ParseError):
            return with_think(calls, think)
        arguments = _block_arguments(calls)
        if isinstance(arguments, ParseError):
            return with_think(arguments, think)
        action_line = sections.get("Action", "").splitlines()[0] if sections.get("Action") else None
        return gui_action(arguments, think, action_line)

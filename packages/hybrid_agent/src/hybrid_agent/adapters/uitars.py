r"""UI-TARS: ``Thought: ...`` then ``Action: verb(arg='...')``, one action per reply.

Points are written three ways, all read: ``start_box='(x,y)'`` (UI-TARS-1.5),
``start_box='<|box_start|>(x,y)<|box_end|>'`` (the same with its box tokens) and
``point='<point>x y</point>'`` (UI-TARS-2 / the Doubao API); a four-number box is
read as its centre. Verbs and what they become (``computer_use`` actions):

=====================================  =========================================
``click`` / ``left_single``            ``left_click``
``left_double``                        ``double_click``
``left_triple``                        ``triple_click``
``right_single``                       ``right_click``
``hover`` / ``move_to``                ``mouse_move``
``drag`` / ``select``                  ``left_click_drag`` (start -> end)
``hotkey(key='ctrl c')`` / ``press``   ``key`` with the keys split on spaces
``type(content='...')``                ``type`` (a final newline submits; repairs below)
``scroll(direction=...)``              ``scroll`` / ``hscroll``, 5 notches
``wait()``                             ``wait`` 5 s (the prompt's "sleep for 5s")
``finished(content='')``               ``terminate(success)``; with content: ``answer``
``call_user()``                        ``terminate(failure)`` (the task needs a human)
=====================================  =========================================

Text is read as UI-TARS's own parser reads it: ``type(content='It's done')`` types
``It's done`` (the quotes the model left unescaped are escaped, repair
``unescaped_quotes``; the same for ``finished(content=...)``), and a content ending in
the two characters ``\n`` ends with a newline, which the env types as Enter (UI-TARS's
executor presses Enter after such text; repair ``literal_newline``).

UI-TARS-1.5 answers in pixels of its smart-resized screenshot (factor 28, 78,400 to
12,845,056 pixels, its README's coordinate guide); UI-TARS-2 on the relative
``[0, 1000]`` grid. The family drives the GUI only: no MCP tools are offered.
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
    parse_text_call,
    point_of,
    split_keys,
    with_think,
)
from hybrid_agent.coords import QWEN25_MAX_PIXELS, CoordinateConfig, CoordinatePolicy, Size
from hybrid_agent.parse import ParseError, ParseErrorCode, ParseResult, split_think
from hybrid_agent.prompt import PromptConfig
from hybrid_agent.toolset import ToolSpec

_ACTION = re.compile(r"^[ \t]*Action:[ \t]*", re.MULTILINE)
_THOUGHT = re.compile(r"^[ \t]*Thought:[ \t]*(.*?)(?=^[ \t]*Action:)", re.MULTILINE | re.DOTALL)
SCROLL_NOTCHES = 5  # what UI-TARS's own pyautogui conversion scrolls per scroll action
WAIT_S = 5.0

_CLICKS = {
    "click": "left_click",
    "left_single": "left_click",
    "left_double": "double_click",
    "left_triple": "triple_click",
    "right_single": "right_click",
    "hover": "mouse_move",
    "move_to": "mouse_move",
}
_START_KEYS = ("start_box", "point", "start_point")
_END_KEYS = ("end_box", "end_point")


def _first(kwargs: dict[str, Any], keys: Sequence[str]) -> Any:
    return next((kwargs[k] for k in keys if k in kwargs), None)


def _point(call: CodeCall, keys: Sequence[str]) -> list[float] | ParseError:
    value = _first(call.kwargs, keys)
    if value is None and call.args:
        value = call.args[0]
    if value is None:
        return ParseError(ParseErrorCode.MISSING_ARGUMENTS, f"{call.name} needs {keys[0]}='(x,y)'.")
    return point_of(value, f"{call.name}'s {keys[0]}")


def _scroll(call: CodeCall) -> dict[str, Any] | ParseError:
    direction = str(call.kwargs.get("direction", "")).strip().lower()
    signs = {"up": ("scroll", 1), "down": ("scroll", -1), "right": ("hscroll", 1), "left": ("hscroll", -1)}
    if direction not in signs:
        return ParseError(
            ParseErrorCode.INVALID_ARGUMENTS,
            f"scroll needs direction='up|down|left|right', got {direction!r}.",
        )
    action, sign = signs[direction]
    arguments: dict[str, Any] = {"action": action, "pixels": sign * SCROLL_NOTCHES * NOTCH_PIXELS}
    if _first(call.kwargs, _START_KEYS) is not None:
        point = _point(call, _START_KEYS)
        if isinstance(point, ParseError):
            return point
        arguments["coordinate"] = point
    return arguments


def _typed_text(content: str, repairs: list[str]) -> str:
    # UI-TARS's convention: text ending in "\n" is submitted, also when written as the two characters.
    if content.endswith("\\n"):
        repairs.append("literal_newline")
        return content[:-2] + "\n"
    return content


def to_arguments(call: CodeCall, repairs: list[str]) -> dict[str, Any] | ParseError:
    """The ``computer_use`` arguments of one UI-TARS action (model space); repairs go to ``repairs``."""
    name = call.name
    if name in _CLICKS:
        point = _point(call, _START_KEYS)
        return point if isinstance(point, ParseError) else {"action": _CLICKS[name], "coordinate": point}
    if name in ("drag", "select"):
        start, end = _point(call, _START_KEYS), _point(call, _END_KEYS)
        for part in (start, end):
            if isinstance(part, ParseError):
                return part
        return {"action": "left_click_drag", "start_coordinate": start, "coordinate": end}
    if name in ("hotkey", "press"):
        keys = split_keys(
            call.kwargs.get("key", call.kwargs.get("hotkey", call.args[0] if call.args else ""))
        )
        return keys if isinstance(keys, ParseError) else {"action": "key", "keys": keys}
    if name == "type":
        content = call.kwargs.get("content", call.args[0] if call.args else None)
        if not isinstance(content, str):
            return ParseError(ParseErrorCode.MISSING_ARGUMENTS, "type needs content='...'.")
        return {"action": "type", "text": _typed_text(content, repairs)}
    if name == "scroll":
        return _scroll(call)
    if name == "wait":
        return {"action": "wait", "time": WAIT_S}
    if name == "finished":
        content = str(call.kwargs.get("content", "")).strip()
        return (
            {"action": "answer", "text": content} if content else {"action": "terminate", "status": "success"}
        )
    if name == "call_user":
        return {"action": "terminate", "status": "failure"}
    return ParseError(
        ParseErrorCode.UNKNOWN_GUI_ACTION,
        f"No action {name!r}. Valid: {', '.join([*_CLICKS, 'drag', 'hotkey', 'type', 'scroll', 'wait'])}, "
        "finished, call_user.",
    )


_ACTION_SPACE = """click(start_box='<|box_start|>(x1,y1)<|box_end|>')
left_double(start_box='<|box_start|>(x1,y1)<|box_end|>')
right_single(start_box='<|box_start|>(x1,y1)<|box_end|>')
drag(start_box='<|box_start|>(x1,y1)<|box_end|>', end_box='<|box_start|>(x3,y3)<|box_end|>')
hotkey(key='')
type(content='') # end the content with \\n to submit it
scroll(start_box='<|box_start|>(x1,y1)<|box_end|>', direction='down or up or right or left')
wait() # waits 5 s, then a new screenshot
finished(content='') # the task is done; put an answer in content if one is asked for
call_user() # the task cannot be done without a human"""


@register_adapter("ui-tars-1.5")
class UITarsAdapter(ModelAdapter):
    """UI-TARS-1.5: ``Action: click(start_box='(x,y)')`` in pixels of its smart-resized screenshot."""

    family = "UI-TARS-1.5"
    default_coordinates = CoordinateConfig(
        policy=CoordinatePolicy.ABSOLUTE_RESIZED,
        factor=28,
        min_pixels=100 * 28 * 28,
        max_pixels=QWEN25_MAX_PIXELS,
    )

    def system_prompt(self, tools: Sequence[ToolSpec], screen: Size, config: PromptConfig) -> str:
        """UI-TARS's computer-use prompt layout: output format, action space, the screen's size."""
        width, height = self.space(screen)
        return (
            f"{config.preamble} You see a screenshot each step and act with one action.\n\n"
            "## Output Format\nThought: ...\nAction: ...\n\n"
            f"## Action Space\n{_ACTION_SPACE}\n\n"
            f"## Note\n- Coordinates are pixels of the {width}x{height} screenshot.\n"
            "- Summarise your next action and its target element in one sentence in Thought."
        )

    def parse_text(self, text: str, tools: Sequence[ToolSpec]) -> ParseResult:
        """Reads ``Thought:`` and the one ``Action:`` call."""
        think, rest = split_think(text)
        thought = _THOUGHT.search(rest)
        think = thought.group(1).strip() if thought else think
        found = _ACTION.search(rest)
        if found is None:
            return ParseError(ParseErrorCode.NO_TOOL_CALL, "End with one line 'Action: verb(...)'.", think)
        source = rest[found.end() :].strip()
        repairs: list[str] = []
        call = parse_text_call(source, repairs)
        if isinstance(call, ParseError):
            return with_think(call, think)
        arguments = to_arguments(call, repairs)
        if isinstance(arguments, ParseError):
            return with_think(arguments, think)
        return gui_action(arguments, think, source.splitlines()[0] if source else None, repairs)


@register_adapter("ui-tars-2")
class UITars2Adapter(UITarsAdapter):
    """UI-TARS-2: the same actions, written ``point='<point>x y</point>'`` on the ``[0, 1000]`` grid."""

    family = "UI-TARS-2"
    default_coordinates = CoordinateConfig(policy=CoordinatePolicy.RELATIVE_GRID, grid=1000)

    def system_prompt(self, tools: Sequence[ToolSpec], screen: Size, config: PromptConfig) -> str:
        """UI-TARS-2's layout: ``<point>x y</point>`` points on a 1000x1000 grid."""
        base = super().system_prompt(tools, screen, config)
        return re.sub(r"<\|box_start\|>\((x\d),(y\d)\)<\|box_end\|>", r"<point>\1 \2</point>", base)

"""Pieces every text-format family needs: reading a call written as code, points and boxes, GUI calls.

Several families write their action as a Python-like call (UI-TARS ``click(start_box='(1,2)')``,
CogAgent ``CLICK(box=[[1,2,3,4]])``, OpenCUA ``pyautogui.click(x=1, y=2)``). Such text is
read with :mod:`ast` and only literal arguments are accepted (:func:`ast.literal_eval`):
nothing the model writes is ever executed, and a name, an expression or a statement
that is not a literal call is an ``invalid_syntax`` error value. A family whose calls
nest calls as data (CogAgent's ``GESTURE(actions=[KEY_DOWN(key='Lcontrol'), ...])``)
asks for nested calls explicitly; they come back as :class:`CodeCall` values, still
never evaluated.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from osworld_mcp_env.actions import COMPUTER_USE_ACTIONS

from hybrid_agent.parse import ParsedAction, ParseError, ParseErrorCode, ParseResult, validate_gui
from hybrid_agent.toolset import ToolSpec
from hybrid_agent.trajectory import GUI_TOOL_NAME, Call

# One wheel notch of the env's input device (osworld_mcp_env.guest.xinput.SCROLL_PIXELS_PER_NOTCH):
# families that scroll by notches ("clicks") are converted to the env's pixels with it.
NOTCH_PIXELS = 50

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass(frozen=True)
class CodeCall:
    """A call written as code: ``name(*args, **kwargs)`` with literal arguments.

    Attributes:
        name: The dotted callee (``click``, ``pyautogui.click``, ``computer.terminate``).
        args: The positional arguments.
        kwargs: The keyword arguments.
    """

    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


class _NotLiteral(Exception):
    """An argument that is neither a literal nor (where allowed) a literal call."""


def _value(node: ast.expr, nested: bool, in_list: bool = False) -> Any:
    # A literal, or with ``nested`` a list whose items may be calls with literal arguments (CodeCalls).
    if nested and in_list and isinstance(node, ast.Call):
        call = _code_call(node, "", nested)
        if isinstance(call, ParseError):
            raise _NotLiteral
        return call
    if nested and isinstance(node, ast.List | ast.Tuple):
        items = [_value(item, nested, in_list=True) for item in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError) as exc:
        raise _NotLiteral from exc


def _code_call(node: ast.expr, source: str, nested: bool = False) -> CodeCall | ParseError:
    if not isinstance(node, ast.Call) or _dotted(node.func) is None:
        return ParseError(
            ParseErrorCode.INVALID_SYNTAX, f"Expected one call such as click(...), got {source!r}."
        )
    try:
        args = tuple(_value(arg, nested) for arg in node.args)
        kwargs = {kw.arg: _value(kw.value, nested) for kw in node.keywords if kw.arg is not None}
    except _NotLiteral:
        return ParseError(ParseErrorCode.INVALID_SYNTAX, f"The arguments of {source!r} must be literals.")
    if len(kwargs) != len(node.keywords):
        return ParseError(ParseErrorCode.INVALID_SYNTAX, f"{source!r} unpacks arguments (**); name each one.")
    return CodeCall(str(_dotted(node.func)), args, kwargs)


def parse_code_calls(source: str, nested: bool = False) -> list[CodeCall] | ParseError:
    """Reads statements that are each one call with literal arguments (``a(1); b(x='y')``).

    Args:
        source: The code as the model wrote it.
        nested: Also accept calls with literal arguments as items of a list argument
            (returned as :class:`CodeCall`), for families that write a list of actions
            inside an action.

    Returns:
        The calls in order, or ``invalid_syntax`` for anything else (assignments, loops,
        names as arguments, text that is not Python).
    """
    try:
        tree = ast.parse(source.strip())
    except SyntaxError as exc:
        return ParseError(ParseErrorCode.INVALID_SYNTAX, f"The action is not valid call syntax: {exc.msg}.")
    calls: list[CodeCall] = []
    for statement in tree.body:
        if not isinstance(statement, ast.Expr):
            kind = type(statement).__name__
            return ParseError(
                ParseErrorCode.INVALID_SYNTAX, f"Only calls are accepted, got a {kind} statement."
            )
        segment = ast.get_source_segment(source.strip(), statement) or ""
        call = _code_call(statement.value, segment, nested)
        if isinstance(call, ParseError):
            return call
        calls.append(call)
    return calls


def parse_code_call(source: str, nested: bool = False) -> CodeCall | ParseError:
    """Reads exactly one call (see :func:`parse_code_calls`); none or several is an error value."""
    calls = parse_code_calls(source, nested)
    if isinstance(calls, ParseError):
        return calls
    if len(calls) != 1:
        code = ParseErrorCode.NO_TOOL_CALL if not calls else ParseErrorCode.MULTIPLE_TOOL_CALLS
        return ParseError(code, f"Give exactly one action per step, got {len(calls)}.")
    return calls[0]


_CONTENT_CALL = re.compile(r"^([A-Za-z_]\w*)\(\s*content\s*=\s*(['\"])(.*)\2\s*\)$", re.DOTALL)


def content_call(source: str) -> CodeCall | None:
    r"""A one-argument ``verb(content='...')`` call whose text breaks its own quotes, read as meant.

    ``type(content='It's done')`` is not Python: the apostrophe ends the string. The
    families that write text this way (UI-TARS, GLM-4.5V) mean everything between
    ``content='`` and the final ``')``, which is what UI-TARS's own action parser types
    (it escapes the unescaped quotes, and a line break inside the text, then reads the
    literal). The same is done here, for a source that is exactly one such call; escapes
    the model did write (``\n``, ``\'``) keep their meaning.

    Returns:
        The call with its ``content``, or ``None`` when the source is not one such call
        (a second call or a second argument after the text stays unread, so nothing is
        merged into the text).
    """
    found = _CONTENT_CALL.match(source.strip())
    if found is None:
        return None
    name, quote, body = found.groups()
    if re.search(rf"{quote}\s*\)\s*\n", body):  # "...')\nnext(...": two calls, not one text
        return None
    if re.search(rf"{quote}\s*,\s*\w+\s*=", body):  # "...', other=...": more arguments, not one text
        return None
    escaped = re.sub(rf"(?<!\\){quote}", lambda _: "\\" + quote, body)
    escaped = escaped.replace("\r", "\\r").replace("\n", "\\n")
    try:
        text = ast.literal_eval(quote + escaped + quote)
    except (ValueError, SyntaxError):
        return None
    return CodeCall(name, (), {"content": text})


def parse_text_call(source: str, repairs: list[str]) -> CodeCall | ParseError:
    """Exactly one call, a ``verb(content='...')`` that breaks its quotes read by :func:`content_call`.

    The repair is noted in ``repairs`` as ``unescaped_quotes``; any other unreadable
    source keeps :func:`parse_code_call`'s error.
    """
    call = parse_code_call(source)
    if isinstance(call, ParseError) and call.code == ParseErrorCode.INVALID_SYNTAX:
        repaired = content_call(source)
        if repaired is not None:
            repairs.append("unescaped_quotes")
            return repaired
    return call


def numbers(value: Any) -> list[float] | None:
    """The numbers of a point or box in any family's spelling, or ``None`` when there are none.

    Accepts ``(x,y)``, ``'<point>x y</point>'``, ``'<|box_start|>(x,y)<|box_end|>'``,
    ``[[x1,y1,x2,y2]]``, ``[x, y]`` and numbers; booleans are not numbers.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, str):
        found = _NUMBER.findall(value)
        return [float(n) for n in found] if found else None
    if isinstance(value, list | tuple):
        out: list[float] = []
        for item in value:
            inner = numbers(item)
            if inner is None:
                return None
            out.extend(inner)
        return out or None
    return None


def _tidy(value: float) -> float:
    # Whole numbers stay ints, so records read [966, 546] as the model wrote them.
    return int(value) if value.is_integer() else value


def point_of(value: Any, what: str) -> list[float] | ParseError:
    """``[x, y]`` from a point (2 numbers) or a box's centre (4 numbers: x1, y1, x2, y2)."""
    found = numbers(value)
    if found is not None and len(found) == 2:
        return [_tidy(v) for v in found]
    if found is not None and len(found) == 4:
        return [_tidy((found[0] + found[2]) / 2), _tidy((found[1] + found[3]) / 2)]
    return ParseError(
        ParseErrorCode.INVALID_ARGUMENTS,
        f"{what} must be a point (x, y) or a box (x1, y1, x2, y2), got {value!r}.",
    )


def split_keys(value: Any) -> list[str] | ParseError:
    """Key names from ``'ctrl c'``, ``'ctrl+c'``, ``['ctrl', 'c']``, lower-cased as the env spells them.

    A lone character keeps its case (``'A'`` types a capital); in a combination the
    modifiers decide, so ``'Ctrl Shift T'`` is ``['ctrl', 'shift', 't']``.
    """
    if isinstance(value, str):
        keys = [k for k in re.split(r"[\s+]+", value.strip()) if k]
    elif isinstance(value, list | tuple) and all(isinstance(k, str) for k in value):
        keys = [k.strip() for k in value if k.strip()]
    else:
        keys = []
    if not keys:
        return ParseError(
            ParseErrorCode.INVALID_ARGUMENTS, f"Keys must be names such as 'ctrl c', got {value!r}."
        )
    return keys if len(keys) == 1 and len(keys[0]) == 1 else [k.lower() for k in keys]


def gui_action(
    arguments: dict[str, Any], think: str | None, action_line: str | None, repairs: Sequence[str] = ()
) -> ParseResult:
    """A ``computer_use`` call in the model's space, checked against the env's action table."""
    error = validate_gui(arguments)
    if error is not None:
        return ParseError(error.code, error.message, think)
    return ParsedAction(Call(GUI_TOOL_NAME, arguments), action_line, think, tuple(repairs))


def with_think(error: ParseError, think: str | None) -> ParseError:
    """``error`` carrying the reply's reasoning (for the record)."""
    return ParseError(error.code, error.message, think)


def declared_type(function: str, key: str, tools: Sequence[ToolSpec]) -> str | None:
    """The JSON type the schema gives argument ``key`` of ``function`` (``None`` when it says none).

    ``computer_use`` arguments take their kind from the env's action table; an MCP tool's
    from its schema (qualified or bare name).
    """
    if function == GUI_TOOL_NAME:
        for spec in COMPUTER_USE_ACTIONS.values():
            kind = {**spec.required, **spec.optional}.get(key)
            if kind is not None:
                return "string" if kind in ("text", "status") else None
        return None
    for tool in tools:
        if function in (tool.qualified_name, tool.name):
            schema = tool.parameters.get("properties", {}).get(key, {})
            declared = schema.get("type") if isinstance(schema, dict) else None
            return declared if isinstance(declared, str) else None
    return None


def typed_value(function: str, key: str, raw: str, tools: Sequence[ToolSpec]) -> Any:
    """An argument written as text (XML-tagged formats) as the JSON value its schema expects.

    A string parameter keeps the text as written (``"5"`` stays a string); any other is
    read as JSON when it is JSON (``[500, 300]``, ``3``, ``true``) and kept as text if not,
    so the schema check reports the mismatch instead of the parser guessing.
    """
    text = raw.strip("\n")
    if declared_type(function, key, tools) == "string":
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text

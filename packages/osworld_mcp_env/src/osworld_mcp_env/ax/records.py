"""The record of one observed element, the operations a role supports, and the checks on a worker's answer.

The worker (:mod:`~osworld_mcp_env.ax.worker`) runs as the desktop user, whom the
stack treats as hostile, so the tool host reads everything it sends as untrusted
data: :func:`parse_records` accepts only the shape below, with every string,
list and number bounded, and rejects the whole answer otherwise.

Standard library only: the worker imports it inside the desktop.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

REF_PATTERN = re.compile(r"^e[1-9][0-9]{0,8}$")
"""A ref as the model writes it, without brackets: ``e17``."""
MAX_NAME = 200
MAX_TEXT = 200
MAX_RECORDS = 5000
MAX_STATES = 48
MAX_PATH = 64
MAX_CHILDREN = 2000


class Op(StrEnum):
    """An operation of ``ax.act`` on a ref."""

    PRESS = "press"
    CLICK = "click"
    FOCUS = "focus"
    SET_TEXT = "set_text"
    SET_VALUE = "set_value"
    SELECT = "select"
    TOGGLE = "toggle"
    SCROLL_INTO_VIEW = "scroll_into_view"
    KEY = "key"
    TYPE = "type"


class WaitKind(StrEnum):
    """What a wait step of ``ax.act`` holds for (it emits no input)."""

    WINDOW = "window"
    REF = "ref"
    TEXT = "text"
    QUERY = "query"
    STABLE = "stable"


class FailureCode(StrEnum):
    """Why ``ax.act`` stopped; the env's ``info["error"]["code"]``."""

    STALE_ELEMENT_REF = "stale_element_ref"
    AMBIGUOUS_TARGET = "ambiguous_target"
    UNSUPPORTED_OPERATION = "unsupported_operation"
    WAIT_TIMEOUT = "wait_timeout"
    WAIT_BUDGET_EXHAUSTED = "wait_budget_exhausted"


# Roles whose Value interface is a value the user sets (LibreOffice's push buttons carry one too:
# their pressed state, which set_value must not write).
VALUE_ROLES = frozenset({"slider", "spin button", "scroll bar", "dial"})
TOGGLE_ROLES = frozenset(
    {"toggle button", "check box", "radio button", "check menu item", "radio menu item", "switch"}
)
# Containers that only group: dropped from the compact view when unnamed and without operations.
WRAPPER_ROLES = frozenset(
    {
        "panel", "filler", "scroll pane", "viewport", "split pane", "root pane", "layered pane",
        "section", "unknown", "glass pane", "internal frame", "option pane", "grouping", "redundant object",
        "invalid", "form",
    }
)  # fmt: skip
WINDOW_ROLES = frozenset({"frame", "dialog", "alert", "window", "file chooser", "color chooser"})
# States worth showing the model; the records keep all of them.
SHOWN_STATES = ("focused", "checked", "pressed", "selected", "expanded", "editable")
EVIDENCE_STATES = frozenset(
    {
        "checked",
        "pressed",
        "selected",
        "focused",
        "expanded",
        "collapsed",
        "enabled",
        "sensitive",
        "indeterminate",
    }
)


@dataclass
class Record:
    """Everything acquired about one element when it was observed.

    Attributes:
        ref: Its public ref (``e17``), bound while walking, before any compaction.
        pid: The process id of its application (the bus connection's, not a name the app chose).
        start: That process's start time in clock ticks (a reused pid is another process).
        window: The ref of its top-level window (its own ref for a window).
        path: Child indices from the window down to it; a Calc cell ends with its ``row, col``.
        role: The AT-SPI role name.
        name: The accessible name.
        states: The AT-SPI state names, sorted.
        bounds: ``[x, y, width, height]`` in screen pixels.
        value: The Value interface's current value, when the role sets one.
        text: The head of its Text content.
        ops: The :class:`Op` values its interfaces support.
        parent: The parent's ref, None for a window.
        children: The refs of the children that were walked (showing ones).
        cell: A table cell's address (``B3``).
        table: A table's ``rows``, ``columns`` and visible range (``visible``, ``A1:X42``).
    """

    ref: str
    pid: int
    start: int
    window: str
    path: list[int]
    role: str
    name: str
    states: list[str]
    bounds: list[int]
    value: float | None = None
    text: str | None = None
    ops: list[str] = field(default_factory=list)
    parent: str | None = None
    children: list[str] = field(default_factory=list)
    cell: str | None = None
    table: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form sent over the worker's pipe."""
        return asdict(self)

    def observable(self) -> dict[str, Any]:
        """What an action may change, for before/after evidence."""
        return {
            "name": self.name,
            "states": sorted(s for s in self.states if s in EVIDENCE_STATES),
            "value": self.value,
            "text": self.text,
        }


class UntrustedAnswer(ValueError):
    """A worker's answer that does not have the shape the host accepts."""


def supported_ops(
    role: str, interfaces: frozenset[str], states: frozenset[str], parent_selects: bool
) -> list[str]:
    """The operations an element can take, from its role, interfaces and states.

    Args:
        role: The AT-SPI role name.
        interfaces: Its interface names (``Action``, ``EditableText``, ...).
        states: Its state names.
        parent_selects: Whether its parent has the Selection interface.
    """
    ops: set[Op] = set()
    if "Action" in interfaces:
        ops |= {Op.PRESS, Op.CLICK}
        if role in TOGGLE_ROLES:
            ops.add(Op.TOGGLE)
    if "Component" in interfaces:
        ops.add(Op.SCROLL_INTO_VIEW)
        if "focusable" in states:
            ops |= {Op.FOCUS, Op.KEY, Op.TYPE}
    if "EditableText" in interfaces and "editable" in states:
        ops.add(Op.SET_TEXT)
    if role == "table cell" and "editable" in states:
        ops |= {Op.SET_TEXT, Op.SELECT}  # a Calc cell: selected, then typed into
    if "Value" in interfaces and role in VALUE_ROLES:
        ops.add(Op.SET_VALUE)
    if parent_selects and "selectable" in states:
        ops.add(Op.SELECT)
    return sorted(ops)


def column_name(index: int) -> str:
    """0 -> ``A``, 25 -> ``Z``, 26 -> ``AA`` (a spreadsheet's column letters)."""
    letters = ""
    index += 1
    while index > 0:
        index, rest = divmod(index - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


_CELL = re.compile(r"^([A-Za-z]{1,3})([1-9][0-9]{0,6})$")


def parse_cell(address: str) -> tuple[int, int] | None:
    """``B3`` -> ``(2, 1)`` (row, column, both from 0); None for anything else."""
    match = _CELL.match(address.strip())
    if match is None:
        return None
    column = 0
    for char in match.group(1).upper():
        column = column * 26 + ord(char) - ord("A") + 1
    return int(match.group(2)) - 1, column - 1


def parse_records(raw: Any) -> list[Record]:
    """Records from a worker's answer, each field checked and bounded.

    Raises:
        UntrustedAnswer: Anything but a list of at most :data:`MAX_RECORDS` well-formed records.
    """
    if not isinstance(raw, list) or len(raw) > MAX_RECORDS:
        raise UntrustedAnswer(f"records must be a list of at most {MAX_RECORDS} entries")
    return [parse_record(item) for item in raw]


def parse_record(raw: Any) -> Record:
    """One record from untrusted JSON (see :func:`parse_records`)."""
    if not isinstance(raw, Mapping):
        raise UntrustedAnswer("a record must be an object")
    ref = _ref(raw.get("ref"))
    return Record(
        ref=ref,
        pid=_int(raw.get("pid"), "pid"),
        start=_int(raw.get("start"), "start"),
        window=_ref(raw.get("window")),
        path=_int_list(raw.get("path"), MAX_PATH + 2, "path"),
        role=_str(raw.get("role"), 64, "role"),
        name=_str(raw.get("name"), MAX_NAME, "name"),
        states=[_str(s, 32, "state") for s in _list(raw.get("states"), MAX_STATES, "states")],
        bounds=_int_list(raw.get("bounds"), 4, "bounds"),
        value=_float_or_none(raw.get("value")),
        text=None if raw.get("text") is None else _str(raw.get("text"), MAX_TEXT, "text"),
        ops=[Op(o).value for o in _list(raw.get("ops"), len(Op), "ops") if o in Op.__members__.values()],
        parent=None if raw.get("parent") is None else _ref(raw.get("parent")),
        children=[_ref(c) for c in _list(raw.get("children"), MAX_CHILDREN, "children")],
        cell=None if raw.get("cell") is None else _str(raw.get("cell"), 12, "cell"),
        table=_table(raw.get("table")),
    )


def _ref(value: Any) -> str:
    if not isinstance(value, str) or not REF_PATTERN.match(value):
        raise UntrustedAnswer(f"not a ref: {str(value)[:20]!r}")
    return value


def _str(value: Any, limit: int, what: str) -> str:
    if not isinstance(value, str):
        raise UntrustedAnswer(f"{what} must be a string")
    return value[:limit]


def _int(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not -(2**31) <= value < 2**63:
        raise UntrustedAnswer(f"{what} must be an integer")
    return value


def _float_or_none(value: Any) -> float | None:
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or value != value:
        raise UntrustedAnswer("value must be a number")
    return float(value)


def _list(value: Any, limit: int, what: str) -> list[Any]:
    if not isinstance(value, list) or len(value) > limit:
        raise UntrustedAnswer(f"{what} must be a list of at most {limit} items")
    return value


def _int_list(value: Any, limit: int, what: str) -> list[int]:
    return [_int(v, what) for v in _list(value, limit, what)]


def _table(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise UntrustedAnswer("table must be an object")
    return {
        "rows": _int(value.get("rows"), "rows"),
        "columns": _int(value.get("columns"), "columns"),
        "visible": _str(value.get("visible", ""), 24, "visible"),
    }

"""The accessibility worker: a long-lived process of the desktop user that walks, binds refs and acts.

Started and supervised by the tool host (:mod:`~osworld_mcp_env.ax.link`), it answers one
JSON request per line on stdin with one JSON line on stdout. It runs as the desktop user
because the accessibility bus is the user's, under the guest's Python (which imports
pyatspi from Debian's site packages); pyatspi may abort its process when the bus goes
away, which kills only this worker, never the tool host.

Refs are bound while walking, before any compaction: every element walked gets the ref
its identity already has (the app's pid and process start time plus the element's object
path; a Calc cell: its table's plus the cell's row and column) or the next new one.
A ref therefore names the same live element across observations, and a process that
registers an application under a known name has another pid and cannot take one over.

Before an operation emits anything, :meth:`Worker.resolve` re-checks the ref against the
live element: the same app process, window, role, name (unless editable), and path or
bounds; otherwise the answer is ``stale_element_ref`` or ``ambiguous_target``, never the
nearest match, and an operation the element does not support is ``unsupported_operation``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from osworld_mcp_env.ax.records import (
    MAX_CHILDREN,
    MAX_NAME,
    MAX_PATH,
    MAX_TEXT,
    WINDOW_ROLES,
    FailureCode,
    Op,
    Record,
    column_name,
    parse_cell,
    supported_ops,
)

MAX_NODES = 3000
MAX_LINE_BYTES = 1 << 20
MAX_TABLE_CELLS = 2000  # cells of a table's visible range read per observation
BIG_TABLE_CELLS = 1000  # tables with more cells than this are read through the Table interface only
CONFIRM_S = 1.0  # how long an operation that must change its target waits for the change to show
POLL_S = 0.02
EXPECTED_CHANGE = {
    Op.TOGGLE: "states",
    Op.SET_TEXT: "text",
    Op.SET_VALUE: "value",
    Op.SELECT: "states",
    Op.FOCUS: "states",
}


class Failure(Exception):
    """A precondition that failed before any input; its ``code`` is a :class:`FailureCode`."""

    def __init__(self, code: FailureCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Bound:
    """A ref's live element and the record it had when last observed."""

    acc: Any
    record: Record


def _start_time(pid: int) -> int:
    """The process's start time in clock ticks since boot; -1 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return -1


class Worker:
    """The refs of one worker's life and the operations on them.

    Args:
        first_ref: The number of the first new ref (the host passes one past the last it saw,
            so a restarted worker never reuses a ref of the same episode).
    """

    def __init__(self, first_ref: int = 1) -> None:
        import pyatspi

        self.at = pyatspi
        self.next_ref = first_ref
        self.by_key: dict[tuple[Any, ...], str] = {}
        self.key_of: dict[str, tuple[Any, ...]] = {}
        self.bound: dict[str, Bound] = {}
        self._input: Any = None
        self._x: Any = None

    # --- identity and refs ------------------------------------------------------
    def _ref_for(self, key: tuple[Any, ...]) -> str:
        ref = self.by_key.get(key)
        if ref is None:
            ref = f"e{self.next_ref}"
            self.next_ref += 1
            self.by_key[key] = ref
            self.key_of[ref] = key
        return ref

    def _record(
        self,
        acc: Any,
        *,
        window: str | None,
        path: list[int],
        parent: str | None,
        key: tuple[Any, ...] | None = None,
        cell: str | None = None,
    ) -> Record:
        """Reads one element and binds its ref (a window's ``window`` is None: its own ref)."""
        at = self.at
        pid = acc.get_process_id()
        key = key or (pid, _start_time(pid), acc.path)
        ref = self._ref_for(key)
        role = acc.getRoleName() or "unknown"
        states = sorted(at.stateToString(s).replace(" ", "_") for s in acc.getState().getStates())
        interfaces = frozenset(acc.get_interfaces())
        bounds = [0, 0, 0, 0]
        if "Component" in interfaces:
            x, y, w, h = acc.queryComponent().getExtents(at.DESKTOP_COORDS)
            bounds = [int(x), int(y), int(w), int(h)]
        value = None
        if "Value" in interfaces:
            try:
                value = float(acc.queryValue().currentValue)
            except Exception:
                value = None
        text = None
        if "Text" in interfaces:
            try:
                t = acc.queryText()
                text = t.getText(0, min(t.characterCount, MAX_TEXT))
            except Exception:
                text = None
        parent_selects = False
        if "selectable" in states:
            try:
                parent_selects = "Selection" in acc.get_parent().get_interfaces()
            except Exception:
                parent_selects = False
        state_set = frozenset(s.replace("_", " ") for s in states) | frozenset(states)
        record = Record(
            ref=ref,
            pid=pid,
            start=key[1],
            window=window or ref,
            path=path,
            role=role,
            name=(acc.name or "")[:MAX_NAME],
            states=states,
            bounds=bounds,
            value=value,
            text=text,
            ops=supported_ops(role, interfaces, state_set, parent_selects),
            parent=parent,
            cell=cell,
        )
        self.bound[ref] = Bound(acc, record)
        return record

    # --- windows --------------------------------------------------------------
    def _apps(self) -> Iterator[Any]:
        desktop = self.at.Registry.getDesktop(0)
        for i in range(min(desktop.childCount, MAX_CHILDREN)):
            app = desktop.getChildAtIndex(i)
            if app is not None:
                yield app

    def windows(self) -> list[Record]:
        """Every showing top-level window of every application, each with its ref."""
        found = []
        for app in self._apps():
            try:
                count = min(app.childCount, 256)
            except Exception:
                continue
            for j in range(count):
                try:
                    win = app.getChildAtIndex(j)
                    if win is None or win.getRoleName() not in WINDOW_ROLES:
                        continue
                    if not win.getState().contains(self.at.STATE_SHOWING):
                        continue
                    found.append(self._record(win, window=None, path=[], parent=None))
                except Exception:
                    continue  # an app that went away while listed
        return found

    def _active_x_window(self) -> tuple[int | None, str]:
        """The pid and title of X's active window (``_NET_ACTIVE_WINDOW``), as the window manager says."""
        try:
            from Xlib import X
            from Xlib import display as xdisplay

            if self._x is None:
                self._x = xdisplay.Display()
            d = self._x
            root = d.screen().root
            active = root.get_full_property(d.intern_atom("_NET_ACTIVE_WINDOW"), X.AnyPropertyType)
            if not active or not active.value or not active.value[0]:
                return None, ""
            win = d.create_resource_object("window", active.value[0])
            pid_prop = win.get_full_property(d.intern_atom("_NET_WM_PID"), X.AnyPropertyType)
            name_prop = win.get_full_property(d.intern_atom("_NET_WM_NAME"), d.intern_atom("UTF8_STRING"))
            pid = int(pid_prop.value[0]) if pid_prop and len(pid_prop.value) else None
            title = name_prop.value.decode("utf-8", "replace") if name_prop else ""
            return pid, title
        except Exception:
            return None, ""

    def focused_window(self) -> Record | None:
        """The window the user works in: the X active window's process, then its active or titled frame."""
        windows = self.windows()
        pid, title = self._active_x_window()
        mine = [w for w in windows if pid is None or w.pid == pid]
        for pick in (
            lambda w: "active" in w.states and (not title or w.name == title),
            lambda w: "active" in w.states,
            lambda w: bool(title) and w.name == title,
        ):
            chosen = [w for w in mine if pick(w)]
            if chosen:
                return chosen[-1]
        return mine[-1] if mine and pid is not None else None

    # --- walking --------------------------------------------------------------
    def walk(self, root_ref: str, max_nodes: int = MAX_NODES) -> list[Record]:
        """The records of the ref's subtree (showing elements only), refs bound as they are read."""
        bound = self.resolve(root_ref, None)
        out: list[Record] = []
        budget = [max_nodes]
        rec = bound.record
        window = None if rec.window == rec.ref else rec.window
        self._walk(bound.acc, window, list(rec.path), rec.parent, out, budget, 0)
        return out

    def _walk(
        self,
        acc: Any,
        window: str | None,
        path: list[int],
        parent: str | None,
        out: list[Record],
        budget: list[int],
        depth: int,
    ) -> Record | None:
        if budget[0] <= 0 or len(path) > MAX_PATH:
            return None
        try:
            if depth > 0 and not acc.getState().contains(self.at.STATE_SHOWING):
                return None
            record = self._record(acc, window=window, path=path, parent=parent)
        except Exception:
            return None
        budget[0] -= 1
        out.append(record)
        win = window or record.ref
        if record.role in ("table", "tree table") and self._big_table(acc, record):
            record.children = [c.ref for c in self._visible_cells(acc, record, win, out)]
            return record
        try:
            count = min(acc.childCount, MAX_CHILDREN)
        except Exception:
            count = 0
        for i in range(count):
            try:
                child = acc.getChildAtIndex(i)
            except Exception:
                continue
            if child is None:
                continue
            sub = self._walk(child, win, [*path, i], record.ref, out, budget, depth + 1)
            if sub is not None:
                record.children.append(sub.ref)
        return record

    def _big_table(self, acc: Any, record: Record) -> bool:
        try:
            table = acc.queryTable()
            rows, cols = int(table.nRows), int(table.nColumns)
        except Exception:
            return False
        record.table = {"rows": rows, "columns": cols, "visible": ""}
        return rows * cols > BIG_TABLE_CELLS

    def _visible_range(self, acc: Any, record: Record) -> tuple[int, int, int, int] | None:
        """(first row, first col, last row, last col) on screen, from the cells at the table's corners."""
        at = self.at
        x, y, w, h = record.bounds
        if w <= 2 or h <= 2:
            return None
        comp = acc.queryComponent()
        corners = []
        for px, py in ((x + 1, y + 1), (x + w - 2, y + h - 2)):
            cell = comp.getAccessibleAtPoint(px, py, at.DESKTOP_COORDS)
            where = parse_cell(cell.name) if cell is not None and cell.name else None
            if where is None:
                return None
            corners.append(where)
        (r0, c0), (r1, c1) = corners
        return r0, c0, r1, c1

    def _visible_cells(self, acc: Any, record: Record, window: str, out: list[Record]) -> list[Record]:
        """Non-empty cells of the visible range and the focused cell, read through the Table interface."""
        span = self._visible_range(acc, record)
        if span is None:
            return []
        r0, c0, r1, c1 = span
        assert record.table is not None
        record.table["visible"] = f"{column_name(c0)}{r0 + 1}:{column_name(c1)}{r1 + 1}"
        table = acc.queryTable()
        cells: list[Record] = []
        budget = MAX_TABLE_CELLS
        for row in range(r0, r1 + 1):
            for col in range(c0, c1 + 1):
                budget -= 1
                if budget < 0:
                    return cells
                cell = self._cell_record(table, record, window, row, col, only_interesting=True)
                if cell is not None:
                    cells.append(cell)
                    out.append(cell)
        return cells

    def _cell_record(
        self, table: Any, table_record: Record, window: str, row: int, col: int, *, only_interesting: bool
    ) -> Record | None:
        cell = table.getAccessibleAt(row, col)
        if cell is None:
            return None
        if only_interesting:
            text = ""
            try:
                text = cell.queryText().getText(0, 1)
            except Exception:
                text = ""
            if not text and not cell.getState().contains(self.at.STATE_FOCUSED):
                return None
        address = f"{column_name(col)}{row + 1}"
        key = (table_record.pid, table_record.start, self.bound[table_record.ref].acc.path, row, col)
        return self._record(
            cell,
            window=window,
            path=[*table_record.path, row, col],
            parent=table_record.ref,
            key=key,
            cell=address,
        )

    def cell(self, table_ref: str, address: str) -> Record | None:
        """The cell at ``address`` of a big table (read beyond the visible range too)."""
        where = parse_cell(address)
        bound = self.resolve(table_ref, None)
        if where is None or bound.record.table is None:
            return None
        row, col = where
        if row >= bound.record.table["rows"] or col >= bound.record.table["columns"]:
            return None
        return self._cell_record(
            bound.acc.queryTable(), bound.record, bound.record.window, row, col, only_interesting=False
        )

    # --- the target guard -----------------------------------------------------
    def resolve(self, ref: str, op: Op | None) -> Bound:
        """The live element behind ``ref``, re-checked against its record; ``op`` checked as supported.

        Raises:
            Failure: ``stale_element_ref`` (gone, replaced, moved to another process or window),
                ``ambiguous_target`` (two live elements fit the record), ``unsupported_operation``.
        """
        bound = self.bound.get(ref)
        if bound is None:
            raise Failure(
                FailureCode.STALE_ELEMENT_REF, f"[{ref}] was not observed by this accessibility worker."
            )
        rec = bound.record
        if _start_time(rec.pid) != rec.start:
            raise Failure(FailureCode.STALE_ELEMENT_REF, f"[{ref}]'s application (pid {rec.pid}) is gone.")
        if rec.window != ref:
            self.resolve(rec.window, None)  # its window must still be the same live window
        live = self._check(bound.acc, rec)
        if live is None and rec.window == ref:
            raise Failure(FailureCode.STALE_ELEMENT_REF, f"[{ref}]'s window ({rec.name!r}) was closed.")
        if live is None:
            candidates = self._refind(rec)
            if not candidates:
                raise Failure(
                    FailureCode.STALE_ELEMENT_REF,
                    f"[{ref}] ({rec.role} {rec.name!r}) is no longer in its window; observe again.",
                )
            if len(candidates) > 1:
                raise Failure(
                    FailureCode.AMBIGUOUS_TARGET,
                    f"[{ref}] ({rec.role} {rec.name!r}) now fits {len(candidates)} elements; observe again.",
                )
            live = candidates[0]
            bound.acc = live
        if op is not None:
            self._check_op(ref, live, rec, op)
        return bound

    def _check(self, acc: Any, rec: Record) -> Any | None:
        """``acc`` when it is still the element of ``rec`` (same process, role, name, path or bounds)."""
        try:
            if acc.getState().contains(self.at.STATE_DEFUNCT):
                return None
            if acc.get_process_id() != rec.pid or (acc.getRoleName() or "unknown") != rec.role:
                return None
            editable = acc.getState().contains(self.at.STATE_EDITABLE)
            if not editable and rec.window != rec.ref and (acc.name or "")[:MAX_NAME] != rec.name:
                return None
            if rec.cell is not None:
                return acc if (acc.name or "") == rec.cell else None
            if rec.window == rec.ref:
                # A window is its object (its title changes on save); a closed one stops showing.
                return acc if acc.getState().contains(self.at.STATE_SHOWING) else None
            if self._path_of(acc, rec) == rec.path:
                return acc
            return acc if self._bounds(acc) == rec.bounds else None
        except Exception:
            return None

    def _bounds(self, acc: Any) -> list[int]:
        x, y, w, h = acc.queryComponent().getExtents(self.at.DESKTOP_COORDS)
        return [int(x), int(y), int(w), int(h)]

    def _path_of(self, acc: Any, rec: Record) -> list[int] | None:
        """Child indices from the record's window down to ``acc``; None when it is not under it."""
        window = self.bound[rec.window].acc
        path: list[int] = []
        node = acc
        for _ in range(MAX_PATH + 1):
            if node == window:
                return list(reversed(path))
            parent = node.get_parent()
            if parent is None:
                return None
            path.append(node.getIndexInParent())
            node = parent
        return None

    def _refind(self, rec: Record) -> list[Any]:
        """Live elements that fit ``rec`` exactly, by its snapshot path and by its bounds (never nearer)."""
        window = self.bound[rec.window].acc
        found: list[Any] = []
        if rec.cell is not None:
            table = self.bound[rec.parent].acc if rec.parent in self.bound else None
            row, col = rec.path[-2:]
            try:
                cell = table.queryTable().getAccessibleAt(row, col) if table is not None else None
            except Exception:
                cell = None
            return [cell] if cell is not None and (cell.name or "") == rec.cell else []
        node = window
        try:
            for index in rec.path:
                node = node.getChildAtIndex(index) if node is not None else None
        except Exception:
            node = None
        if node is not None and self._same_kind(node, rec):
            found.append(node)
        try:
            x, y, w, h = rec.bounds
            at_point = window.queryComponent().getAccessibleAtPoint(
                x + w // 2, y + h // 2, self.at.DESKTOP_COORDS
            )
            while at_point is not None and not self._same_kind(at_point, rec):
                at_point = at_point.get_parent() if at_point != window else None
            if at_point is not None and self._bounds(at_point) == rec.bounds and at_point not in found:
                found.append(at_point)
        except Exception:
            pass
        return found

    def _same_kind(self, acc: Any, rec: Record) -> bool:
        try:
            if acc.get_process_id() != rec.pid or (acc.getRoleName() or "unknown") != rec.role:
                return False
            return acc.getState().contains(self.at.STATE_EDITABLE) or (acc.name or "")[:MAX_NAME] == rec.name
        except Exception:
            return False

    def _check_op(self, ref: str, acc: Any, rec: Record, op: Op) -> None:
        fresh = self._record(
            acc,
            window=None if rec.window == ref else rec.window,
            path=rec.path,
            parent=rec.parent,
            key=self._key_of(ref),
            cell=rec.cell,
        )
        fresh.children = rec.children
        if op.value not in fresh.ops:
            supported = ", ".join(fresh.ops) or "none"
            raise Failure(
                FailureCode.UNSUPPORTED_OPERATION,
                f"{op.value} is not supported by [{ref}] ({rec.role} {rec.name!r}); it supports {supported}.",
            )

    def _key_of(self, ref: str) -> tuple[Any, ...]:
        return self.key_of[ref]

    # --- operations -----------------------------------------------------------
    def act(self, ref: str | None, op: Op, args: dict[str, Any]) -> dict[str, Any]:
        """Runs one operation after the guard; returns its evidence.

        ``delivery`` is ``not_delivered`` when the guard refused (nothing was sent), ``delivered``
        when the call or input went out, ``unknown`` when it failed part-way. ``invoked`` is what
        the toolkit answered; ``state_change`` compares the target before and after.
        """
        if ref is None:
            if op not in (Op.KEY, Op.TYPE):
                raise Failure(FailureCode.UNSUPPORTED_OPERATION, f"{op.value} needs a ref.")
            self._send_input(op, args)
            return {"delivery": "delivered", "invoked": True, "state_change": "unknown"}
        bound = self.resolve(ref, op)
        before = self.observable(bound)
        try:
            invoked = self._perform(bound, op, args)
        except Failure:
            raise
        except Exception as exc:
            return {
                "delivery": "unknown",
                "invoked": False,
                "state_change": "unknown",
                "before": before,
                "detail": f"{type(exc).__name__}: {str(exc)[:200]}",
            }
        after, change = self._confirm(bound, op, args, before)
        return {
            "delivery": "delivered",
            "invoked": invoked,
            "state_change": change,
            "before": before,
            "after": after,
        }

    def observable(self, bound: Bound) -> dict[str, Any] | None:
        """The bound element's current evidence fields, None when it is no longer that element."""
        rec = bound.record
        try:
            if self._check(bound.acc, rec) is None:
                return None
            fresh = self._record(
                bound.acc,
                window=None if rec.window == rec.ref else rec.window,
                path=rec.path,
                parent=rec.parent,
                key=self._key_of(rec.ref),
                cell=rec.cell,
            )
            fresh.children = rec.children
            return fresh.observable()
        except Exception:
            return None

    def _confirm(
        self, bound: Bound, op: Op, args: dict[str, Any], before: dict[str, Any] | None
    ) -> tuple[dict[str, Any] | None, str]:
        """Waits (bounded) for the change ``op`` must make to show, then says whether it did."""
        expected = EXPECTED_CHANGE.get(op)
        deadline = time.monotonic() + (CONFIRM_S if expected else 0.0)
        while True:
            after = self.observable(bound)
            if after is None or before is None:
                return after, "unknown"
            done = _expected_holds(op, args, before, after)
            if done or time.monotonic() >= deadline:
                break
            time.sleep(POLL_S)
        if done:
            return after, "confirmed"
        if op in (Op.KEY, Op.TYPE, Op.PRESS, Op.CLICK, Op.SCROLL_INTO_VIEW):
            return after, "confirmed" if after != before else "none"
        return after, "none"

    def _perform(self, bound: Bound, op: Op, args: dict[str, Any]) -> bool:
        acc, rec = bound.acc, bound.record
        if op in (Op.PRESS, Op.CLICK, Op.TOGGLE):
            action = acc.queryAction()
            names = [action.getName(i) for i in range(action.nActions)]
            wanted = (
                ("toggle", "press", "click", "activate", "jump")
                if op is Op.TOGGLE
                else ("press", "click", "activate", "toggle", "jump")
            )
            index = next((names.index(w) for w in wanted if w in names), 0)
            return bool(action.doAction(index))
        if op is Op.FOCUS:
            return bool(acc.queryComponent().grabFocus())
        if op is Op.SET_TEXT:
            if rec.cell is not None:
                self._select_cell(bound)
                self._input_device().type_text(str(args["text"]) + "\n")
                return True
            return bool(acc.queryEditableText().setTextContents(str(args["text"])))
        if op is Op.SET_VALUE:
            acc.queryValue().currentValue = float(args["value"])
            return True
        if op is Op.SELECT:
            if rec.cell is not None:
                return self._select_cell(bound)
            return bool(acc.get_parent().querySelection().selectChild(acc.getIndexInParent()))
        if op is Op.SCROLL_INTO_VIEW:
            from gi.repository import Atspi  # type: ignore[import-untyped]

            return bool(Atspi.Component.scroll_to(acc, Atspi.ScrollType.ANYWHERE))
        if op in (Op.KEY, Op.TYPE):
            acc.queryComponent().grabFocus()
            self._send_input(op, args)
            return True
        raise Failure(FailureCode.UNSUPPORTED_OPERATION, f"{op.value} has no implementation.")

    def _select_cell(self, bound: Bound) -> bool:
        """Moves Calc's cell cursor to the cell (its grabFocus does; a Selection change does not)."""
        table = self.bound[bound.record.parent or ""].acc
        row, col = bound.record.path[-2:]
        moved = bool(bound.acc.queryComponent().grabFocus())
        # The cell cursor moves asynchronously: typing before it arrives would write the old cell.
        deadline = time.monotonic() + CONFIRM_S * 2
        while time.monotonic() < deadline:
            cell = table.queryTable().getAccessibleAt(row, col)
            if cell is not None and cell.getState().contains(self.at.STATE_FOCUSED):
                return moved
            time.sleep(POLL_S)
        raise RuntimeError(f"{bound.record.cell} did not take the cell cursor; nothing was typed")

    def _input_device(self) -> Any:
        if self._input is None:
            from osworld_mcp_env.guest.xdisplay import XConnection
            from osworld_mcp_env.guest.xinput import InputDevice

            self._input = InputDevice(XConnection())
        return self._input

    def _send_input(self, op: Op, args: dict[str, Any]) -> None:
        device = self._input_device()
        if op is Op.KEY:
            keys = args["keys"]
            device.press_keys(keys.split("+") if isinstance(keys, str) else list(keys))
        else:
            device.type_text(str(args["text"]))

    # --- search ---------------------------------------------------------------
    def find(self, scope: str, query: dict[str, Any], limit: int) -> list[Record]:
        """Elements of the scope's subtree that match every given field (case-insensitive substrings).

        A ``name`` that is a cell address also finds that cell of a big table beyond its visible range.
        """
        records = self.walk(scope)
        hits = [r for r in records if _matches(r, query)]
        name = query.get("name")
        if (
            isinstance(name, str)
            and parse_cell(name) is not None
            and not any(r.cell == name.upper() for r in hits)
        ):
            for table in (
                r
                for r in records
                if r.table is not None and r.table["rows"] * r.table["columns"] > BIG_TABLE_CELLS
            ):
                cell = self.cell(table.ref, name.upper())
                if cell is not None and _matches(cell, {**query, "name": None}):
                    hits.append(cell)
        return hits[:limit]


def _matches(rec: Record, query: dict[str, Any]) -> bool:
    role, name, text, state = (query.get(k) for k in ("role", "name", "text", "state"))
    if role and rec.role != str(role).lower():
        return False
    if name and rec.cell is not None and parse_cell(str(name)) is not None:
        # An address names one cell: B1 must not find B10, which holds "b1" in its name.
        if rec.cell.lower() != str(name).strip().lower():
            return False
    elif name and str(name).lower() not in rec.name.lower():
        return False
    if (
        text
        and str(text).lower() not in (rec.text or "").lower()
        and str(text).lower() not in rec.name.lower()
    ):
        return False
    return not (state and str(state).replace(" ", "_").lower() not in rec.states)


def _expected_holds(op: Op, args: dict[str, Any], before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether ``after`` shows the change ``op`` asked for."""
    if op is Op.TOGGLE:
        flips = {"checked", "pressed"}
        return bool(flips & (set(before["states"]) ^ set(after["states"])))
    if op is Op.SET_TEXT:
        return after["text"] == str(args["text"])[:MAX_TEXT] or (after["text"] != before["text"])
    if op is Op.SET_VALUE:
        return after["value"] is not None and abs(after["value"] - float(args["value"])) < 1e-9
    if op is Op.SELECT:
        return "selected" in after["states"] or "focused" in after["states"]
    if op is Op.FOCUS:
        return "focused" in after["states"]
    return False


Handler = Callable[[Worker, dict[str, Any]], Any]


def _records(items: list[Record]) -> list[dict[str, Any]]:
    return [r.to_dict() for r in items]


def _h_observe(w: Worker, req: dict[str, Any]) -> Any:
    scope = req.get("scope") or None
    if scope is None:
        focused = w.focused_window()
        if focused is None:
            return {"root": None, "records": [], "windows": _records(w.windows())}
        scope = focused.ref
    return {"root": scope, "records": _records(w.walk(scope, int(req.get("max_nodes", MAX_NODES))))}


def _h_find(w: Worker, req: dict[str, Any]) -> Any:
    scope = req.get("scope") or None
    if scope is None:
        focused = w.focused_window()
        if focused is None:
            return {"records": []}
        scope = focused.ref
    return {"records": _records(w.find(scope, req.get("query") or {}, int(req.get("limit", 20))))}


def _h_windows(w: Worker, req: dict[str, Any]) -> Any:
    focused = w.focused_window()
    return {"records": _records(w.windows()), "focused": focused.ref if focused else None}


def _h_probe(w: Worker, req: dict[str, Any]) -> Any:
    bound = w.resolve(str(req["ref"]), None)
    return {"record": w.observable(bound), "states": bound.record.states}


def _h_act(w: Worker, req: dict[str, Any]) -> Any:
    ref = req.get("ref")
    return w.act(None if ref is None else str(ref), Op(req["op"]), dict(req.get("args") or {}))


HANDLERS: dict[str, Handler] = {
    "observe": _h_observe,
    "find": _h_find,
    "windows": _h_windows,
    "probe": _h_probe,
    "act": _h_act,
    "ping": lambda w, req: {"pid": os.getpid(), "next_ref": w.next_ref},
}


def answer(worker: Worker, line: bytes) -> dict[str, Any]:
    """The reply to one request line: ``{"ok": true, ...}`` or ``{"ok": false, "code", "message"}``."""
    try:
        req = json.loads(line)
        handler = HANDLERS[req["cmd"]]
        return {"ok": True, **handler(worker, req), "next_ref": worker.next_ref}
    except Failure as exc:
        return {"ok": False, "code": exc.code.value, "message": str(exc), "next_ref": worker.next_ref}
    except Exception as exc:
        return {"ok": False, "code": "worker_error", "message": f"{type(exc).__name__}: {str(exc)[:300]}"}


def serve(first_ref: int) -> int:
    """Answers requests from stdin until it closes."""
    # The answers get a private copy of stdout; fd 1 then points at stderr, so a library that
    # prints (python-xlib warns about a missing Xauthority there) cannot corrupt the protocol.
    stdout = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    stdin = sys.stdin.buffer
    worker = Worker(first_ref)
    stdout.write(b'{"ok": true, "ready": true}\n')
    stdout.flush()
    while True:
        line = stdin.readline(MAX_LINE_BYTES + 1)
        if not line:
            return 0
        reply = (
            answer(worker, line)
            if len(line) <= MAX_LINE_BYTES
            else {"ok": False, "code": "worker_error", "message": "request too large"}
        )
        stdout.write(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
        stdout.flush()


def main(argv: list[str] | None = None) -> int:
    """CLI: ``python -m osworld_mcp_env.ax.worker --first-ref N``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first-ref", type=int, default=1)
    args = parser.parse_args(argv)
    return serve(max(1, args.first_ref))


if __name__ == "__main__":
    sys.exit(main())

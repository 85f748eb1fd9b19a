"""Records -> the compact view the model reads: wrappers dropped, repetition condensed, refs kept.

The refs were bound to the records before this runs (:mod:`~osworld_mcp_env.ax.worker`),
so compaction never changes what a ref denotes; it only decides what is printed:

- Unnamed grouping elements (:data:`~osworld_mcp_env.ax.records.WRAPPER_ROLES`) are dropped
  and their children take their place; separators and empty unnamed leaves are dropped.
- The leaf children of a container share its line: ``tool bar 'Standard' [e118]: New[e119]
  Open[e120] ...`` (a leaf whose role differs from the line's most common role says its role);
  children with children of their own follow on lines below.
- A subtree equal to one already printed (Writer's and Calc's menu bar appear twice) is one line
  naming the first one's ref.
- Geometry stays in the records; a table says its size and visible range, then its non-empty
  visible cells as ``A1[e41]=12``.

Pure functions over :class:`~osworld_mcp_env.ax.records.Record`; no AT-SPI here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from osworld_mcp_env.ax.records import WRAPPER_ROLES, Record

MAX_LABEL = 48
MAX_CELLS = 60  # cells printed on a table's line; a full screen of data would pass the budget
DROPPED_ROLES = frozenset({"separator"})
# Operations that make an element worth a line even without a name or text.
ACTING_OPS = frozenset({"press", "click", "toggle", "set_text", "set_value", "select"})
FLAG_STATES = (
    ("focused", "focused"),
    ("checked", "on"),
    ("pressed", "on"),
    ("selected", "selected"),
    ("expanded", "expanded"),
)


@dataclass
class Node:
    """A record kept for the view, with its kept children."""

    record: Record
    children: list[Node]


def _label(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…"


def _flags(rec: Record) -> str:
    shown = []
    for state, word in FLAG_STATES:
        if state in rec.states and word not in shown:
            shown.append(word)
    if "enabled" not in rec.states and "sensitive" not in rec.states and set(rec.ops) & ACTING_OPS:
        shown.append("disabled")
    return f" ({', '.join(shown)})" if shown else ""


def _worth_showing(rec: Record) -> bool:
    return bool(rec.name or rec.text or rec.cell or set(rec.ops) & ACTING_OPS or rec.table)


def keep_tree(records: Sequence[Record], root: str) -> Node | None:
    """The tree of records the view prints, wrappers and empty elements removed."""
    by_ref = {r.ref: r for r in records}

    def kept(ref: str, top: bool) -> list[Node]:
        rec = by_ref.get(ref)
        if rec is None or rec.role in DROPPED_ROLES:
            return []
        children = [n for child in rec.children for n in kept(child, False)]
        if not top and rec.role in WRAPPER_ROLES and not rec.name and not set(rec.ops) & ACTING_OPS:
            return children
        if not top and not children and not _worth_showing(rec):
            return []
        return [Node(rec, children)]

    nodes = kept(root, True) if root in by_ref else []
    return nodes[0] if nodes else None


def _signature(node: Node, memo: dict[str, tuple[object, ...]]) -> tuple[object, ...]:
    sig = memo.get(node.record.ref)
    if sig is None:
        rec = node.record
        sig = (rec.role, rec.name or rec.text, tuple(_signature(c, memo) for c in node.children))
        memo[rec.ref] = sig
    return sig


def _token(rec: Record, group_role: str | None) -> str:
    label = _label(rec.name or rec.text or "") or rec.role
    if rec.cell is not None:
        text = f"={_label(rec.text)}" if rec.text else ""
        return f"{rec.cell}[{rec.ref}]{text}{_flags(rec)}"
    prefix = f"{rec.role}:" if group_role is not None and rec.role != group_role and label != rec.role else ""
    return f"{prefix}{label}[{rec.ref}]{_flags(rec)}"


def describe(rec: Record) -> str:
    """One element as a line of the view: role, ref, name, text, table size, shown states."""
    parts = [f"{rec.role} [{rec.ref}]"]
    if rec.name:
        parts.append(repr(_label(rec.name)))
    if rec.text and rec.text != rec.name:
        parts.append(f"= {_label(rec.text)!r}")
    if "editable" in rec.states and "set_text" in rec.ops:
        parts.append("editable")
    if rec.table is not None:
        parts.append(f"{rec.table['rows']}x{rec.table['columns']}")
        if rec.table.get("visible"):
            parts.append(f"visible {rec.table['visible']}")
    return " ".join(parts) + _flags(rec)


def render(records: Sequence[Record], root: str, *, max_lines: int = 200) -> str:
    """The compact view of ``root``'s subtree: one line per kept element or group.

    Args:
        records: The walk's records (refs already bound).
        root: The ref of the window or subtree observed.
        max_lines: Lines beyond this are left out, with a line that says how to reach them.
    """
    tree = keep_tree(records, root)
    if tree is None:
        return "(nothing observable)"
    lines: list[str] = []
    memo: dict[str, tuple[object, ...]] = {}
    printed: dict[tuple[object, ...], str] = {}

    def emit(node: Node, depth: int) -> None:
        rec = node.record
        pad = " " * depth
        sig = _signature(node, memo)
        if node.children and sig in printed:
            lines.append(f"{pad}{rec.role} [{rec.ref}]: same as [{printed[sig]}]")
            return
        if node.children:
            printed[sig] = rec.ref
        leaves = [c for c in node.children if not c.children]
        if leaves:
            group_role = Counter(c.record.role for c in leaves).most_common(1)[0][0]
            shown = leaves[:MAX_CELLS] if rec.table is not None else leaves
            tokens = " ".join(_token(c.record, group_role) for c in shown)
            if len(shown) < len(leaves):
                tokens += f" … {len(leaves) - len(shown)} more cells: ax.find(text=...) or ax.find(name='C7')"
            lines.append(f"{pad}{describe(rec)}: {tokens}")
        else:
            lines.append(pad + describe(rec))
        for child in node.children:
            if child.children:
                emit(child, depth + 1)

    emit(tree, 0)
    if len(lines) > max_lines:
        left = len(lines) - max_lines
        lines = [*lines[:max_lines], f"… {left} more lines: ax.find(...) or ax.observe(scope=<ref>)"]
    return "\n".join(lines)


def diff(before: Mapping[str, Record], after: Mapping[str, Record], *, max_lines: int = 40) -> list[str]:
    """What changed between two observations of one scope, by ref.

    Returns lines ``~[e184] 'Bold' states +checked`` first, then ``+[e300] dialog 'Save As'`` (new
    ref) and ``-[e41] table cell 'A1'`` (ref gone), named or with text only; at most ``max_lines``
    plus a count of the rest.
    """
    out: list[str] = []
    added: list[str] = []
    for ref, new in after.items():
        old = before.get(ref)
        if old is None:
            if new.name or new.text:
                added.append(f"+[{ref}] {new.role} {_label(new.name or new.text or '')!r}")
            continue
        changes = []
        a, b = old.observable(), new.observable()
        added = sorted(set(b["states"]) - set(a["states"]))
        removed = sorted(set(a["states"]) - set(b["states"]))
        if added or removed:
            changes.append("states " + " ".join([*(f"+{s}" for s in added), *(f"-{s}" for s in removed)]))
        for key in ("name", "text", "value"):
            if a[key] != b[key]:
                changes.append(f"{key} {a[key]!r} -> {b[key]!r}")
        if changes:
            out.append(f"~[{ref}] {_label(new.name or new.cell or new.role)!r} " + "; ".join(changes))
    out += added
    out += [
        f"-[{ref}] {old.role} {_label(old.name or old.text or '')!r}"
        for ref, old in before.items()
        if ref not in after and (old.name or old.text)
    ]
    if len(out) > max_lines:
        out = [*out[:max_lines], f"… {len(out) - max_lines} more changes"]
    return out

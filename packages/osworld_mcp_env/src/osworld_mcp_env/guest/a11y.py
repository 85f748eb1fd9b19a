"""The AT-SPI tree as OSWorld's XML, run as a child process.

pyatspi aborts its whole process with SIGTRAP when the accessibility bus goes
away, and a naive walk of LibreOffice Calc hangs on a table that reports 2^31
children. So the server never imports pyatspi: it runs this module with a
timeout (``python -m osworld_mcp_env.guest.a11y``) and reads its stdout.
Tables are summarised, never walked; only nodes in the ``showing`` state are kept.
States are written as OSWorld's dumper writes them, ``StateType`` names in lower case
with underscores (``st:has_tooltip``), never pyatspi's display names (``has tooltip``),
whose spaces made the document invalid XML; names and text lose the characters XML 1.0
cannot carry (a window title may hold any byte). A node's AT-SPI object attributes
(Gecko's ``id``, ``class``, ``tag``...) are written as OSWorld writes them, one
``attr:NAME`` attribute each: task rules select on them (``tool-bar[attr|id=...]``), and
without them such a rule matched nothing for any agent.
"""

from __future__ import annotations

import argparse
import re
import sys
import xml.etree.ElementTree as ET

NS = {
    "st": "https://accessibility.ubuntu.example.org/ns/state",
    "attr": "https://accessibility.ubuntu.example.org/ns/attributes",
    "cp": "https://accessibility.ubuntu.example.org/ns/component",
    "txt": "https://accessibility.ubuntu.example.org/ns/text",
}
MAX_DEPTH = 50
MAX_CHILDREN = 1024
MAX_TEXT = 2000
# Roles whose children are cells addressed through the Table interface.
TABLE_ROLES = {"table", "tree table", "tree"}
# What XML 1.0 cannot carry: C0 controls but tab, newline and carriage return; lone surrogates; U+FFFE/F.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# An attribute name XML can carry under a prefix: an NCName (ASCII subset; no colon).
_XML_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9._-]*")


def state_name(enum_name: str) -> str:
    """The attribute name OSWorld writes for a ``StateType`` (``STATE_HAS_TOOLTIP`` -> ``has_tooltip``)."""
    return enum_name.removeprefix("STATE_").lower()


def xml_text(text: str) -> str:
    """``text`` without the characters an XML 1.0 document cannot hold."""
    return _NOT_XML.sub("", text)


def object_attributes(attributes: dict[str, str]) -> dict[str, str]:
    """The ``attr:`` namespace attributes OSWorld writes for a node's AT-SPI object attributes.

    OSWorld skips empty names; a name XML cannot hold (Gecko passes some through from
    web pages) is skipped here too, so the document stays valid, and values lose what
    XML 1.0 cannot carry.
    """
    return {
        f"{{{NS['attr']}}}{name}": xml_text(str(value))
        for name, value in attributes.items()
        if _XML_NAME.fullmatch(name)
    }


def dump_tree(max_nodes: int) -> str:
    """Returns the desktop's accessibility tree as XML."""
    import pyatspi

    for prefix, uri in NS.items():
        ET.register_namespace(prefix, uri)
    root = ET.Element("desktop-frame")
    budget = [max_nodes]
    desktop = pyatspi.Registry.getDesktop(0)
    for i in range(min(desktop.childCount, MAX_CHILDREN)):
        app = desktop.getChildAtIndex(i)
        if app is not None:
            _walk(app, root, 0, budget, pyatspi)
    return ET.tostring(root, encoding="unicode")


def _walk(node, parent: ET.Element, depth: int, budget: list[int], pyatspi) -> None:
    if budget[0] <= 0 or depth > MAX_DEPTH:
        return
    try:
        role = node.getRoleName() or "unknown"
        states = node.getState().getStates()
    except Exception:
        return
    known = pyatspi.StateType._enum_lookup  # OSWorld's dumper reads the same table
    state_names = {state_name(known.get(int(s), f"STATE_{int(s)}")) for s in states}
    if depth > 1 and "showing" not in state_names:
        return
    budget[0] -= 1
    element = ET.SubElement(parent, role.replace(" ", "-"))
    element.set("name", xml_text(node.name or ""))
    for state in sorted(state_names):
        element.set(f"{{{NS['st']}}}{state}", "true")
    try:
        attributes = node.get_attributes() or {}
    except Exception:  # a node that went away, or an app that fails the call: no attributes
        attributes = {}
    for name, value in object_attributes(attributes).items():
        element.set(name, value)
    try:
        component = node.queryComponent()
        x, y = component.getPosition(pyatspi.DESKTOP_COORDS)
        w, h = component.getSize()
        element.set(f"{{{NS['cp']}}}screencoord", f"({x}, {y})")
        element.set(f"{{{NS['cp']}}}size", f"({w}, {h})")
    except NotImplementedError:
        pass
    try:
        text = node.queryText()
        element.text = xml_text(text.getText(0, min(text.characterCount, MAX_TEXT)))
    except NotImplementedError:
        pass
    if role in TABLE_ROLES:
        _summarise_table(node, element)
        return
    for i in range(min(node.childCount, MAX_CHILDREN)):
        child = node.getChildAtIndex(i)
        if child is not None:
            _walk(child, element, depth + 1, budget, pyatspi)


def _summarise_table(node, element: ET.Element) -> None:
    try:
        table = node.queryTable()
        element.set(f"{{{NS['attr']}}}rows", str(table.nRows))
        element.set(f"{{{NS['attr']}}}columns", str(table.nColumns))
    except NotImplementedError:
        pass


def terminal_text() -> str | None:
    """The text of the terminal in the active window, else of the first terminal (OSWorld's ``/terminal``)."""
    import pyatspi

    def is_terminal(node) -> bool:
        return node.getRoleName() == "terminal"

    desktop = pyatspi.Registry.getDesktop(0)
    fallback = None
    for i in range(desktop.childCount):
        app = desktop.getChildAtIndex(i)
        for j in range(app.childCount if app else 0):
            frame = app.getChildAtIndex(j)
            found = pyatspi.findDescendant(frame, is_terminal) if frame else None
            if found is None:
                continue
            if frame.getState().contains(pyatspi.STATE_ACTIVE):
                fallback = found
                break
            fallback = fallback or found
        else:
            continue
        break
    if fallback is None:
        return None
    text = fallback.queryText()
    return text.getText(0, text.characterCount)


def main(argv: list[str] | None = None) -> int:
    """CLI: prints the tree (or the terminal text with ``--terminal``) to stdout."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--max-nodes", type=int, default=5000)
    parser.add_argument("--terminal", action="store_true")
    args = parser.parse_args(argv)
    if args.terminal:
        text = terminal_text()
        sys.stdout.write("" if text is None else text)
        return 0 if text is not None else 3
    sys.stdout.write(dump_tree(args.max_nodes))
    return 0


if __name__ == "__main__":
    sys.exit(main())

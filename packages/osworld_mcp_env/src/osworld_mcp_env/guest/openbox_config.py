"""The window manager's configuration, with nothing in it that starts a program.

Openbox runs as the infrastructure uid, and its stock configuration lets any
input start programs as that uid: a right click on the desktop opens the root
menu ("Terminal emulator", "Web browser", pipe menus), and key bindings run
``scrot`` or a file manager. The agent's clicks and keys reach openbox like a
person's, so with the stock file two GUI actions gave the agent a shell outside
the desktop user's uid, surviving resets, able to read the guest's token and
rewrite the screen file. This module turns the stock ``rc.xml`` into one where
every binding does only window management: a binding is kept only when each
action in it (nested ones included) is on :data:`ALLOWED_ACTIONS`, menus other
than the window menus are never shown, and the menu files are replaced by an
empty one. The one program start left is the terminal shortcut, whose script
asks the guest server to launch the terminal as the desktop user.

Run as ``python -m osworld_mcp_env.guest.openbox_config STOCK_RC OUT_DIR HOTKEY_COMMAND``.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

OPENBOX_NS = "http://openbox.org/3.4/rc"
ALLOWED_ACTIONS = frozenset(
    {
        "Activate", "BreakChroot", "Close", "DirectionalCycleWindows", "DirectionalFocusEast",
        "DirectionalFocusNorth", "DirectionalFocusSouth", "DirectionalFocusWest", "Focus",
        "FocusToBottom", "GoToDesktop", "Iconify", "If", "Lower", "Maximize", "Move",
        "MoveRelative", "MoveResizeTo", "NextWindow", "PreviousWindow", "Raise", "Resize",
        "ResizeRelative", "SendToDesktop", "Shade", "ShowMenu", "ToggleDecorations",
        "ToggleFullscreen", "ToggleMaximize", "ToggleOmnipresent", "ToggleShade",
        "ToggleShowDesktop", "Unfocus", "Unmaximize", "Unshade",
    }
)  # fmt: skip
# Openbox's built-in menus: window operations and the window list, no program starts.
ALLOWED_MENUS = frozenset({"client-menu", "client-list-menu", "client-list-combined-menu"})
HOTKEY = "C-A-t"
EMPTY_MENU = f'<?xml version="1.0" encoding="UTF-8"?>\n<openbox_menu xmlns="{OPENBOX_NS}"/>\n'


def _tag(name: str) -> str:
    return f"{{{OPENBOX_NS}}}{name}"


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def binding_is_safe(binding: ET.Element) -> bool:
    """True when every action of a key or mouse binding only manages windows."""
    for action in binding.iter(_tag("action")):
        name = action.get("name", "")
        # Openbox matches action names case-insensitively ("if" and "If" are one action).
        if name.lower() not in {a.lower() for a in ALLOWED_ACTIONS}:
            return False
        if name.lower() == "showmenu":
            menu = action.find(_tag("menu"))
            if menu is None or (menu.text or "").strip() not in ALLOWED_MENUS:
                return False
    return True


def sanitize(stock_rc: str, hotkey_command: str, menu_file: str) -> str:
    """The stock ``rc.xml`` text without program starts, plus the terminal shortcut.

    Args:
        stock_rc: The distribution's ``rc.xml``.
        hotkey_command: The command Ctrl+Alt+T runs (it must not start a shell itself).
        menu_file: Absolute path of the (empty) menu file openbox is pointed at.
    """
    ET.register_namespace("", OPENBOX_NS)
    root = ET.fromstring(stock_rc)
    for parent in list(root.iter()):
        for child in list(parent):
            if _local(child.tag) in ("keybind", "mousebind") and not binding_is_safe(child):
                parent.remove(child)
    keyboard = root.find(_tag("keyboard"))
    if keyboard is None:
        keyboard = ET.SubElement(root, _tag("keyboard"))
    for old in [k for k in keyboard.findall(_tag("keybind")) if k.get("key") == HOTKEY]:
        keyboard.remove(old)
    hotkey = ET.SubElement(keyboard, _tag("keybind"), {"key": HOTKEY})
    execute = ET.SubElement(hotkey, _tag("action"), {"name": "Execute"})
    ET.SubElement(execute, _tag("command")).text = hotkey_command
    menu = root.find(_tag("menu"))
    if menu is None:
        menu = ET.SubElement(root, _tag("menu"))
    for old in menu.findall(_tag("file")):
        menu.remove(old)
    ET.SubElement(menu, _tag("file")).text = menu_file
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


def minimal_rc() -> str:
    """A configuration to sanitize when the distribution ships none."""
    return f'<openbox_config xmlns="{OPENBOX_NS}"><keyboard/><mouse/><menu/></openbox_config>'


def main(argv: list[str]) -> int:
    """Writes ``rc.xml`` and an empty ``menu.xml`` into OUT_DIR from STOCK_RC."""
    if len(argv) != 3:
        print("usage: openbox_config STOCK_RC OUT_DIR HOTKEY_COMMAND", file=sys.stderr)
        return 2
    stock, out_dir, command = Path(argv[0]), Path(argv[1]), argv[2]
    text = stock.read_text(encoding="utf-8") if stock.is_file() else minimal_rc()
    menu_path = out_dir / "openbox-menu.xml"
    menu_path.write_text(EMPTY_MENU, encoding="utf-8")
    (out_dir / "openbox-rc.xml").write_text(sanitize(text, command, str(menu_path)), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The window manager's configuration starts no program but the terminal shortcut's script."""

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from osworld_mcp_env.guest.openbox_config import OPENBOX_NS, main, minimal_rc, sanitize

STOCK = Path("/etc/xdg/openbox/rc.xml")
HOTKEY = "/bin/sh /pkg/terminal-hotkey.sh"
NS = {"ob": OPENBOX_NS}


def actions(rc: str) -> list[str]:
    return [a.get("name", "") for a in ET.fromstring(rc).iter(f"{{{OPENBOX_NS}}}action")]


def keybinds(rc: str) -> dict[str, list[str]]:
    root = ET.fromstring(rc)
    return {
        k.get("key", ""): [a.get("name", "") for a in k.iter(f"{{{OPENBOX_NS}}}action")]
        for k in root.iterfind(".//ob:keybind", NS)
    }


@pytest.mark.skipif(not STOCK.is_file(), reason="openbox is not installed (tools/setup_debian.sh)")
def test_the_stock_configuration_loses_every_program_start_and_keeps_window_management() -> None:
    stock = STOCK.read_text()
    assert "Execute" in actions(stock) and "<menu>root-menu</menu>" in stock  # what is removed
    safe = sanitize(stock, HOTKEY, "/run/ctl/openbox-menu.xml")
    assert [a for a in actions(safe) if a.lower() == "execute"] == ["Execute"]
    assert keybinds(safe)["C-A-t"] == ["Execute"]
    assert re.findall(r"<command>([^<]*)</command>", safe) == [HOTKEY]
    assert "root-menu" not in safe
    menus = set(re.findall(r"<menu>([^<]*)</menu>", safe))
    assert menus <= {"client-menu", "client-list-combined-menu"}
    # Window management stays as it was: switching, closing, desktops.
    binds = keybinds(safe)
    assert binds["A-F4"] == ["Close"]
    assert binds["A-Tab"][0] == "NextWindow"
    assert binds["C-A-Left"] == ["GoToDesktop"]
    files = ET.fromstring(safe).findall(".//ob:menu/ob:file", NS)
    assert [f.text for f in files] == ["/run/ctl/openbox-menu.xml"]


def test_program_starts_hidden_in_nested_or_oddly_cased_actions_are_removed() -> None:
    rc = f"""<openbox_config xmlns="{OPENBOX_NS}"><keyboard>
      <keybind key="A-Tab"><action name="NextWindow"><finalactions>
        <action name="Focus"/><action name="execute"><command>xterm</command></action>
      </finalactions></action></keybind>
      <keybind key="W-r"><action name="Restart"><command>xterm</command></action></keybind>
      <keybind key="W-x"><action name="Exit"/></keybind>
      <keybind key="W-m"><action name="ShowMenu"><menu>root-menu</menu></action></keybind>
      <keybind key="W-n"><action name="ShowMenu"/></keybind>
      <keybind key="C-A-t"><action name="Execute"><command>xterm</command></action></keybind>
      <keybind key="A-F4"><action name="Close"/></keybind>
      <keybind key="A-space"><action name="ShowMenu"><menu>client-menu</menu></action></keybind>
    </keyboard><mouse><context name="Root">
      <mousebind button="Right" action="Press">
        <action name="ShowMenu"><menu>root-menu</menu></action></mousebind>
      <mousebind button="Left" action="Press"><action name="Focus"/></mousebind>
    </context></mouse></openbox_config>"""
    safe = sanitize(rc, HOTKEY, "/m.xml")
    assert keybinds(safe) == {"A-F4": ["Close"], "A-space": ["ShowMenu"], "C-A-t": ["Execute"]}
    assert re.findall(r"<command>([^<]*)</command>", safe) == [HOTKEY]
    assert "root-menu" not in safe and "xterm" not in safe
    assert 'button="Left"' in safe


def test_the_command_line_writes_both_files_and_a_missing_stock_file_gets_a_minimal_one(tmp_path) -> None:
    assert main([str(tmp_path / "absent.xml"), str(tmp_path), HOTKEY]) == 0
    rc = (tmp_path / "openbox-rc.xml").read_text()
    assert actions(rc) == ["Execute"] and keybinds(rc) == {"C-A-t": ["Execute"]}
    menu = ET.fromstring((tmp_path / "openbox-menu.xml").read_text())
    assert list(menu) == []
    assert actions(sanitize(minimal_rc(), HOTKEY, "/m.xml")) == ["Execute"]
    assert main([]) == 2

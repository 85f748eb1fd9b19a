"""The desktop user's home directory at the start of every episode.

First-run dialogs block windows from appearing and make reset times jump (a
fresh LibreOffice profile costs ~1.3 s and shows "Tip of the Day"; Impress opens
a template picker; VLC asks a privacy question). The home written here answers
those questions once, in files, so every episode starts from the same quiet state.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

# LibreOffice settings (path, property, value): no first-run or tip dialog, no
# template picker in Impress, no "Keep current format?" on xlsx/docx saves, and no
# autocorrection or autocompletion that rewrites what an agent types.
LIBREOFFICE_SETTINGS: tuple[tuple[str, str, str, str], ...] = (
    ("/org.openoffice.Office.Common/Misc", "FirstRun", "xs:boolean", "false"),
    ("/org.openoffice.Office.Common/Misc", "ShowTipOfTheDay", "xs:boolean", "false"),
    ("/org.openoffice.Office.Common/Save/Document", "WarnAlienFormat", "xs:boolean", "false"),
    ("/org.openoffice.Office.Common/Save/Document", "AutoSave", "xs:boolean", "false"),
    ("/org.openoffice.Office.Recovery/AutoSave", "Enabled", "xs:boolean", "false"),
    ("/org.openoffice.Office.Impress/Misc/NewDoc", "AutoPilot", "xs:boolean", "false"),
    ("/org.openoffice.Office.Calc/Input", "AutoInput", "xs:boolean", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "TwoCapitalsAtStart", "xs:boolean", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "CapitalAtStartSentence", "xs:boolean", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "ChangeUnderlineWeight", "xs:boolean", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "SetURL", "xs:boolean", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect", "ReplaceDashes", "xs:boolean", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect/SingleQuotes", "Replace", "xs:boolean", "false"),
    ("/org.openoffice.Office.Common/AutoCorrect/DoubleQuotes", "Replace", "xs:boolean", "false"),
    ("/org.openoffice.Office.Writer/AutoFunction/Completion", "Enable", "xs:boolean", "false"),
    # "You are running version X for the first time" infobar: a later version was seen.
    ("/org.openoffice.Setup/Product", "ooSetupLastVersion", "xs:string", "99.0"),
)

# xdg-open picks LibreOffice Writer for text and ImageMagick for images when no
# defaults are declared; these are the apps OSWorld tasks expect.
MIME_DEFAULTS = {
    "text/plain": "org.xfce.mousepad.desktop",
    "text/x-python": "org.xfce.mousepad.desktop",
    "text/markdown": "org.xfce.mousepad.desktop",
    "text/html": "chromium.desktop",
    "x-scheme-handler/http": "chromium.desktop",
    "x-scheme-handler/https": "chromium.desktop",
    "image/png": "gimp.desktop",
    "image/jpeg": "gimp.desktop",
    "inode/directory": "xfce4-terminal.desktop",
}

VLC_SETTINGS = {"qt-privacy-ask": "0", "metadata-network-access": "0", "qt-updates-notif": "0"}


def registry_xcu() -> str:
    """LibreOffice's ``registrymodifications.xcu`` with :data:`LIBREOFFICE_SETTINGS`."""
    items = "\n".join(
        f'<item oor:path="{path}"><prop oor:name="{name}" oor:op="fuse"><value>{value}</value></prop></item>'
        for path, name, _type, value in LIBREOFFICE_SETTINGS
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<oor:items xmlns:oor="http://openoffice.org/2001/registry" '
        'xmlns:xs="http://www.w3.org/2001/XMLSchema" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
        f"{items}\n</oor:items>\n"
    )


def write_home(home: Path) -> None:
    """Writes the episode-start home into ``home`` (which must exist and be empty)."""
    files = {
        ".config/libreoffice/4/user/registrymodifications.xcu": registry_xcu(),
        ".config/mimeapps.list": "[Default Applications]\n"
        + "".join(f"{mime}={app}\n" for mime, app in MIME_DEFAULTS.items()),
        ".config/vlc/vlcrc": "[qt]\n" + "".join(f"{k}={v}\n" for k, v in VLC_SETTINGS.items()),
    }
    for relative, text in files.items():
        path = home / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    # python-xlib (and so pyautogui) refuses to connect without this file, even to an
    # X server that needs no authorisation.
    (home / ".Xauthority").touch()
    for directory in ("Desktop", "Documents", "Downloads", "Pictures", "Music", "Videos"):
        (home / directory).mkdir(exist_ok=True)


def clear_directory(path: Path) -> None:
    """Removes the contents of ``path`` but not ``path`` itself.

    A running sandbox bind-mounts the directory: replacing it would leave the
    sandbox on the deleted inode, so only its contents change.
    """
    with os.scandir(path) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)


def chown_tree(path: Path, uid: int, gid: int) -> None:
    """``chown -R`` without following symlinks (the sandbox may have planted some)."""
    os.chown(path, uid, gid, follow_symlinks=False)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(root, name), uid, gid, follow_symlinks=False)

"""The desktop user's home directory at the start of every episode.

First-run dialogs block windows from appearing and make reset times jump (a
fresh LibreOffice profile costs ~1.3 s and shows "Tip of the Day"; Impress opens
a template picker; VLC asks a privacy question). The home written here answers
those questions once, in files, so every episode starts from the same quiet state.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
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

# Chromium's address bar searches with Google, as Chrome does on OSWorld's VM (Debian's
# Chromium defaults to DuckDuckGo): a query typed there (task f8cfa149: "search it in
# the Chrome browser") then lands on google.com/search?q=..., which the task checks.
# The one pref Chromium keeps the user's default search engine in; the rest of the
# profile Chromium makes on first start, as before.
CHROMIUM_PREFERENCES = {
    "default_search_provider_data": {
        "template_url_data": {
            "short_name": "Google",
            "keyword": "google.com",
            "url": "https://www.google.com/search?q={searchTerms}",
            "favicon_url": "https://www.google.com/favicon.ico",
            "prepopulate_id": 1,
            "safe_for_autoreplace": True,
        }
    }
}


# The user folders of OSWorld's VM, and VS Code's user paths, which exist there once VS
# Code has run: task 982d12a5's setup writes ~/.config/Code/User/settings.json before it
# starts `code`, and fails without the folder.
HOME_DIRECTORIES = (
    "Desktop",
    "Documents",
    "Downloads",
    "Pictures",
    "Music",
    "Videos",
    ".config/Code/User",
    ".vscode/extensions",
)


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
        ".config/chromium/Default/Preferences": json.dumps(CHROMIUM_PREFERENCES),
    }
    for relative, text in files.items():
        path = home / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    # python-xlib (and so pyautogui) refuses to connect without this file, even to an
    # X server that needs no authorisation.
    (home / ".Xauthority").touch()
    for directory in HOME_DIRECTORIES:
        (home / directory).mkdir(parents=True, exist_ok=True)


def ensure_home_template(root: Path, libreoffice_profile: Path | None) -> Path:
    """The read-only episode-start home that the guest copies into every fresh home tmpfs.

    Built once per content (settings and LibreOffice profile), atomically, so that
    concurrent env processes share it. Host root owns it and the sandbox binds it
    read-only: no episode can change what the next one starts from.

    Args:
        root: The backend's root directory.
        libreoffice_profile: A warmed LibreOffice profile (``.config/libreoffice``) or None.
    """
    stamp = hashlib.sha1(registry_xcu().encode())
    stamp.update(repr((sorted(MIME_DEFAULTS.items()), sorted(VLC_SETTINGS.items()))).encode())
    stamp.update(json.dumps(CHROMIUM_PREFERENCES, sort_keys=True).encode())
    stamp.update(repr(HOME_DIRECTORIES).encode())
    stamp.update(str(libreoffice_profile).encode())
    target = root / "templates" / f"home-{stamp.hexdigest()[:12]}"
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".home-", dir=target.parent))
    try:
        write_home(staging)
        if libreoffice_profile is not None:
            shutil.copytree(
                libreoffice_profile, staging / ".config" / "libreoffice", symlinks=False, dirs_exist_ok=True
            )
        for directory, _dirs, files in os.walk(staging):
            os.chmod(directory, 0o755)
            for name in files:
                os.chmod(os.path.join(directory, name), 0o644)
        try:
            os.rename(staging, target)
        except OSError:  # another process built it first
            if not target.is_dir():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target

"""One alias table from window classes and task app names to canonical app names.

The observation's ``active_app``, the tool catalogue for the focused app and the
agent's retriever all key on these names. OSWorld's ``related_apps`` are dirty
(``"libreoffice calc"``, ``vs_code``/``vscode``, ``OS``); they go through the same table.
"""

from __future__ import annotations

# canonical app name -> lowercase aliases (WM_CLASS parts, task spellings)
APP_ALIASES: dict[str, tuple[str, ...]] = {
    "libreoffice_calc": ("libreoffice-calc", "libreoffice calc", "calc", "localc", "scalc"),
    "libreoffice_writer": ("libreoffice-writer", "libreoffice writer", "writer", "lowriter", "swriter"),
    "libreoffice_impress": ("libreoffice-impress", "libreoffice impress", "impress", "loimpress", "simpress"),
    "libreoffice": ("libreoffice", "soffice", "libreoffice-startcenter"),
    "terminal": ("xfce4-terminal", "gnome-terminal", "gnome-terminal-server", "terminal", "xterm"),
    "text_editor": ("mousepad", "gedit", "text editor"),
    "code": ("code", "vs_code", "vscode", "visual studio code"),
    "vlc": ("vlc",),
    "chrome": ("chromium", "google-chrome", "chrome", "google chrome", "chromium-browser"),
    "gimp": ("gimp", "gimp-2.10"),
    "thunderbird": ("thunderbird", "mail"),
    "os": ("os", "desktop", "files"),
}

_LOOKUP = {alias: app for app, aliases in APP_ALIASES.items() for alias in (app, *aliases)}


def canonical_app(name: str) -> str:
    """Canonical name of an app alias, or the lowercased input when unknown."""
    key = name.strip().lower()
    return _LOOKUP.get(key, _LOOKUP.get(key.replace("_", " "), key))


def app_from_wm_class(wm_class: str) -> str:
    """Canonical app of a window's ``WM_CLASS`` (``instance.Class``); ``""`` for none."""
    if not wm_class:
        return ""
    parts = [p for p in wm_class.lower().split(".") if p]
    # The class part is the specific one for LibreOffice (libreoffice.libreoffice-calc).
    for part in reversed(parts):
        if part in _LOOKUP:
            return _LOOKUP[part]
    return parts[0] if parts else ""

"""The one alias table from window classes and task app names to canonical app keys.

The observation's ``active_app``, the env's tool catalog for the focused app
and the agent's tool retriever all key on these names, so they live here, in
the package every other one depends on. OSWorld's ``related_apps`` are dirty
(``"libreoffice calc"``, ``vs_code``/``vscode``, ``OS``); they go through the same
table. Membership is exact, never a substring test (``os`` is not in "close").
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from osworld_mcp_env.mcp_host.namespaces import NAMESPACE_TABLE, NAMESPACES

# Raw app ids (lower-cased: WM_CLASS parts, task spellings, process names) -> canonical key.
APP_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        **dict.fromkeys(
            [
                "libreoffice_calc", "calc", "libreoffice-calc", "libreoffice calc", "localc", "scalc",
                "spreadsheet",
            ],
            "libreoffice_calc",
        ),
        **dict.fromkeys(
            [
                "libreoffice_writer", "writer", "libreoffice-writer", "libreoffice writer", "lowriter",
                "swriter",
            ],
            "libreoffice_writer",
        ),
        **dict.fromkeys(
            [
                "libreoffice_impress", "impress", "libreoffice-impress", "libreoffice impress", "loimpress",
                "simpress",
            ],
            "libreoffice_impress",
        ),
        **dict.fromkeys(["libreoffice", "soffice", "libreoffice-startcenter"], "libreoffice"),
        # The desktop's editor is mousepad; its tools are served under OSWorld-MCP's `code` namespace.
        **dict.fromkeys(
            [
                "code", "vscode", "vs_code", "visual studio code", "code-oss", "mousepad", "gedit",
                "text editor",
            ],
            "code",
        ),
        **dict.fromkeys(
            ["google_chrome", "chrome", "google-chrome", "google chrome", "chromium", "chromium-browser"],
            "google_chrome",
        ),
        **dict.fromkeys(["vlc", "vlc media player"], "vlc"),
        **dict.fromkeys(
            [
                "os", "terminal", "xfce4-terminal", "gnome-terminal", "gnome-terminal-server", "xterm",
                "nautilus", "desktop", "files",
            ],
            "os",
        ),
        **dict.fromkeys(["thunderbird", "mozilla thunderbird", "mail"], "thunderbird"),
        **dict.fromkeys(["gimp", "gimp-2.10"], "gimp"),
        **dict.fromkeys(["multi_apps", "multi-apps"], "multi_apps"),
    }
)  # fmt: skip

# Canonical app key -> the tool groups it owns (OSWorld-MCP's "app" and "app2" groups), from the
# namespace table. An app missing here has no tools: it gets an explicit empty set, never every tool.
APP_NAMESPACES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {app: entry.osworld_groups for entry in map(NAMESPACE_TABLE.get, NAMESPACES) for app in entry.apps}
)


def normalize_app(raw: str | None) -> str | None:
    """The canonical key of a raw app id, or ``None`` when unknown."""
    if not raw:
        return None
    key = raw.strip().lower()
    return APP_ALIASES.get(key, APP_ALIASES.get(key.replace("_", " ")))


def app_from_wm_class(wm_class: str) -> str:
    """Canonical app of a window's ``WM_CLASS`` (``instance.Class``); ``""`` when no window has focus.

    An unknown class comes back lower-cased as it is, so the agent still sees which app it is.
    """
    if not wm_class:
        return ""
    lowered = wm_class.lower()
    # "instance.Class", where either part may hold dots itself (gimp-2.10.Gimp-2.10): try the
    # class part first (the specific one for LibreOffice: libreoffice.libreoffice-calc).
    cuts = [i for i, char in enumerate(lowered) if char == "."]
    candidates = [lowered[i + 1 :] for i in cuts] + [lowered[:i] for i in reversed(cuts)] + [lowered]
    for candidate in candidates:
        key = normalize_app(candidate)
        if key is not None:
            return key
    return lowered


def app_namespaces(app: str | None) -> tuple[str, ...]:
    """The tool namespaces of an app (raw or canonical); empty for apps without tools."""
    key = normalize_app(app) if app else None
    return APP_NAMESPACES.get(key, ()) if key else ()

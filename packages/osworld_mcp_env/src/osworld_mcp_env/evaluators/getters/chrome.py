"""Chromium getters: the profile's files and, over DevTools, the open tabs.

The desktop's ``google-chrome`` is Chromium (``guest/bin/google-chrome``), so its
profile is Chromium's, ``~/.config/chromium/Default``, where OSWorld's Ubuntu VM reads
``~/.config/google-chrome/Default`` (its ARM VM reads snap Chromium's, the same way).

The ``Preferences`` getters keep OSWorld's answers on a missing or broken file
(``"false"``, ``"Google"``, None, even ``"Google"`` where a ``"true"``/``"false"`` is
due: OSWorld's copy-paste), since tasks are scored on those values. The tab getters
read Chromium through :mod:`osworld_mcp_env.devtools`.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from osworld_mcp_env.backends.base import Desktop
from osworld_mcp_env.devtools import Tab, tabs
from osworld_mcp_env.errors import DesktopError, EvaluationError
from osworld_mcp_env.evaluators.getters.files import save_result, user_path
from osworld_mcp_env.evaluators.registry import ZeroScore, register_getter
from osworld_mcp_env.tasks.context import TaskContext

logger = logging.getLogger(__name__)

CHROMIUM_PROFILE = "~/.config/chromium/Default"
# How long the tab getters let Chromium's endpoint come up and pages finish loading
# (OSWorld waits up to 30 s for each page's network to go idle).
DEVTOOLS_WAIT_S = 5.0
PAGE_LOAD_S = 30.0


def _profile_file(desktop: Desktop, name: str) -> bytes | None:
    path = user_path(desktop, f"{CHROMIUM_PROFILE}/{name}")
    try:
        return desktop.read_file(path)
    except DesktopError as exc:
        raise EvaluationError(f"cannot read {path!r} from the desktop: {exc}") from exc


@register_getter("bookmarks")
def bookmarks(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> Any:
    """The ``roots`` of the profile's ``Bookmarks`` JSON; ``[]`` when there is no file yet.

    Chromium writes the file after the first bookmark change, so an empty list is
    "no bookmarks", which the metric scores 0.
    """
    data = _profile_file(desktop, "Bookmarks")
    if not data:
        return []
    try:
        return json.loads(data).get("roots", {})
    except (ValueError, AttributeError) as exc:
        raise ZeroScore(
            f"bookmarks: the Bookmarks file is not a JSON object (OSWorld raises): {exc}"
        ) from exc


# A query on the user's database stops after this many SQLite steps (an agent's
# recursive view must not hold the evaluator); OSWorld's query on a real profile
# takes a few thousand.
SQLITE_STEP_LIMIT = 50_000_000


def profile_rows(
    desktop: Desktop, context: TaskContext, name: str, dest: str, sql: str
) -> list[tuple] | None:
    """The rows of ``sql`` on the profile's SQLite file ``name``, copied to ``<work_dir>/<dest>`` first.

    None when the file is missing or is no database with that table, as OSWorld's
    getters answer on any error. The copy is the user's: it is opened read-only,
    with ``trusted_schema`` off and a step limit, so its schema runs no function
    with side effects and cannot hold the evaluator.
    """
    data = _profile_file(desktop, name)
    if not data:
        return None
    path = Path(save_result(context, dest, data))
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    steps = iter(range(SQLITE_STEP_LIMIT // 1000))
    connection.set_progress_handler(lambda: next(steps, None) is None, 1000)
    try:
        connection.execute("PRAGMA trusted_schema = OFF")
        return connection.execute(sql).fetchall()
    except sqlite3.Error as exc:
        logger.warning("%s: no rows from the profile's %s: %s", dest, name, exc)
        return None
    finally:
        connection.close()


@register_getter("history")
def history(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> list[tuple] | None:
    """``(url, title, last_visit_time)`` of every row of the profile's ``History`` ``urls`` table."""
    return profile_rows(
        desktop, context, "History", str(config["dest"]), "SELECT url, title, last_visit_time FROM urls"
    )


@register_getter("cookie_data")
def cookie_data(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> list[tuple] | None:
    """Every row (all columns, Chromium's order) of the profile's ``Cookies`` ``cookies`` table."""
    return profile_rows(desktop, context, "Cookies", str(config["dest"]), "SELECT * FROM cookies")


PREFERENCE_READERS: dict[str, tuple[Callable[[Any], Any], Any]] = {}
"""Getter name -> (read the Preferences JSON, OSWorld's value when that fails)."""


def from_preferences(name: str, data: bytes | None) -> Any:
    """The ``name`` getter's value for a ``Preferences`` file's bytes (None: no file).

    OSWorld catches every exception of reading the file and reading into it, so a
    missing file, broken JSON or a missing key gives the getter's fallback value.
    """
    read, on_error = PREFERENCE_READERS[name]
    try:
        return read(json.loads(data or b""))
    except (ValueError, KeyError, TypeError, AttributeError):
        return on_error


def _preferences_getter(name: str, on_error: Any) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    """Registers getter ``name`` as ``read(Preferences JSON)``, ``on_error`` when that fails."""

    def wrap(read: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def getter(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> Any:
            return from_preferences(name, _profile_file(desktop, "Preferences"))

        PREFERENCE_READERS[name] = (read, on_error)
        getter.__doc__ = read.__doc__
        register_getter(name)(getter)
        return read

    return wrap


@_preferences_getter("enable_do_not_track", "false")
def enable_do_not_track(prefs: Any) -> str:
    """``"true"`` when ``enable_do_not_track`` is truthy, else ``"false"``."""
    return "true" if prefs.get("enable_do_not_track", {}) else "false"


@_preferences_getter("enable_safe_browsing", "false")
def enable_safe_browsing(prefs: Any) -> str:
    """``"true"`` when ``safebrowsing.enhanced`` or ``safebrowsing.enabled`` is truthy, else ``"false"``."""
    safebrowsing = prefs.get("safebrowsing", {})
    return "true" if safebrowsing.get("enhanced", False) or safebrowsing.get("enabled", False) else "false"


@_preferences_getter("new_startup_page", "Google")
def new_startup_page(prefs: Any) -> str:
    """``"true"`` when Chromium starts on its new tab page: no ``session``, or ``restore_on_startup`` 5."""
    if "session" not in prefs:
        return "true"
    return "true" if prefs.get("session", {}).get("restore_on_startup", {}) == 5 else "false"


@_preferences_getter("profile_name", None)
def profile_name(prefs: Any) -> Any:
    """``profile.name`` (None when absent)."""
    return prefs.get("profile", {}).get("name", None)


@_preferences_getter("default_search_engine", "Google")
def default_search_engine(prefs: Any) -> Any:
    """``default_search_provider_data.template_url_data.short_name``; ``"Google"`` when unset."""
    return (
        prefs.get("default_search_provider_data", {}).get("template_url_data", {}).get("short_name", "Google")
    )


@_preferences_getter("data_delete_automacally", "Google")
def data_delete_automacally(prefs: Any) -> str:
    """``"true"`` when ``profile.default_content_setting_values`` exists (OSWorld's test, as is)."""
    return "true" if prefs["profile"].get("default_content_setting_values", None) is not None else "false"


@_preferences_getter("find_unpacked_extension_path", "Google")
def find_unpacked_extension_path(prefs: Any) -> list[Any]:
    """The ``path`` of every extension in ``extensions.settings``."""
    return [entry["path"] for entry in prefs.get("extensions", {}).get("settings", {}).values()]


@_preferences_getter("find_installed_extension_name", "Google")
def find_installed_extension_name(prefs: Any) -> list[Any]:
    """The manifest ``name`` of every extension in ``extensions.settings``."""
    return [entry["manifest"]["name"] for entry in prefs.get("extensions", {}).get("settings", {}).values()]


@_preferences_getter("chrome_font_size", {"default_fixed_font_size": 13, "default_font_size": 16})
def chrome_font_size(prefs: Any) -> Any:
    """``webkit.webprefs``; Chromium's defaults (13, 16, minimum 13) when the profile has none.

    On a missing or broken file OSWorld returns the defaults without ``minimum_font_size``.
    """
    defaults = {"default_fixed_font_size": 13, "default_font_size": 16, "minimum_font_size": 13}
    return prefs.get("webkit", {}).get("webprefs", defaults)


_SCHEMES = {"system": "system", "default": "system", "0": "system", "light": "light", "1": "light"}
_SCHEMES |= {"dark": "dark", "2": "dark"}


def _color_scheme(raw: Any) -> str | None:
    if isinstance(raw, bool):
        raw = int(raw)
    if isinstance(raw, int | float):
        return {0: "system", 1: "light", 2: "dark"}.get(int(raw))
    return _SCHEMES.get(raw.strip().lower()) if isinstance(raw, str) else None


@_preferences_getter("chrome_appearance_mode_ui", "system")
def chrome_appearance_mode_ui(prefs: Any) -> str:
    """``"light"``, ``"dark"`` or ``"system"`` from ``browser.theme.color_scheme2`` (or ``color_scheme``).

    OSWorld reads these prefs from the settings page's UI first and the file second;
    both hold the same values once Chromium has written the file. A GTK/system theme
    switched off (``extensions.theme.system_theme`` 0) reads as light, as there.
    """
    theme = prefs.get("browser", {}).get("theme", {})
    mode = _color_scheme(theme.get("color_scheme2", theme.get("color_scheme", None)))
    if prefs.get("extensions", {}).get("theme", {}).get("system_theme", None) in (0, "0", False):
        return "light"
    return mode or "system"


def _tabs(desktop: Desktop) -> list[Tab] | None:
    return tabs(desktop, wait_s=DEVTOOLS_WAIT_S, load_s=PAGE_LOAD_S)


@register_getter("open_tabs_info")
def open_tabs_info(
    desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /
) -> list[dict[str, str]]:
    """``[{title, url}]`` of every open page; ``[]`` when no Chromium answers (OSWorld's value).

    OSWorld then starts a fresh Chromium and lists its one new tab, which no task
    expects; here nothing is started.
    """
    found = _tabs(desktop)
    return [{"title": t.title, "url": t.url} for t in found or ()]


@register_getter("active_tab_info")
def active_tab_info(
    desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /
) -> dict[str, str] | None:
    """``{title, url, content}`` of the tab shown in Chromium's window; None when there is none.

    OSWorld reads the address bar's text from the accessibility tree, prefixes it
    with ``goto_prefix`` and loads that url again in a new tab; here the shown tab
    itself is read, so a ``file://`` page or a page that changes on reload reads as
    it is, and ``goto_prefix`` is not needed.
    """
    shown = [t for t in _tabs(desktop) or () if t.visible]
    if not shown:
        return None
    return {"title": shown[0].title, "url": shown[0].url, "content": shown[0].content}


@register_getter("active_url_from_accessTree")
def active_url_from_accesstree(
    desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /
) -> str | None:
    """The shown tab's url with ``goto_prefix`` (default ``https://``) put before its scheme-less form.

    OSWorld reads the address bar, which shows an ``http(s)`` url without its scheme
    (and a lone ``www.``) and any other url whole; the prefix then goes before that
    text. Here the same text is derived from the shown tab's url.
    """
    found = active_url(desktop, config)
    return found[0] if found else None


def active_url(desktop: Desktop, config: Mapping[str, Any]) -> tuple[str, list[Tab]] | None:
    """The url OSWorld reads for the shown tab (``goto_prefix`` + address bar text) and every open tab.

    None when no tab is shown (no Chromium, or OSWorld's address bar is not found).
    """
    open_tabs = _tabs(desktop) or []
    shown = [t for t in open_tabs if t.visible]
    if not shown:
        return None
    return f"{config.get('goto_prefix', 'https://')}{omnibox_text(shown[0].url)}", open_tabs


def omnibox_text(url: str) -> str:
    """What Chromium's address bar shows for ``url``: no ``http(s)://``, no leading ``www.``."""
    for scheme in ("https://", "http://"):
        if url.startswith(scheme):
            rest = url[len(scheme) :]
            return rest[4:] if rest.startswith("www.") else rest
    return url


# The names in the user's ~/Desktop (OSWorld's desktop path), as a JSON list; null when it is no folder.
_DESKTOP_NAMES = """
import json, os
d = os.path.expanduser("~/Desktop")
print(json.dumps(sorted(os.listdir(d)) if os.path.isdir(d) else None))
"""


@register_getter("shortcuts_on_desktop")
def shortcuts_on_desktop(
    desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /
) -> dict[str, str]:
    """``{name: text}`` of every ``*.desktop`` file in ``~/Desktop`` (Linux shortcuts); ``{}`` when none.

    A listing the user's side garbles reads as no shortcut; a shortcut that cannot
    be read as UTF-8 text is left out (OSWorld's decode raises there).
    """
    try:
        done = desktop.execute(["/usr/bin/python3", "-I", "-c", _DESKTOP_NAMES])
    except DesktopError as exc:
        raise EvaluationError(f"shortcuts_on_desktop: the desktop did not answer: {exc}") from exc
    try:
        names = json.loads(done.output) if done.returncode == 0 else None
    except ValueError:
        names = None
    if not isinstance(names, list):
        return {}
    home = user_path(desktop, "~")
    shortcuts = {}
    for name in names:
        if isinstance(name, str) and name.endswith(".desktop") and "/" not in name:
            data = desktop.read_file(f"{home}/Desktop/{name}")
            try:
                shortcuts[name] = data.decode("utf-8") if data is not None else None
            except UnicodeDecodeError:
                continue
    return {name: text for name, text in shortcuts.items() if text is not None}

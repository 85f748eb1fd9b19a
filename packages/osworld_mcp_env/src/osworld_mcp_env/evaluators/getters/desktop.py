"""Getters of the desktop's own state: screen and window sizes, a11y tree, terminal text, wallpaper.

Also the app xdg-mime opens videos with (``default_video_player``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from osworld_mcp_env.backends.base import Desktop
from osworld_mcp_env.errors import DesktopError, EvaluationError
from osworld_mcp_env.evaluators.getters.files import save_result
from osworld_mcp_env.evaluators.registry import register_getter
from osworld_mcp_env.tasks.context import TaskContext

TERMINAL_TIMEOUT_S = 30


@register_getter("vm_screen_size")
def vm_screen_size(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> dict[str, int]:
    """``{"width": ..., "height": ...}`` of the screen."""
    width, height = desktop.screen_size
    return {"width": width, "height": height}


def _class_names(wm_class: str) -> list[str]:
    # The guest joins WM_CLASS's (instance, class) with a dot; OSWorld matches either part.
    return [wm_class.lower(), *wm_class.lower().split(".")]


@register_getter("vm_window_size")
def vm_window_size(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> dict | None:
    """Size of the first window whose WM_CLASS instance or class is ``app_class_name`` (any case).

    None when no window matches (OSWorld's server answers nothing).
    """
    name = str(config["app_class_name"]).lower()
    try:
        windows = desktop.windows()
    except DesktopError as exc:
        raise EvaluationError(f"vm_window_size: the desktop did not list its windows: {exc}") from exc
    for window in windows:
        if name in _class_names(window.wm_class):
            return {"width": window.width, "height": window.height}
    return None


@register_getter("accessibility_tree")
def accessibility_tree(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> str:
    """The AT-SPI tree as OSWorld's XML (what its ``/accessibility`` returns)."""
    try:
        return desktop.accessibility_tree()
    except DesktopError as exc:
        raise EvaluationError(f"accessibility_tree: the desktop gave no tree: {exc}") from exc


@register_getter("vm_terminal_output")
def vm_terminal_output(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> str | None:
    """The text of the terminal on screen (the active window's first), or None without a terminal.

    Runs the guest's own ``/terminal`` reader as the desktop user, whose accessibility
    bus it is.
    """
    command = ["python", "-m", "osworld_mcp_env.guest.a11y", "--terminal"]
    try:
        done = desktop.execute(command, timeout=TERMINAL_TIMEOUT_S)
    except DesktopError as exc:
        raise EvaluationError(f"vm_terminal_output: the desktop did not answer: {exc}") from exc
    return done.output if done.returncode == 0 else None


@register_getter("vm_wallpaper")
def vm_wallpaper(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> str:
    """Copies the picture GNOME's ``org.gnome.desktop.background picture-uri`` names to ``<work_dir>/<dest>``.

    The uri is cleaned as OSWorld's server cleans it (``file://`` and quotes removed, no
    unquoting). No wallpaper set, or no such file, gives an empty file, as OSWorld's
    getter writes; an image metric then cannot open it.
    """
    command = ["gsettings", "get", "org.gnome.desktop.background", "picture-uri"]
    try:
        done = desktop.execute(command, timeout=TERMINAL_TIMEOUT_S)
        path = done.output.strip().replace("file://", "").replace("'", "")
        data = desktop.read_file(path) if done.returncode == 0 and path.startswith("/") else None
    except DesktopError as exc:
        raise EvaluationError(f"vm_wallpaper: the desktop did not answer: {exc}") from exc
    return save_result(context, config["dest"], data or b"")


# The video types OSWorld's ``get_default_video_player`` asks xdg-mime about, with its
# weights: most are listed twice, ``x-ogm+ogg`` once, and each listing is one vote.
VIDEO_TYPE_VOTES = {
    **dict.fromkeys(
        (
            "3gp",
            "3gpp",
            "3gpp2",
            "avi",
            "divx",
            "dv",
            "fli",
            "flv",
            "mp2t",
            "mp4",
            "mp4v-es",
            "mpeg",
            "mpeg-system",
            "msvideo",
            "ogg",
            "quicktime",
            "vnd.divx",
            "vnd.mpegurl",
            "vnd.rn-realvideo",
            "webm",
            "x-anim",
            "x-avi",
            "x-flc",
            "x-fli",
            "x-flv",
            "x-m4v",
            "x-matroska",
            "x-mpeg",
            "x-mpeg-system",
            "x-mpeg2",
            "x-ms-asf",
            "x-ms-asf-plugin",
            "x-ms-asx",
            "x-ms-wm",
            "x-ms-wmv",
            "x-ms-wmx",
            "x-ms-wvx",
            "x-msvideo",
            "x-nsv",
            "x-ogm",
        ),
        2,
    ),
    "x-ogm+ogg": 1,
    "x-theora": 2,
    "x-theora+ogg": 2,
}
# Runs every query in one desktop command; a record separator follows each answer.
_QUERY_DEFAULTS = 'for t in "$@"; do xdg-mime query default "video/$t"; printf "\\036"; done'


@register_getter("default_video_player")
def default_video_player(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> str:
    r"""The ``.desktop`` file most video types open with, as ``xdg-mime query default`` prints it.

    Each answer is xdg-mime's stdout unchanged (``"vlc.desktop\n"``); empty answers do
    not vote, ties go to the type listed first, and no answer at all gives ``"unknown"``,
    all as OSWorld's getter.
    """
    kinds = list(VIDEO_TYPE_VOTES)
    try:
        done = desktop.execute(["sh", "-c", _QUERY_DEFAULTS, "sh", *kinds], timeout=TERMINAL_TIMEOUT_S)
    except DesktopError as exc:
        raise EvaluationError(f"default_video_player: the desktop did not run xdg-mime: {exc}") from exc
    answers = done.output.split("\036")
    if done.returncode != 0 or len(answers) != len(kinds) + 1:
        raise EvaluationError(
            f"default_video_player: xdg-mime did not answer each type: {done.error[-500:]!r}"
        )
    votes: Counter[str] = Counter()
    for kind, app in zip(kinds, answers, strict=False):
        if app:
            votes[app] += VIDEO_TYPE_VOTES[kind]
    return votes.most_common(1)[0][0] if votes else "unknown"

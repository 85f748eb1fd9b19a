"""VLC metrics: settings read from ``vlcrc``, and what VLC's HTTP interface says it plays.

The ``vlcrc`` metrics read the file the way OSWorld's do, not the way VLC does: the
*last* line that contains ``<key>=`` anywhere wins, commented lines included, and a
key that no line names takes VLC's default. VLC writes every key of a saved config
once, commented (``#qt-bgcone=1``) when it has its default value, so on a file VLC
wrote both readings agree; on a hand-edited file they may not, and OSWorld's reading
is the one that scores. ``is_vlc_recordings_folder`` is the exception: it skips
comment lines and takes the *first* line naming the key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse
from xml.etree import ElementTree

from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric

# VLC's default of each key (what OSWorld assumes when no line names it).
DEFAULT_SLIDER_COLOURS = "153;210;153;20;210;20;255;199;15;245;39;29"
BLACKISH_BELOW = 100  # every RGB component under this is "black-ish" (OSWorld's threshold)


def _config_text(path: Any, metric: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ZeroScore(f"{metric}: cannot read the VLC config {path!r} (OSWorld raises): {exc}") from exc


def last_value(text: str, needle: str, default: str) -> str:
    """The text after the last ``=`` of the last line containing ``needle``, stripped; else ``default``."""
    value = default
    for line in text.split("\n"):
        if needle in line:
            value = line.split("=")[-1].strip()
    return value


def _expected(rules: Any, key: str, metric: str) -> Any:
    if not isinstance(rules, Mapping) or key not in rules:
        raise EvaluationError(f"{metric}: expected rules with {key!r}, got {rules!r:.200}.")
    value = rules[key]
    # OSWorld turns an int into its text; any other type is compared as it is (and never equals).
    return str(value) if isinstance(value, int) else value


def _setting_metric(name: str, key: str, default: str) -> None:
    """Registers ``name``: 1 when ``key`` in vlcrc (OSWorld's reading) equals ``rules["expected_<..>"]``."""
    rule_key = "expected_" + name.removeprefix("check_")

    def metric(result: Any, expected: Any, **options: Any) -> float:
        want = _expected(expected, rule_key, name)
        if result is None:
            return 0.0
        return float(last_value(_config_text(result, name), f"{key}=", default) == want)

    metric.__name__ = name
    metric.__doc__ = f"1 when vlcrc's ``{key}`` (default {default!r}) equals ``rules[{rule_key!r}]``."
    register_metric(name)(metric)


_setting_metric("check_qt_bgcone", "qt-bgcone", "1")
_setting_metric("check_qt_max_volume", "qt-max-volume", "125")
_setting_metric("check_qt_minimal_view", "qt-minimal-view", "0")
_setting_metric("check_one_instance_when_started_from_file", "one-instance-when-started-from-file", "1")
_setting_metric("check_play_and_exit", "play-and-exit", "0")


@register_metric("check_global_key_play_pause")
def check_global_key_play_pause(result: Any, expected: Any, **options: Any) -> float:
    """1 when "a global play/pause hotkey is set" (1) or "none is" (0) matches the rule.

    The key counts as set when its last line has a non-empty value.
    """
    want = _expected(expected, "expected_global_key_play_pause", "check_global_key_play_pause")
    if result is None:
        return 0.0
    text = _config_text(result, "check_global_key_play_pause")
    value = last_value(text, "global-key-play-pause=", "")
    return float(("1" if value else "0") == want)


@register_metric("check_qt_slider_colours")
def check_qt_slider_colours(result: Any, expected: Any, **options: Any) -> float:
    """``match``: the colour string equals the rule's; ``blackish``: every RGB triple is under 100.

    The needle is ``qt-slider-colours`` without ``=`` (OSWorld's). A colour string that is
    not ``;``-separated integers scores 0 (OSWorld catches the error).
    """
    if not isinstance(expected, Mapping) or expected.get("type") not in ("match", "blackish"):
        raise EvaluationError(f"check_qt_slider_colours: rule type must be match or blackish: {expected!r}")
    if result is None:
        return 0.0
    text = _config_text(result, "check_qt_slider_colours")
    colours = last_value(text, "qt-slider-colours", DEFAULT_SLIDER_COLOURS)
    if expected["type"] == "match":
        return float(colours == expected["expected_qt_slider_colours"])
    try:
        values = [int(x) for x in colours.split(";")]
    except ValueError:
        return 0.0
    # zip() of the three strided slices drops a trailing incomplete triple, as OSWorld's does.
    triples = zip(values[0::3], values[1::3], values[2::3], strict=False)
    return float(all(all(v < BLACKISH_BELOW for v in rgb) for rgb in triples))


@register_metric("is_vlc_recordings_folder")
def is_vlc_recordings_folder(result: Any, expected: Any, **options: Any) -> float:
    """1 when the first uncommented line naming ``input-record-path`` holds the rule's folder."""
    want = _expected(expected, "recording_file_path", "is_vlc_recordings_folder")
    if result is None:
        return 0.0
    for line in _config_text(result, "is_vlc_recordings_folder").split("\n"):
        if line.startswith("#") or not line.strip():
            continue
        if "input-record-path" in line:
            return float(line.split("=")[-1].strip() == want)
    return 0.0


@register_metric("is_vlc_fullscreen")
def is_vlc_fullscreen(result: Any, expected: Any, **options: Any) -> float:
    """1 when the window size (``expected``: ``vm_window_size``) equals the screen's (``result``).

    A missing window (None) is not fullscreen.
    """
    if result is None or expected is None:
        return 0.0
    return float(expected["width"] == result["width"] and expected["height"] == result["height"])


# Where OSWorld looks for what VLC plays, in order; the first non-empty one is used.
_FILE_INFO = ("filename", "title", "uri", "location", "name")
_URL_INFO = (
    ("meta", "url"),
    ("meta", "URI"),
    ("meta", "location"),
    ("meta", "title"),
    ("meta", "filename"),
    ("Stream 0", "Codec"),
    ("Stream 0", "Type"),
    ("Stream 0", "Language"),
)


def _info(tree: ElementTree.Element, paths: tuple[tuple[str, str], ...]) -> str | None:
    for category, name in paths:
        element = tree.find(f'information/category[@name="{category}"]/info[@name="{name}"]')
        if element is not None and element.text:
            return element.text
    return None


def _url_matches(info: str, url: str) -> bool:
    if url in info:
        return True
    want = urlparse(url)
    if info == os.path.basename(want.path):  # HLS streams show the playlist's file name
        return True
    if "://" in info:
        got = urlparse(info)
        return want.netloc == got.netloc and want.path in got.path
    return False


@register_metric("is_vlc_playing")
def is_vlc_playing(result: Any, expected: Any, **options: Any) -> float:
    """1 when VLC's ``status.xml`` says ``playing`` and what plays matches the rule.

    Rule ``{"type": "file_name", "file_name": ...}``: the first of the meta ``filename``,
    ``title``, ``uri``, ``location``, ``name`` that VLC reports ends with the name.
    ``{"type": "url", "url": ...}``: the first of the meta/stream fields OSWorld tries
    contains the url, is its file name, or is a url of the same host whose path
    contains the url's path. Another rule type scores 0 (as OSWorld's).
    """
    if not isinstance(expected, Mapping) or "type" not in expected:
        raise EvaluationError(f"is_vlc_playing: expected a rule with a 'type', got {expected!r:.200}.")
    if result is None:
        return 0.0
    try:
        with open(result, "rb") as f:
            tree = ElementTree.fromstring(f.read().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ElementTree.ParseError) as exc:
        raise ZeroScore(f"is_vlc_playing: unreadable status.xml (OSWorld raises): {exc}") from exc
    state = tree.find("state")
    if state is None:
        raise ZeroScore("is_vlc_playing: status.xml has no <state> (OSWorld raises)")
    if state.text != "playing":
        return 0.0
    if expected["type"] == "file_name":
        info = _info(tree, tuple(("meta", n) for n in _FILE_INFO))
        name = expected["file_name"]
        # OSWorld's "basename equals" and "ends with /name" tests are both implied by this one.
        return float(info is not None and info.endswith(name))
    if expected["type"] == "url":
        info = _info(tree, _URL_INFO)
        return float(info is not None and _url_matches(info, expected["url"]))
    return 0.0

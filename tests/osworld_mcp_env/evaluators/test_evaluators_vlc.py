"""VLC metrics on hand-made vlcrc and status.xml files, with the score OSWorld's function gives and why.

The expected scores were also checked by running OSWorld's own function on the same
inputs (outside this repository); they differ only where OSWorld crashes (a missing
file, a rule the task got wrong), which scores 0 or stops the evaluator here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators import METRICS, ZeroScore


def metric(name: str):
    return METRICS.get(name).fn


def vlcrc(tmp_path: Path, text: str) -> str:
    path = tmp_path / "vlcrc"
    path.write_text(text)
    return str(path)


# What VLC writes when it saves its preferences: a header, every key once, defaults commented.
SAVED_BY_VLC = """\
###
###  vlc 3.0.24
###

[qt] # Qt interface
# Display background cone or art (boolean)
#qt-bgcone=1
# Maximum Volume displayed (integer)
qt-max-volume=200
# Start in minimal view (without menus) (boolean)
#qt-minimal-view=0
# Define the colors of the volume slider (string)
#qt-slider-colours=153;210;153;20;210;20;255;199;15;245;39;29

[core] # core program
# Play and exit (boolean)
#play-and-exit=0
# Use only one instance when started from file manager (boolean)
one-instance-when-started-from-file=0
# Record directory (string)
#input-record-path=
# Play/Pause (string)
#global-key-play-pause=
"""


def test_settings_saved_by_vlc_read_as_vlc_means_them(tmp_path: Path):
    path = vlcrc(tmp_path, SAVED_BY_VLC)
    # A commented default line still "contains key=" and gives the default's text: 1.
    assert metric("check_qt_bgcone")(path, {"expected_qt_bgcone": 1}) == 1.0
    assert metric("check_qt_bgcone")(path, {"expected_qt_bgcone": 0}) == 0.0
    assert metric("check_qt_max_volume")(path, {"expected_qt_max_volume": 200}) == 1.0
    assert metric("check_qt_minimal_view")(path, {"expected_qt_minimal_view": 1}) == 0.0
    assert metric("check_play_and_exit")(path, {"expected_play_and_exit": 0}) == 1.0
    rule = {"expected_one_instance_when_started_from_file": 0}
    assert metric("check_one_instance_when_started_from_file")(path, rule) == 1.0
    # "#global-key-play-pause=" has an empty value: no hotkey, "0".
    assert metric("check_global_key_play_pause")(path, {"expected_global_key_play_pause": 1}) == 0.0
    assert metric("check_global_key_play_pause")(path, {"expected_global_key_play_pause": 0}) == 1.0
    # The recordings folder skips comments: no uncommented input-record-path line -> 0.
    assert metric("is_vlc_recordings_folder")(path, {"recording_file_path": ""}) == 0.0


def test_absent_keys_take_vlcs_defaults(tmp_path: Path):
    path = vlcrc(tmp_path, "[qt]\nqt-privacy-ask=0\n")  # the desktop's episode-start vlcrc
    assert metric("check_qt_bgcone")(path, {"expected_qt_bgcone": 1}) == 1.0  # default "1"
    assert metric("check_qt_max_volume")(path, {"expected_qt_max_volume": 125}) == 1.0  # default "125"
    assert metric("check_qt_minimal_view")(path, {"expected_qt_minimal_view": 0}) == 1.0  # default "0"
    assert metric("check_play_and_exit")(path, {"expected_play_and_exit": 1}) == 0.0  # default "0"
    rule = {"expected_one_instance_when_started_from_file": 1}
    assert metric("check_one_instance_when_started_from_file")(path, rule) == 1.0  # default "1"
    assert metric("check_qt_slider_colours")(path, {"type": "blackish"}) == 0.0  # default is green-red


def test_the_last_line_naming_the_key_wins_even_a_comment(tmp_path: Path):
    # OSWorld keeps overwriting the value for every line containing "qt-bgcone=": a comment
    # written after the real setting decides (VLC itself would read 0 here).
    path = vlcrc(tmp_path, "qt-bgcone=0\n#qt-bgcone=1\n")
    assert metric("check_qt_bgcone")(path, {"expected_qt_bgcone": 0}) == 0.0
    # The value is the text after the *last* "=", stripped.
    path = vlcrc(tmp_path, "qt-max-volume = 200 \n")
    assert metric("check_qt_max_volume")(path, {"expected_qt_max_volume": 200}) == 0.0  # no "key=" in line
    path = vlcrc(tmp_path, "qt-max-volume=x=200 \n")
    assert metric("check_qt_max_volume")(path, {"expected_qt_max_volume": 200}) == 1.0
    # An int rule is compared as its text; a string rule as it is.
    path = vlcrc(tmp_path, "qt-minimal-view=1\n")
    assert metric("check_qt_minimal_view")(path, {"expected_qt_minimal_view": "1"}) == 1.0
    assert metric("check_qt_minimal_view")(path, {"expected_qt_minimal_view": 1.0}) == 0.0  # "1" != 1.0


def test_global_play_pause_counts_any_value_as_set(tmp_path: Path):
    path = vlcrc(tmp_path, "#global-key-play-pause=\nglobal-key-play-pause=Ctrl+Alt+p\n")
    assert metric("check_global_key_play_pause")(path, {"expected_global_key_play_pause": 1}) == 1.0


def test_slider_colours_match_and_blackish(tmp_path: Path):
    dark = "10;10;10;20;20;20;99;0;0;0;0;99"
    path = vlcrc(tmp_path, f"qt-slider-colours={dark}\n")
    assert metric("check_qt_slider_colours")(path, {"type": "blackish"}) == 1.0
    match = {"type": "match", "expected_qt_slider_colours": dark}
    assert metric("check_qt_slider_colours")(path, match) == 1.0
    # 100 is not under the threshold of 100.
    path = vlcrc(tmp_path, "qt-slider-colours=10;10;10;100;0;0\n")
    assert metric("check_qt_slider_colours")(path, {"type": "blackish"}) == 0.0
    # A trailing incomplete triple is dropped by zip(), so a bright 255 there does not count.
    path = vlcrc(tmp_path, "qt-slider-colours=10;10;10;255\n")
    assert metric("check_qt_slider_colours")(path, {"type": "blackish"}) == 1.0
    # Not integers: OSWorld's try/except returns 0.
    path = vlcrc(tmp_path, "qt-slider-colours=black\n")
    assert metric("check_qt_slider_colours")(path, {"type": "blackish"}) == 0.0
    with pytest.raises(EvaluationError):
        metric("check_qt_slider_colours")(path, {"type": "whitish"})


def test_recordings_folder_first_uncommented_line(tmp_path: Path):
    path = vlcrc(tmp_path, "#input-record-path=/home/user/Desktop\ninput-record-path=/home/user/Desktop\n")
    assert metric("is_vlc_recordings_folder")(path, {"recording_file_path": "/home/user/Desktop"}) == 1.0
    # The first uncommented line decides, even when a later one would match.
    path = vlcrc(tmp_path, "input-record-path=/tmp\ninput-record-path=/home/user/Desktop\n")
    assert metric("is_vlc_recordings_folder")(path, {"recording_file_path": "/home/user/Desktop"}) == 0.0
    # A trailing slash is another string.
    path = vlcrc(tmp_path, "input-record-path=/home/user/Desktop/\n")
    assert metric("is_vlc_recordings_folder")(path, {"recording_file_path": "/home/user/Desktop"}) == 0.0


def test_missing_config_is_zero_and_bad_rules_are_evaluator_errors(tmp_path: Path):
    # The vlc_config getter returns None when there is no vlcrc: the agent's missing artefact.
    assert metric("check_qt_bgcone")(None, {"expected_qt_bgcone": 0}) == 0.0
    # A file the getter named but that cannot be read: OSWorld's open() raises.
    with pytest.raises(ZeroScore):
        metric("check_qt_bgcone")(str(tmp_path / "absent"), {"expected_qt_bgcone": 0})
    with pytest.raises(EvaluationError):
        metric("check_qt_bgcone")(vlcrc(tmp_path, ""), {"expected_qt_max_volume": 0})


def status_xml(tmp_path: Path, state: str, meta: dict[str, str], stream: dict[str, str] | None = None) -> str:
    infos = "".join(f"<info name='{k}'>{v}</info>" for k, v in meta.items())
    streams = "".join(f"<info name='{k}'>{v}</info>" for k, v in (stream or {}).items())
    path = tmp_path / "status.xml"
    path.write_text(
        f"<?xml version='1.0' encoding='utf-8'?><root><state>{state}</state><information>"
        f"<category name='meta'>{infos}</category><category name='Stream 0'>{streams}</category>"
        "</information></root>"
    )
    return str(path)


def test_is_vlc_playing_by_file_name(tmp_path: Path):
    rule = {"type": "file_name", "file_name": "Rick Astley - Never Gonna Give You Up.mp4"}
    playing = status_xml(tmp_path, "playing", {"filename": "Rick Astley - Never Gonna Give You Up.mp4"})
    assert metric("is_vlc_playing")(playing, rule) == 1.0
    # Paused is not playing.
    paused = status_xml(tmp_path, "paused", {"filename": "Rick Astley - Never Gonna Give You Up.mp4"})
    assert metric("is_vlc_playing")(paused, rule) == 0.0
    # "filename" is looked at before "title": a tagged title does not save a wrong file name...
    other = status_xml(tmp_path, "playing", {"filename": "b.mp4", "title": rule["file_name"]})
    assert metric("is_vlc_playing")(other, rule) == 0.0
    # ...but with no filename, the title is used, and "ends with" is enough.
    titled = status_xml(tmp_path, "playing", {"title": "/home/user/Desktop/" + rule["file_name"]})
    assert metric("is_vlc_playing")(titled, rule) == 1.0
    # No VLC answered (getter gave None): 0.
    assert metric("is_vlc_playing")(None, rule) == 0.0


def test_is_vlc_playing_by_url(tmp_path: Path):
    url = "https://cdn.example.com/streams/hls/master.m3u8"
    rule = {"type": "url", "url": url}
    # HLS streams show the playlist's file name.
    assert metric("is_vlc_playing")(status_xml(tmp_path, "playing", {"filename": "master.m3u8"}), rule) == 1.0
    # A url of the same host whose path contains the expected path.
    longer = "https://cdn.example.com/streams/hls/master.m3u8/v1"
    assert metric("is_vlc_playing")(status_xml(tmp_path, "playing", {"url": longer}), rule) == 1.0
    elsewhere = "https://other.example.com/streams/hls/master.m3u8x"
    assert metric("is_vlc_playing")(status_xml(tmp_path, "playing", {"url": elsewhere}), rule) == 0.0
    # With no meta at all, the first stream field OSWorld tries (the codec) is compared: 0.
    codec = status_xml(tmp_path, "playing", {}, {"Codec": "H264"})
    assert metric("is_vlc_playing")(codec, rule) == 0.0
    # An unknown rule type: OSWorld logs and returns 0.
    assert metric("is_vlc_playing")(codec, {"type": "title"}) == 0.0


def test_is_vlc_playing_on_a_broken_status_is_zero_with_reason(tmp_path: Path):
    bad = tmp_path / "s.xml"
    bad.write_text("<root><stat")
    with pytest.raises(ZeroScore):
        metric("is_vlc_playing")(str(bad), {"type": "url", "url": "x"})


def test_is_vlc_fullscreen_compares_window_and_screen_sizes():
    screen = {"width": 1920, "height": 1080}
    assert metric("is_vlc_fullscreen")(screen, {"width": 1920, "height": 1080}) == 1.0
    assert metric("is_vlc_fullscreen")(screen, {"width": 1920, "height": 1052}) == 0.0
    # No VLC window (the getter found none): not fullscreen.
    assert metric("is_vlc_fullscreen")(screen, None) == 0.0

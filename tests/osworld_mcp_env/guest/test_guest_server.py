"""The guest server keeps OSWorld's HTTP contract (shapes and semantics) on the real desktop."""

from __future__ import annotations

import io
import json
import time
from types import SimpleNamespace

import numpy as np
import openpyxl
import pytest
from osworld_mcp_env.backends.local.desktop import LocalDesktop
from osworld_mcp_env.errors import GuestRequestError, InputRejected, StaleFrameError
from osworld_mcp_env.guest import routes_hybrid
from PIL import Image
from polling import wait_until

pytestmark = pytest.mark.desktop


def call(desktop: LocalDesktop, method: str, path: str, **kwargs) -> tuple[int, bytes]:
    status, _headers, body = desktop.client.request(method, path, **kwargs)
    return status, body


def test_execute_returns_osworld_shape(desktop):
    status, body = call(
        desktop, "POST", "/execute", json_body={"command": ["bash", "-c", "echo out; echo err >&2; exit 3"]}
    )
    assert status == 200
    assert json.loads(body) == {
        "status": "success",
        "output": "out\n",
        "error": "err\n",
        "returncode": 3,
        "timed_out": False,
    }
    shell = desktop.execute("echo ~ $((6*7))", shell=True)
    assert shell.output == "/home/user 42\n" and shell.ok
    assert desktop.execute(["ls", "~/Desktop"]).ok  # ~/ arguments are expanded, as in OSWorld


def test_execute_timeout_is_a_result_not_a_dropped_connection(desktop):
    result = desktop.execute("sleep 5", shell=True, timeout=0.5)
    assert result.status == "error" and result.returncode == -1 and result.timed_out
    # -1 alone does not mean a timeout: a command that cannot start says -1 too, and no timeout.
    missing = desktop.execute(["/no/such/program"])
    assert missing.returncode == -1 and not missing.timed_out
    assert desktop.execute(["true"]).ok and not desktop.execute(["true"]).timed_out


def test_upload_then_file_round_trip_and_missing_file(desktop):
    payload = bytes(range(256)) * 1000
    desktop.upload_file("/home/user/deep/dir/blob.bin", payload)
    assert desktop.read_file("/home/user/deep/dir/blob.bin") == payload
    assert desktop.execute("ls -A ~/deep/dir", shell=True).output == "blob.bin\n"  # no temp file left
    status, body = call(
        desktop, "POST", "/file", body=b"file_path=/nope", content_type="application/x-www-form-urlencoded"
    )
    assert status == 404 and json.loads(body) == {"error": "File not found"}
    assert desktop.read_file("/nope") is None


def test_small_endpoints(desktop):
    assert json.loads(call(desktop, "POST", "/screen_size")[1]) == {"width": 1920, "height": 1080}
    assert call(desktop, "GET", "/platform")[1] == b"Linux"
    assert json.loads(call(desktop, "POST", "/desktop_path")[1]) == {"desktop_path": "/home/user/Desktop"}
    desktop.execute("mkdir -p ~/t/a && touch ~/t/a/f.txt ~/t/g.txt", shell=True)
    tree = json.loads(call(desktop, "POST", "/list_directory", json_body={"path": "~/t"})[1])[
        "directory_tree"
    ]
    assert tree == {
        "type": "directory",
        "name": "t",
        "children": [
            {"type": "directory", "name": "a", "children": [{"type": "file", "name": "f.txt"}]},
            {"type": "file", "name": "g.txt"},
        ],
    }
    x, y = json.loads(call(desktop, "GET", "/cursor_position")[1])
    assert 0 <= x < 1920 and 0 <= y < 1080
    png = Image.open(io.BytesIO(desktop.client.png_screenshot()))
    assert png.format == "PNG" and png.size == (1920, 1080)


def test_bad_requests_are_errors_not_crashes(desktop):
    assert call(desktop, "GET", "/no/such/route")[0] == 404
    assert call(desktop, "POST", "/execute", body=b"{bad json", content_type="application/json")[0] == 400
    assert call(desktop, "POST", "/execute", json_body={"command": 5})[0] == 400
    assert call(desktop, "POST", "/setup/open_file", json_body={"path": "/missing.xlsx"})[0] == 404
    assert call(desktop, "POST", "/gui", json_body={"action": "wait"})[0] == 400
    with pytest.raises(InputRejected) as info:
        desktop.gui({"action": "key", "arguments": {"keys": ["NoSuchKey"]}})
    assert info.value.status == 400 and isinstance(info.value, GuestRequestError)
    with pytest.raises(StaleFrameError) as stale:
        desktop.gui({"action": "mouse_move", "arguments": {"coordinate": [5, 5]}}, expected_layout="stale")
    assert stale.value.status == 409 and stale.value.fields.get("input_events_emitted") is False
    move = {"action": "mouse_move", "arguments": {"coordinate": [5, 5]}}
    for horizon in (-1, 5001, "800", True, None):
        status, body = call(desktop, "POST", "/gui", json_body={**move, "timer_horizon_ms": horizon})
        if horizon is None:  # absent: the guest's own horizon
            assert status == 200
            continue
        reply = json.loads(body)
        assert (status, reply["code"], reply["input_events_emitted"]) == (400, "invalid_arguments", False)
    assert desktop.client.health()


def test_token_is_required(desktop):
    from osworld_mcp_env.backends.guest_client import GuestClient

    stranger = GuestClient(unix_socket=str(desktop.ctl_dir / "guest.sock"), token="wrong")
    assert stranger.request("GET", "/health")[0] == 401


def test_windows_activate_close_and_window_size(desktop):
    desktop.launch(["xfce4-terminal", "--title", "first"])
    desktop.launch(["xfce4-terminal", "--disable-server", "--title", "second"])
    deadline = time.monotonic() + 20
    while len([w for w in desktop.windows() if w.title in ("first", "second")]) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    desktop.activate_window("first", strict=True)
    wait_until(  # the window manager focuses it when it handles the request
        lambda: (active := desktop.active_window()) is not None and active.title == "first",
        10,
        "the window manager to focus 'first'",
    )
    size = json.loads(
        call(
            desktop,
            "POST",
            "/window_size",
            body=b"app_class_name=xfce4-terminal",
            content_type="application/x-www-form-urlencoded",
        )[1]
    )
    assert size["width"] > 100 and size["height"] > 100
    desktop.close_window("second", strict=True)
    deadline = time.monotonic() + 10
    while any(w.title == "second" for w in desktop.windows()):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    with pytest.raises(GuestRequestError):
        desktop.activate_window("no such window")


def test_accessibility_summarises_the_calc_table_and_reads_the_terminal(desktop):
    workbook = io.BytesIO()
    sheet = openpyxl.Workbook()
    sheet.active.append([1, 2])
    sheet.save(workbook)
    desktop.upload_file("/home/user/t.xlsx", workbook.getvalue())
    desktop.open_file("/home/user/t.xlsx")
    desktop.settle(first_change_ms=300, quiet_ms=200, max_ms=8000)
    started = time.monotonic()
    tree = desktop.accessibility_tree()
    assert time.monotonic() - started < 20  # the 2^31-child table is never walked
    assert tree.startswith("<desktop-frame")
    assert 'rows="1048576"' in tree and 'columns="16384"' in tree
    desktop.execute("pkill -x soffice.bin", shell=True)
    desktop.launch(
        ["xfce4-terminal", "--disable-server", "-x", "bash", "-c", "echo hello-terminal; exec bash"]
    )
    deadline = time.monotonic() + 20
    while True:
        output = json.loads(call(desktop, "GET", "/terminal")[1])["output"]
        if output and "hello-terminal" in output:
            break
        assert time.monotonic() < deadline, output
        time.sleep(0.2)


# Full screen, no caret, no pointer: blue, then red and green in turn at each click.
TOGGLE_APP = """
import tkinter as tk
root = tk.Tk()
root.attributes("-fullscreen", True)
root.configure(background="#0000ff", cursor="none")
colours = iter(["#ff0000", "#00ff00"] * 100)
root.bind("<Button-1>", lambda event: root.configure(background=next(colours)))
root.mainloop()
"""


def test_a_gui_reply_carries_the_settled_frame_an_observation_would_take(desktop):
    """One round trip per step: the action's reply has the frame (or, locally, the focus)."""
    desktop.launch(["python3", "-c", TOGGLE_APP])
    deadline = time.monotonic() + 30
    while tuple(desktop.screenshot().pixels[540, 960]) != (0, 0, 255):
        assert time.monotonic() < deadline, "the toggle app did not show"
        time.sleep(0.05)
    click = {"action": "left_click", "arguments": {"coordinate": [960, 540]}}
    try:
        # Through the guest: the reply's frame is the screen after the click's repaint,
        # the same frame, layout and focus as a request right after it.
        carried = desktop.client.gui(click, capture=True, with_layout=True).capture
        assert carried is not None and tuple(carried.pixels[540, 960]) == (255, 0, 0)
        after = desktop.client.screenshot(with_layout=True)
        np.testing.assert_array_equal(carried.pixels, after.pixels)
        assert (carried.layout_hash, carried.active_window) == (after.layout_hash, after.active_window)
        assert carried.active_window is not None and carried.active_window.wm_class.endswith("Tk")
        # Locally: the screen file read after the reply's focus and change count.
        local = desktop.gui(click, capture=True).capture
        assert local is not None and tuple(local.pixels[540, 960]) == (0, 255, 0)
        np.testing.assert_array_equal(local.pixels, desktop.screenshot().pixels)
        assert local.active_window == after.active_window
        assert desktop.gui(click).capture is None  # not asked for
    finally:
        desktop.close_window("Tk", by_class=True)


# Full screen, blue. A click paints it red at once and green 0.6 s later, from a timer its
# main loop sleeps on in poll(2), as LibreOffice's toolbar refreshes come after a click.
LATE_REPAINT_APP = """
import select, time
from Xlib import X, display
d = display.Display()
s = d.screen()
w = s.root.create_window(0, 0, s.width_in_pixels, s.height_in_pixels, 0, s.root_depth,
                         background_pixel=0x0000FF, override_redirect=True, event_mask=X.ButtonPressMask)
w.map()
d.flush()
poller = select.poll()
poller.register(d.fileno(), select.POLLIN)
due = None
def paint(pixel):
    w.change_attributes(background_pixel=pixel)
    w.clear_area()
    d.flush()
while True:
    if not d.pending_events():
        poller.poll(-1 if due is None else max(0, round((due - time.monotonic()) * 1000)))
    while d.pending_events():
        if d.next_event().type == X.ButtonPress:
            paint(0xFF0000)
            due = time.monotonic() + 0.6
    if due is not None and time.monotonic() >= due:
        paint(0x00FF00)
        due = None
"""


def _centre(desktop: LocalDesktop) -> tuple[int, ...]:
    return tuple(int(v) for v in desktop.screenshot().pixels[540, 960])


def _until_centre(desktop: LocalDesktop, rgb: tuple[int, int, int], what: str) -> None:
    wait_until(lambda: _centre(desktop) == rgb, 30, what)


def test_a_longer_timer_horizon_waits_for_an_apps_later_repaint(desktop):
    """``timer_horizon_ms``: the wait holds for an app's timer due that long after the input."""
    desktop.launch(["python3", "-c", LATE_REPAINT_APP])
    click = {"action": "left_click", "arguments": {"coordinate": [960, 540]}}
    horizon = desktop.client.settle_horizon_ms
    try:
        _until_centre(desktop, (0, 0, 255), "the app to show")
        desktop.client.settle_horizon_ms = 0.0  # no timer is waited for: the red frame
        shown = desktop.client.gui(click, capture=True).capture
        assert shown is not None and tuple(shown.pixels[540, 960]) == (255, 0, 0)
        _until_centre(desktop, (0, 255, 0), "the app's timer to repaint")
        desktop.client.settle_horizon_ms = 800.0  # the timer due at 0.6 s is waited for
        result = desktop.client.gui(click, capture=True)
        assert result.capture is not None and tuple(result.capture.pixels[540, 960]) == (0, 255, 0)
        assert result.settle_ms >= 600
    finally:
        desktop.client.settle_horizon_ms = horizon
        desktop.execute(["pkill", "-f", "override_redirect=True"])
        wait_until(  # gone before the next test
            lambda: _centre(desktop) not in ((255, 0, 0), (0, 255, 0)), 30, "the app to end after pkill"
        )


def test_a_failed_observation_still_returns_the_actions_result():
    """The input happened: a frame the guest cannot take must not turn the reply into an error."""

    def broken() -> None:
        raise RuntimeError("the X connection broke")

    guest = SimpleNamespace(windows=SimpleNamespace(active=broken, layout=broken))
    result = {"input_events_emitted": True, "settle_ms": 3.0}
    reply = routes_hybrid._with_observation(guest, result, {"observe": "focus"})
    assert reply.status == 200 and reply.body == result

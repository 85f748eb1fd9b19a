"""OSWorld's Chromium setup steps and tab getters on the real desktop's Chromium (``-m desktop``).

``chrome_open_tabs`` waits for each page's load and leaves the last page active, so
the getters are read right after it, with no wait of their own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from osworld_mcp_env.evaluators import GETTERS, METRICS
from osworld_mcp_env.tasks import TaskContext
from osworld_mcp_env.tasks.setup import SETUP_STEPS
from polling import wait_until

pytestmark = pytest.mark.desktop
PAGES = {"alpha": "Alpha page", "beta": "Beta page", "gamma": "Gamma page"}


def test_open_tabs_then_read_and_close_them(desktop, tmp_path: Path):
    urls = []
    for name, title in PAGES.items():
        path = f"/home/user/Sites/{name}.html"
        desktop.upload_file(
            path, f"<html><head><title>{title}</title></head><body>{name}</body></html>".encode()
        )
        urls.append(f"file://{path}")
    ctx = TaskContext("chrome-desktop", tmp_path)
    SETUP_STEPS.get("launch")(desktop, ctx, command=["google-chrome"])
    # The step waits for Chromium's DevTools endpoint, then for each page's load.
    SETUP_STEPS.get("chrome_open_tabs")(desktop, ctx, urls_to_open=urls)

    tabs = GETTERS.get("open_tabs_info")(desktop, ctx, {})
    # Chromium's own first tab was closed by the step, as OSWorld's does.
    assert sorted(tabs, key=lambda t: t["url"]) == [
        {"title": title, "url": url} for title, url in zip(PAGES.values(), urls, strict=True)
    ]
    active = GETTERS.get("active_tab_info")(desktop, ctx, {})
    assert (active["title"], active["url"]) == ("Gamma page", urls[2])
    assert "<body>gamma</body>" in active["content"]
    assert GETTERS.get("active_url_from_accessTree")(desktop, ctx, {"goto_prefix": ""}) == urls[2]
    assert METRICS.get("is_expected_active_tab").fn(active, {"type": "url", "url": urls[2]}) == 1.0

    SETUP_STEPS.get("chrome_close_tabs")(desktop, ctx, urls_to_close=[urls[0]])
    left = GETTERS.get("open_tabs_info")(desktop, ctx, {})
    assert sorted(t["url"] for t in left) == urls[1:]
    assert METRICS.get("is_expected_tabs").fn(left, {"type": "url", "urls": urls[1:]}) == 1.0


def test_pkill_chrome_makes_chromium_exit_cleanly(desktop, tmp_path: Path):
    # OSWorld's settings tasks run `pkill chrome` so the browser writes its Preferences
    # before the getters read them. Chromium's own processes are named "chromium".
    page = "/home/user/Sites/page.html"
    desktop.upload_file(page, b"<html><head><title>Page</title></head><body>page</body></html>")
    ctx = TaskContext("chrome-pkill", tmp_path)
    SETUP_STEPS.get("launch")(desktop, ctx, command=["google-chrome"])
    SETUP_STEPS.get("chrome_open_tabs")(desktop, ctx, urls_to_open=[f"file://{page}"])
    desktop.execute(["pkill", "chrome"])
    wait_until(lambda: desktop.execute(["pgrep", "-x", "chromium"]).returncode == 1, 60, "Chromium to exit")
    preferences = json.loads(desktop.read_file("/home/user/.config/chromium/Default/Preferences") or b"{}")
    # A TERM is a clean shutdown that writes the files, recorded as "SessionEnded"
    # ("Normal" when the window is closed); a killed Chromium leaves "Crashed".
    assert preferences["profile"]["exit_type"] in ("SessionEnded", "Normal")


# An agent's own "DevTools" on Chromium's port: each answer is one the real reader must survive.
FAKE_DEVTOOLS = r"""
import http.server, json, sys
ANSWERS = {"garbage": '"not a tab list"', "wrong-shape": json.dumps([{"type": "page", "id": 5}])}
BODY = ANSWERS[sys.argv[1]].encode()

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"{}" if self.path == "/json/version" else BODY
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

http.server.HTTPServer(("127.0.0.1", 1337), Handler).serve_forever()
"""


@pytest.mark.parametrize("answer", ["garbage", "wrong-shape"])
def test_a_fake_devtools_endpoint_reads_as_no_chromium_not_as_an_evaluator_crash(
    desktop, tmp_path: Path, answer: str
):
    # The port and the reader belong to the user. Were a nonsense answer an evaluator
    # error, an agent could turn a failed Chromium episode into a crash, which the
    # trainer drops instead of scoring 0. OSWorld's getters return [] when Playwright
    # cannot connect; the same here, and the metric scores the episode 0.
    desktop.execute(["pkill", "chrome"])
    wait_until(lambda: desktop.execute(["pgrep", "-x", "chromium"]).returncode == 1, 60, "Chromium to exit")
    desktop.upload_file("/tmp/fake_devtools.py", FAKE_DEVTOOLS.encode())
    desktop.launch(["/usr/bin/python3", "/tmp/fake_devtools.py", answer])
    probe = [
        "/usr/bin/python3",
        "-c",
        "import urllib.request; urllib.request.urlopen('http://127.0.0.1:1337/json/version')",
    ]
    wait_until(lambda: desktop.execute(probe).returncode == 0, 60, "the fake endpoint to answer")
    try:
        ctx = TaskContext("chrome-fake-devtools", tmp_path)
        tabs = GETTERS.get("open_tabs_info")(desktop, ctx, {})
        assert tabs == []
        assert GETTERS.get("active_tab_info")(desktop, ctx, {}) is None
        rules = {"type": "url", "urls": ["file:///home/user/Sites/alpha.html"]}
        assert METRICS.get("is_expected_tabs").fn(tabs, rules) == 0
    finally:
        desktop.execute(["pkill", "-f", "fake_devtools.py"])

"""The website getters on the real desktop's Chromium, against a site served from the host's loopback.

The desktop runs in internet mode with ``www.shop.test`` mapped to a local server
(``hosts``, the stand-in hosts of :mod:`osworld_mcp_env.network`), so Chromium loads
the pages through the same proxy a website task's pages go through. The tests run
in file order: the profile getters read what the earlier tests' browsing wrote.
"""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from osworld_mcp_env.backends.local.desktop import LocalDesktop, LocalDesktopConfig
from osworld_mcp_env.evaluators import GETTERS, METRICS
from osworld_mcp_env.evaluators.metrics.pdf import pdf_text
from osworld_mcp_env.tasks import TaskContext
from osworld_mcp_env.tasks.setup import SETUP_STEPS
from polling import wait_until

pytestmark = [pytest.mark.desktop, pytest.mark.slow]

SHOP = """<!DOCTYPE html><html><head><title>Shop</title></head><body>
<ul class="pmpSearch_breadcrumb"><li class="catAllProducts"><span>Spider-Man</span></li>
<li class="catAllProducts"><span>Toys</span></li><li class="other">x</li></ul>
<div class="separator"> SEA <div class="aura"></div> NYC </div>
<span class="date"> Sat, Jan 05 </span>
<div id="host"></div>
<script>
document.getElementById("host").attachShadow({mode: "open"}).innerHTML = '<p class="deep">in shadow</p>';
</script>
<form><input id="name" value=" Ann "></form>
<h2 data-automation="geo">New York City Hotels</h2>
</body></html>"""
ARTICLE = (
    "<html><head><title>Agents</title></head>"
    "<body><h1>Planning</h1><p>Task decomposition with a memory.</p></body></html>"
)
SHOP_URL = "http://www.shop.test/shop/en/toys-kids/4?q=toys&S=4"


class Site(http.server.BaseHTTPRequestHandler):
    """The stand-in site: a shop page, a page that sets a cookie, one that echoes it, an article."""

    def do_GET(self) -> None:
        headers = {"Content-Type": "text/html; charset=utf-8"}
        if self.path.startswith("/shop/"):
            body = SHOP
        elif self.path == "/cookie":
            headers["Set-Cookie"] = "session=abc123; Max-Age=3600; Path=/"
            body = "<html><head><title>Cookie</title></head><body>set</body></html>"
        elif self.path == "/echo":
            cookie = self.headers.get("Cookie", "")
            body = f"<html><head><title>Echo</title></head><body><p>COOKIE:{cookie}</p></body></html>"
        elif self.path == "/article":
            body = ARTICLE
        else:
            self.send_error(404)
            return
        data = body.encode()
        self.send_response(200)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@contextlib.contextmanager
def serving() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def online() -> Iterator[LocalDesktop]:
    with serving() as port:
        network = {"mode": "internet", "hosts": {"www.shop.test": f"127.0.0.1:{port}"}}
        desk = LocalDesktop(LocalDesktopConfig(libreoffice_template=False, network=network))
        try:
            yield desk
        finally:
            desk.close()


@pytest.fixture(scope="module")
def ctx(tmp_path_factory) -> TaskContext:
    return TaskContext("chrome-website-getters", tmp_path_factory.mktemp("work"))


def get(name: str, desktop: LocalDesktop, ctx: TaskContext, **config):
    return GETTERS.get(name)(desktop, ctx, config)


def test_the_shown_tabs_url_and_elements(online, ctx):
    SETUP_STEPS.get("launch")(online, ctx, command=["google-chrome"])
    SETUP_STEPS.get("chrome_open_tabs")(online, ctx, urls_to_open=["http://www.shop.test/cookie", SHOP_URL])
    prefix = {
        "goto_prefix": "http://www."
    }  # the address bar shows shop.test/...: OSWorld's prefix puts www. back
    assert get("active_tab_url_parse", online, ctx, parse_keys=["q", "S", "page"], **prefix) == {
        "q": "toys",
        "S": "4",
        "page": "",
    }
    dash = get("url_dashPart", online, ctx, partIndex=-2, returnType="json", key="k", **prefix)
    assert dash == {"k": "toys-kids"}
    classes = get(
        "active_tab_html_parse",
        online,
        ctx,
        category="class",
        class_multiObject_child={"separator": {"0": "start", "1": "end"}},
        class_singleObject={"date": "time", "deep": "shadow", "missing": "none"},
        **prefix,
    )
    # The separator's own text nodes; an element inside an open shadow root, as Playwright finds it.
    assert classes == {"start": "SEA", "end": "NYC", "time": "Sat, Jan 05", "shadow": "in shadow", "none": ""}
    xpath = {"//h2[@data-automation='geo']": "city", "//h3": "none"}
    assert get("active_tab_html_parse", online, ctx, category="xpath", xpathObject=xpath, **prefix) == {
        "city": "New York City Hotels",
        "none": "",
    }
    form = {"//input[@id='name']": "name", "//h2": "not_an_input"}
    assert get("active_tab_html_parse", online, ctx, category="input", inputObject=form, **prefix) == {
        "name": "Ann",
        "not_an_input": "",
    }
    listing = get(
        "active_tab_html_parse",
        online,
        ctx,
        category="class&url",
        class_multiObject_li={"pmpSearch_breadcrumb": ["Spider-Man", "Toys", "Kids"]},
        url_include_expected_multichoice={"S=4": "Price Low-High"},
        **prefix,
    )
    assert listing == {"spider-man": True, "toys": True, "is_other_exist": False, "price low-high": True}
    expected = {
        "expected": {"spider-man": True, "toys": True, "price low-high": True, "is_other_exist": False}
    }
    assert METRICS.get("check_direct_json_object").fn(listing, expected) == 1.0
    # OSWorld's default https://www. names no open tab here: no page, an empty answer.
    assert (
        get(
            "active_tab_html_parse",
            online,
            ctx,
            category="xpath",
            xpathObject=xpath,
            goto_prefix="https://www.",
        )
        == {}
    )


def test_page_info_loads_the_url_in_a_fresh_context(online, ctx):
    SETUP_STEPS.get("chrome_open_tabs")(online, ctx, urls_to_open=["http://www.shop.test/echo"])
    assert "COOKIE:session=abc123" in get("active_tab_info", online, ctx)["content"]
    fresh = get("page_info", online, ctx, url="http://www.shop.test/echo")
    # Playwright's browser.new_page() is a new context: the profile's cookie is not sent.
    assert (fresh["title"], fresh["url"]) == ("Echo", "http://www.shop.test/echo")
    assert "<p>COOKIE:</p>" in fresh["content"]
    before = {t["url"] for t in get("open_tabs_info", online, ctx)}
    assert "http://www.shop.test/echo" in before and len(before) == 2  # the fresh tab is gone again


def test_pdf_from_url_prints_the_page(online, ctx):
    path = get("pdf_from_url", online, ctx, path="http://www.shop.test/article", dest="article.pdf")
    assert path == str(ctx.work_dir / "article.pdf")
    data = Path(path).read_bytes()
    assert data.startswith(b"%PDF-") and len(data) > 1000
    text = pdf_text(data)
    assert "Planning" in text and "Task decomposition with a memory." in text


def test_history_and_cookies_from_the_profile_files(online, ctx):
    # Chromium writes History and Cookies in batches (every 10 and 30 s) while it
    # runs, as it did during an OSWorld episode before the getters read them.
    wanted = {"http://www.shop.test/cookie", SHOP_URL, "http://www.shop.test/echo"}
    visited = wait_until(
        lambda: (
            (rows := get("history", online, ctx, dest="history.sqlite"))
            and wanted <= {r[0] for r in rows}
            and rows
        ),
        90,
        "Chromium to commit its history",
    )
    assert all(
        isinstance(row[2], int) and row[2] > 0 for row in visited
    )  # Chromium's microseconds since 1601
    assert {row[1] for row in visited if row[0] == SHOP_URL} == {"Shop"}
    assert (ctx.work_dir / "history.sqlite").is_file()
    cookies = wait_until(
        lambda: get("cookie_data", online, ctx, dest="Cookies"), 90, "Chromium to store the cookie"
    )
    assert any("www.shop.test" in row and "session" in row for row in cookies)
    online.execute(["pkill", "chrome"])
    wait_until(lambda: online.execute(["pgrep", "-x", "chromium"]).returncode == 1, 60, "Chromium to exit")
    # No Chromium left: page_info answers as OSWorld's after its retries.
    gone = get("page_info", online, ctx, url="http://www.shop.test/echo")
    assert gone == {"title": "Connection failed", "url": "http://www.shop.test/echo", "content": ""}


def test_a_profile_file_that_is_no_database_reads_as_none(online, ctx):
    online.upload_file("/home/user/.config/chromium/Default/Cookies", b"not a database")
    assert get("cookie_data", online, ctx, dest="Cookies") is None
    online.execute(["rm", "-f", "/home/user/.config/chromium/Default/History"])
    assert get("history", online, ctx, dest="history.sqlite") is None


def test_shortcuts_on_desktop(online, ctx):
    entry = "[Desktop Entry]\nType=Link\nName=Shop\nURL=http://www.shop.test/\n"
    online.upload_file("/home/user/Desktop/Shop.desktop", entry.encode())
    online.upload_file("/home/user/Desktop/notes.txt", b"x")
    assert get("shortcuts_on_desktop", online, ctx) == {"Shop.desktop": entry}

"""Chromium's DevTools endpoint inside the desktop, for setup steps and getters.

OSWorld's controller reaches Chromium's ``--remote-debugging-port`` (1337) over the
VM's network with Playwright. The sandbox's loopback is not reachable from the host,
so the same requests are made by a short stdlib script run inside the desktop as the
user (:data:`_SCRIPT`, ``python3 -I``: no user site, no ``PYTHON*`` variables, no
proxy), the way the agent's own request would go. The script speaks DevTools' HTTP
API for the tab list, opening and closing tabs, and a minimal WebSocket client for
``Runtime.evaluate`` (a page's title, url, load state, visibility and HTML, or any
expression a getter reads a page with) and, on the browser's own socket, for loading
a url in a fresh browser context (``Target.createBrowserContext``: Playwright's
``browser.new_page()``) to read or print it (``Page.printToPDF``).

Trust: Chromium and its port belong to the user, exactly as in OSWorld's VM (an
agent that serves its own "DevTools" on 1337 answers for Chromium there too); the
interpreter is ``/usr/bin/python3`` from the read-only system, never found on PATH.
Because the reader runs as the user, whatever goes wrong on its side (an endpoint
answering nonsense, the reader killed) reads as "no Chromium answered", the value
OSWorld's getters return when Playwright cannot connect. Were it an evaluator error,
an agent could turn any failed Chromium episode into a crash, which the trainer
drops instead of scoring 0.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from osworld_mcp_env.backends.base import Desktop
from osworld_mcp_env.errors import DesktopError

logger = logging.getLogger(__name__)

DEVTOOLS_PORT = 1337
PYTHON = "/usr/bin/python3"

_SCRIPT = r"""
import base64, json, os, socket, struct, sys, time, urllib.parse, urllib.request

PORT, OP, ARGS = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
BASE = "http://127.0.0.1:%d" % PORT
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
PAGE = ("JSON.stringify([document.title, location.href, document.readyState, document.visibilityState, "
        "(document.doctype ? new XMLSerializer().serializeToString(document.doctype) : '') + "
        "(document.documentElement ? document.documentElement.outerHTML : '')])")


def http(path, method="GET"):
    with OPENER.open(urllib.request.Request(BASE + path, method=method), timeout=10) as r:
        body = r.read().decode("utf-8", "replace")
    try:
        return json.loads(body)
    except ValueError:
        return body


def pages():
    return [t for t in http("/json/list") if t.get("type") == "page"]


def up(deadline):
    while True:
        try:
            http("/json/version")
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)


def recv_exact(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise OSError("DevTools closed the WebSocket")
        data += chunk
    return data


class Session:
    # One DevTools WebSocket (a page's or the browser's): commands in order, events skipped.

    def __init__(self, ws_url, timeout=10):
        path = urllib.parse.urlsplit(ws_url).path
        self.sock = socket.create_connection(("127.0.0.1", PORT), timeout=timeout)
        self.next_id = 0
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
                           "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
                           % (path, PORT, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += recv_exact(self.sock, 1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            self.sock.close()
            raise OSError("no WebSocket: " + head.split(b"\r\n", 1)[0].decode("latin-1"))

    def call(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        body = json.dumps(message).encode()
        n = len(body)
        size = bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 \
            else bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.sock.sendall(bytes([0x81]) + size + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(body)))
        data = b""
        while True:
            b0, b1 = recv_exact(self.sock, 2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", recv_exact(self.sock, 2))[0]
            elif n == 127:
                n = struct.unpack(">Q", recv_exact(self.sock, 8))[0]
            data += recv_exact(self.sock, n)
            if not b0 & 0x80:
                continue
            reply = json.loads(data.decode("utf-8", "replace"))
            data = b""
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise OSError("%s: %s" % (method, reply["error"].get("message")))
                return reply.get("result", {})

    def evaluate(self, expression, session=None):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)
        return result.get("result", {}).get("value")

    def close(self):
        self.sock.close()


def evaluate(target, expression):
    session = Session(target.get("webSocketDebuggerUrl")
                      or "ws://127.0.0.1:%d/devtools/page/%s" % (PORT, target["id"]))
    try:
        return session.evaluate(expression)
    finally:
        session.close()


def page_state(target):
    try:
        title, href, ready, visibility, html = json.loads(evaluate(target, PAGE))
    except (OSError, ValueError, TypeError) as exc:
        return {"id": target["id"], "title": target.get("title", ""), "url": target.get("url", ""),
                "ready": "", "visible": None, "content": "", "error": str(exc)}
    return {"id": target["id"], "title": title, "url": href, "ready": ready,
            "visible": visibility == "visible", "content": html}


def loaded(target, deadline, blank_ok=True):
    # A new tab is about:blank, "complete", until its navigation commits.
    while True:
        state = page_state(target)
        done = state["ready"] == "complete" and (blank_ok or state["url"] != "about:blank")
        if done or time.monotonic() > deadline:
            return state
        time.sleep(0.1)


def settled(session, sid, deadline):
    # Playwright's "networkidle", read as state: the document loaded and no new
    # resource fetched for half a second (or the deadline passed).
    probe = ("JSON.stringify([document.readyState, location.href, "
             "performance.getEntriesByType('resource').length])")
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        ready, href, count = json.loads(session.evaluate(probe, sid) or '["", "", 0]')
        if ready == "complete" and href != "about:blank":
            if count != last:
                last, since = count, time.monotonic()
            elif time.monotonic() - since >= 0.5:
                return True
        time.sleep(0.1)
    return False


def visit(url, read, load_s):
    # OSWorld's browser.new_page(): a fresh browser context (no cookies of the profile), closed after.
    browser = Session(http("/json/version")["webSocketDebuggerUrl"], timeout=max(10, load_s + 10))
    context = browser.call("Target.createBrowserContext")["browserContextId"]
    try:
        target = browser.call("Target.createTarget", {"url": "about:blank", "browserContextId": context})
        attached = browser.call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})
        sid = attached["sessionId"]
        navigated = browser.call("Page.navigate", {"url": url}, sid)
        if navigated.get("errorText"):
            return {"error": navigated["errorText"]}
        idle = settled(browser, sid, time.monotonic() + load_s)
        if read == "pdf":
            pdf = browser.call("Page.printToPDF", {"paperWidth": 8.5, "paperHeight": 11, "marginTop": 0,
                                                   "marginBottom": 0, "marginLeft": 0, "marginRight": 0,
                                                   "printBackground": False, "scale": 1}, sid)
            return {"idle": idle, "pdf": pdf["data"]}
        title, href, _ready, _visibility, html = json.loads(browser.evaluate(PAGE, sid))
        return {"idle": idle, "title": title, "url": href, "content": html}
    finally:
        try:
            browser.call("Target.disposeBrowserContext", {"browserContextId": context})
        finally:
            browser.close()


def scrape(url, infos, load_s):
    # OSWorld's info_from_website: a new tab of the profile's own context, each info read
    # after going back to url when a click left it. Raises on what Playwright raises on.
    browser = Session(http("/json/version")["webSocketDebuggerUrl"], timeout=max(10, load_s + 10))
    target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    try:
        sid = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

        def goto(address):
            if browser.call("Page.navigate", {"url": address}, sid).get("errorText"):
                raise OSError("cannot load " + address)
            settled(browser, sid, time.monotonic() + load_s)

        def element(selector, read, attribute=None):
            # Playwright's wait_for_selector(state="attached", 10 s), then one read of it.
            expression = ("(() => { const e = document.querySelector(%s); if (!e) return null; "
                          "return JSON.stringify([%s]); })()"
                          % (json.dumps(selector), {"text": "e.innerText", "attribute": "e.getAttribute(%s)"
                                                    % json.dumps(attribute), "click": "e.click()"}[read]))
            deadline = time.monotonic() + 10
            while True:
                found = browser.evaluate(expression, sid)
                if found is not None:
                    return json.loads(found)[0]
                if time.monotonic() > deadline:
                    raise OSError("no element " + selector)
                time.sleep(0.1)

        goto(url)
        values = []
        for info in infos:
            if browser.evaluate("location.href", sid) != url:
                goto(url)
            action, selector = info.get("action", "inner_text"), info.get("selector")
            if action in ("inner_text", "attribute"):
                chain = [selector]
            elif action in ("click_and_inner_text", "click_and_attribute"):
                chain = list(selector)
            else:
                raise ValueError("unknown action " + str(action))
            for hop in chain[:-1]:
                before = browser.evaluate("location.href", sid)
                element(hop, "click")
                deadline = time.monotonic() + load_s
                while browser.evaluate("location.href", sid) == before and time.monotonic() < deadline:
                    time.sleep(0.1)
                settled(browser, sid, time.monotonic() + load_s)
            if action.endswith("attribute"):
                values.append(element(chain[-1], "attribute", info.get("attribute")))
            else:
                values.append(element(chain[-1], "text"))
        return {"values": values}
    finally:
        try:
            browser.call("Target.closeTarget", {"targetId": target})
        finally:
            browser.close()


def main():
    start = time.monotonic()
    if not up(start + ARGS.get("wait_s", 0)):
        return {"up": False}
    if OP == "tabs":
        deadline = start + ARGS.get("load_s", 0)
        return {"up": True, "tabs": [loaded(t, deadline) for t in pages()]}
    if OP == "open":
        before = pages()
        opened = []
        for i, url in enumerate(ARGS["urls"]):
            target = http("/json/new?" + urllib.parse.quote(url, safe=""), "PUT")
            state = loaded(target, time.monotonic() + ARGS.get("load_s", 0), url == "about:blank")
            opened.append({"url": url, "ready": state["ready"]})
            if i == 0 and before:
                http("/json/close/" + before[-1]["id"])
        return {"up": True, "opened": opened}
    if OP == "close":
        for target_id in ARGS["ids"]:
            http("/json/close/" + urllib.parse.quote(target_id, safe=""))
        # DevTools answers "Target is closing": wait until the tabs are gone.
        deadline = time.monotonic() + 10
        while {t["id"] for t in pages()} & set(ARGS["ids"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        return {"up": True}
    if OP == "evaluate":
        found = [t for t in pages() if t["id"] == ARGS["id"]]
        if not found:
            return {"up": True, "gone": True}
        return {"up": True, "value": evaluate(found[0], ARGS["expression"])}
    if OP == "visit":
        return dict(visit(ARGS["url"], ARGS["read"], ARGS.get("load_s", 0)), up=True)
    if OP == "scrape":
        try:
            return dict(scrape(ARGS["url"], ARGS["infos"], ARGS.get("load_s", 0)), up=True)
        except (OSError, ValueError, TypeError, KeyError) as exc:
            return {"up": True, "error": str(exc)}
    raise SystemExit("unknown op " + OP)


print(json.dumps(main()))
"""


class DevToolsError(DesktopError):
    """The script failed in the desktop, or no DevTools endpoint answered."""


@dataclass(frozen=True)
class Tab:
    """One page target as its document reports it (Playwright's ``page.title()``/``page.url``).

    Attributes:
        id: DevTools target id.
        title: ``document.title``.
        url: ``location.href``.
        ready: ``document.readyState`` ("" when the page did not answer).
        visible: ``document.visibilityState == "visible"``: the tab shown in its window.
        content: Doctype and ``documentElement.outerHTML`` (Playwright's ``page.content()``).
    """

    id: str
    title: str
    url: str
    ready: str
    visible: bool | None
    content: str


def _run(desktop: Desktop, op: str, args: dict[str, Any], timeout: float) -> dict[str, Any]:
    command = [PYTHON, "-I", "-c", _SCRIPT, str(DEVTOOLS_PORT), op, json.dumps(args)]
    done = desktop.execute(command, timeout=timeout)
    if done.returncode != 0:
        raise DevToolsError(f"DevTools {op} failed in the desktop: {done.error.strip()[-800:]}")
    try:
        answer = json.loads(done.output)
    except ValueError as exc:
        raise DevToolsError(f"DevTools {op}: not JSON: {done.output[:200]!r}") from exc
    if not isinstance(answer, dict):
        raise DevToolsError(f"DevTools {op}: not an object: {answer!r}")
    return answer


def tabs(desktop: Desktop, *, wait_s: float = 0.0, load_s: float = 0.0) -> list[Tab] | None:
    """The open pages, or None when no Chromium answers within ``wait_s``.

    ``load_s`` is how long to let pages finish loading (``readyState`` complete) before
    reading them, as OSWorld waits for each page's load before its title. A reader
    that fails or an answer of the wrong shape is None too (see the module's "Trust");
    only a desktop that cannot run the reader at all raises.

    Raises:
        DesktopError: The guest did not run the reader (unreachable, reset).
    """
    try:
        answer = _run(desktop, "tabs", {"wait_s": wait_s, "load_s": load_s}, wait_s + load_s + 60)
        if not answer.get("up"):
            return None
        return [_tab(t) for t in answer["tabs"]]
    except (DevToolsError, KeyError, TypeError, ValueError) as exc:
        logger.warning("DevTools tabs: no usable answer from the user's side: %s", exc)
        return None


def _tab(reported: Mapping[str, Any]) -> Tab:
    """One tab of the reader's answer, its types checked (the answer is the user's to shape)."""
    texts = [reported[key] for key in ("id", "title", "url", "ready", "content")]
    visible = reported["visible"]
    if not all(isinstance(text, str) for text in texts) or visible not in (True, False, None):
        raise TypeError(f"a tab of the wrong shape: {reported!r:.200}")
    tab_id, title, url, ready, content = texts
    return Tab(tab_id, title, url, ready, visible, content)


def open_tabs(desktop: Desktop, urls: Sequence[str], *, wait_s: float, load_s: float) -> list[dict[str, str]]:
    """Opens each url in a new foreground tab, waiting for its load up to ``load_s``.

    After the first url, one tab that was open before is closed (OSWorld closes the
    browser's default tab). Returns ``[{url, ready}]``.

    Raises:
        DevToolsError: No DevTools endpoint answered within ``wait_s``.
    """
    args = {"urls": list(urls), "wait_s": wait_s, "load_s": load_s}
    answer = _run(desktop, "open", args, wait_s + len(urls) * (load_s + 20) + 60)
    if not answer.get("up"):
        raise DevToolsError(f"no DevTools endpoint on port {DEVTOOLS_PORT} after {wait_s:g} s")
    return list(answer["opened"])


def close_tabs(desktop: Desktop, ids: Sequence[str]) -> None:
    """Closes the page targets ``ids`` and waits (up to 10 s) until they are gone."""
    _run(desktop, "close", {"ids": list(ids)}, 60)


def evaluate_in(desktop: Desktop, tab_id: str, expression: str) -> Any:
    """The value ``expression`` evaluates to in the page ``tab_id`` (``returnByValue``).

    None when the tab is gone, no Chromium answers, or the reader fails (the page and
    its port are the user's: see the module's "Trust"); the caller checks the shape.

    Raises:
        DesktopError: The guest did not run the reader (unreachable, reset).
    """
    try:
        answer = _run(desktop, "evaluate", {"id": tab_id, "expression": expression}, 60)
    except DevToolsError as exc:
        logger.warning("DevTools evaluate: no usable answer from the user's side: %s", exc)
        return None
    return answer.get("value") if answer.get("up") else None


@dataclass(frozen=True)
class Visit:
    """A page loaded in a fresh browser context (Playwright's ``browser.new_page()``), then closed.

    Attributes:
        error: Chromium's navigation error (``net::ERR_...``); "" when the page loaded.
        idle: The page settled (loaded, no new resource for 0.5 s) before the deadline.
        title: ``document.title`` ("" for a pdf read or an error).
        url: ``location.href``.
        content: Doctype and ``documentElement.outerHTML``.
        pdf: The page printed (Letter, no margins, no backgrounds: ``page.pdf()``'s defaults).
    """

    error: str = ""
    idle: bool = False
    title: str = ""
    url: str = ""
    content: str = ""
    pdf: bytes | None = None


def visit(desktop: Desktop, url: str, *, read: str, wait_s: float, load_s: float) -> Visit | None:
    """Loads ``url`` in a new tab of a fresh browser context and reads it (``read``: "page" or "pdf").

    None when no Chromium answers within ``wait_s`` or the reader fails (module's "Trust").

    Raises:
        DesktopError: The guest did not run the reader.
    """
    args = {"url": url, "read": read, "wait_s": wait_s, "load_s": load_s}
    try:
        answer = _run(desktop, "visit", args, wait_s + load_s + 60)
        if not answer.get("up"):
            return None
        if answer.get("error"):
            return Visit(error=str(answer["error"]))
        if read == "pdf":
            return Visit(idle=bool(answer["idle"]), pdf=base64.b64decode(answer["pdf"], validate=True))
        texts = [answer[key] for key in ("title", "url", "content")]
        if not all(isinstance(text, str) for text in texts):
            raise TypeError(f"a page of the wrong shape: {answer!r:.200}")
        return Visit(idle=bool(answer["idle"]), title=texts[0], url=texts[1], content=texts[2])
    except (DevToolsError, KeyError, TypeError, ValueError) as exc:
        logger.warning("DevTools visit of %s: no usable answer from the user's side: %s", url, exc)
        return None


def scrape(
    desktop: Desktop, url: str, infos: Sequence[Mapping[str, Any]], *, wait_s: float, load_s: float
) -> list[Any] | None:
    """OSWorld's ``info_from_website`` reads of ``url`` in a new tab of the profile (closed after).

    Each info is ``{action, selector, attribute?}``: ``inner_text`` or ``attribute`` of
    the first element matching ``selector`` (waited for up to 10 s), or the same after
    clicking each selector but the last of a list (``click_and_inner_text``,
    ``click_and_attribute``), going back to ``url`` first when a click left it.
    None when any read fails or no Chromium answers (OSWorld then returns ``backups``).

    Raises:
        DesktopError: The guest did not run the reader.
    """
    args = {"url": url, "infos": list(infos), "wait_s": wait_s, "load_s": load_s}
    try:
        answer = _run(desktop, "scrape", args, wait_s + (len(infos) + 1) * (load_s + 15) + 60)
    except DevToolsError as exc:
        logger.warning("DevTools scrape of %s: no usable answer from the user's side: %s", url, exc)
        return None
    values = answer.get("values")
    if not answer.get("up") or answer.get("error") or not isinstance(values, list):
        logger.warning("DevTools scrape of %s failed: %s", url, answer.get("error", "no Chromium"))
        return None
    return values

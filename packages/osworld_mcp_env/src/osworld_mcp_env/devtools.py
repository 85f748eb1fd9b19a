"""Chromium's DevTools endpoint inside the desktop, for setup steps and getters.

OSWorld's controller reaches Chromium's ``--remote-debugging-port`` (1337) over the
VM's network with Playwright. The sandbox's loopback is not reachable from the host,
so the same requests are made by a short stdlib script run inside the desktop as the
user (:data:`_SCRIPT`, ``python3 -I``: no user site, no ``PYTHON*`` variables, no
proxy), the way the agent's own request would go. The script speaks DevTools' HTTP
API for the tab list, opening and closing tabs, and a minimal WebSocket client for
``Runtime.evaluate`` (a page's title, url, load state, visibility and HTML).

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


def evaluate(target, expression):
    url = urllib.parse.urlsplit(target.get("webSocketDebuggerUrl")
                                or "ws://127.0.0.1:%d/devtools/page/%s" % (PORT, target["id"]))
    s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
    try:
        key = base64.b64encode(os.urandom(16)).decode()
        s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
                   % (url.path, PORT, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += recv_exact(s, 1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise OSError("no WebSocket: " + head.split(b"\r\n", 1)[0].decode("latin-1"))
        body = json.dumps({"id": 1, "method": "Runtime.evaluate",
                           "params": {"expression": expression, "returnByValue": True}}).encode()
        n = len(body)
        size = bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 \
            else bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        s.sendall(bytes([0x81]) + size + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(body)))
        message = b""
        while True:
            b0, b1 = recv_exact(s, 2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", recv_exact(s, 2))[0]
            elif n == 127:
                n = struct.unpack(">Q", recv_exact(s, 8))[0]
            message += recv_exact(s, n)
            if not b0 & 0x80:
                continue
            reply = json.loads(message.decode("utf-8", "replace"))
            message = b""
            if reply.get("id") == 1:
                return reply.get("result", {}).get("result", {}).get("value")
    finally:
        s.close()


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

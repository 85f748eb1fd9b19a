"""``google_chrome``: the running Chromium over its DevTools endpoint (``--remote-debugging-port``).

Pages open through the DevTools HTTP API (``/json/new``), and each call checks the
tab list afterwards. Actions that only exist as keyboard shortcuts (restore tab,
print, bookmark) are sent with ``xdotool`` to the Chromium window; restoring a tab
is verified by the tab count, the others report an unobservable effect.
"""

from __future__ import annotations

import json
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from osworld_mcp_env.mcp_host.namespaces import GOOGLE_CHROME
from osworld_mcp_env.mcp_servers import privileges
from osworld_mcp_env.mcp_servers.config import ServerConfig
from osworld_mcp_env.mcp_servers.effects import ToolOutput, changed, unknown_effect
from osworld_mcp_env.mcp_servers.registry import ToolRegistry


@dataclass
class ChromeApp:
    """The app context of ``google_chrome``: the DevTools endpoint."""

    config: ServerConfig

    def request(self, path: str, method: str = "GET") -> Any:
        """Calls the DevTools HTTP API and returns its JSON."""
        req = urllib.request.Request(f"{self.config.cdp_url}{path}", method=method)
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                body = resp.read().decode("utf-8", "replace")
        except (urllib.error.URLError, OSError) as exc:
            raise ToolError(
                f"Chromium's DevTools endpoint is not reachable at {self.config.cdp_url}: {exc}"
            ) from exc
        try:
            return json.loads(body)
        except json.JSONDecodeError:
            return body

    def tabs(self) -> list[dict[str, Any]]:
        """Open page targets."""
        return [t for t in self.request("/json/list") if t.get("type") == "page"]

    def open(self, url: str) -> ToolOutput:
        """Opens ``url`` in a new tab and verifies the tab exists."""
        before = len(self.tabs())
        target = self.request("/json/new?" + urllib.parse.quote(url, safe=":/?=&#%"), method="PUT")
        if not isinstance(target, dict) or "id" not in target:
            raise ToolError(f"Chromium did not open {url}: {target!r}")
        self.request(f"/json/activate/{target['id']}")
        after = self.tabs()
        ok = any(t.get("id") == target["id"] for t in after)
        return changed(
            f"Opened {url} in a new tab.", int(ok), "tabs", [url], tabs_before=before, tabs_after=len(after)
        )

    def key(self, keys: str) -> None:
        """Sends a key chord to the Chromium window with xdotool."""
        if shutil.which("xdotool") is None:
            raise ToolError("xdotool is not installed; keyboard-only browser actions are unavailable")
        found = privileges.run(
            ["xdotool", "search", "--onlyvisible", "--class", "chromium"], timeout=5
        ).stdout.split()
        if not found:
            raise ToolError("No visible Chromium window")
        privileges.run(
            ["xdotool", "windowactivate", "--sync", found[-1], "key", "--clearmodifiers", keys], timeout=5
        )


@asynccontextmanager
async def _lifespan(config: ServerConfig) -> AsyncIterator[ChromeApp]:
    yield ChromeApp(config)


chrome: ToolRegistry[ChromeApp] = ToolRegistry(GOOGLE_CHROME, _lifespan)


@chrome.tool()
def chrome_open_tabs_setup(app: ChromeApp, url: str) -> ToolOutput:
    """Open a URL in a new tab."""
    if "://" not in url and not url.startswith(("about:", "chrome:")):
        url = "https://" + url
    return app.open(url)


@chrome.tool()
def open_profile_settings(app: ChromeApp) -> ToolOutput:
    """Open chrome://settings/people."""
    return app.open("chrome://settings/people")


@chrome.tool()
def open_password_settings(app: ChromeApp) -> ToolOutput:
    """Open chrome://settings/autofill."""
    return app.open("chrome://settings/autofill")


@chrome.tool()
def open_privacy_settings(app: ChromeApp) -> ToolOutput:
    """Open chrome://settings/privacy."""
    return app.open("chrome://settings/privacy")


@chrome.tool()
def open_appearance_settings(app: ChromeApp) -> ToolOutput:
    """Open chrome://settings/appearance."""
    return app.open("chrome://settings/appearance")


@chrome.tool()
def open_search_engine_settings(app: ChromeApp) -> ToolOutput:
    """Open chrome://settings/search."""
    return app.open("chrome://settings/search")


@chrome.tool()
def delete_browsing_data(app: ChromeApp) -> ToolOutput:
    """Open the Clear-browsing-data dialog (chrome://settings/clearBrowserData)."""
    return app.open("chrome://settings/clearBrowserData")


@chrome.tool()
def open_extensions(app: ChromeApp) -> ToolOutput:
    """Open chrome://extensions."""
    return app.open("chrome://extensions")


@chrome.tool()
def open_bookmarks(app: ChromeApp) -> ToolOutput:
    """Open chrome://bookmarks."""
    return app.open("chrome://bookmarks")


@chrome.tool()
def bring_back_last_tab(app: ChromeApp) -> ToolOutput:
    """Reopen the last closed tab (Ctrl+Shift+T); verified by the tab count."""
    before = len(app.tabs())
    app.key("ctrl+shift+t")
    deadline = time.monotonic() + 2.0
    while (after := len(app.tabs())) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    return changed(f"Tabs {before} -> {after}.", max(after - before, 0), "tabs")


@chrome.tool()
def print(app: ChromeApp) -> ToolOutput:
    """Open the print dialog (Ctrl+P)."""
    app.key("ctrl+p")
    return unknown_effect("Sent Ctrl+P to Chromium; the print dialog is not observable over DevTools.")


@chrome.tool()
def bookmark_page(app: ChromeApp) -> ToolOutput:
    """Bookmark the current page (Ctrl+D)."""
    app.key("ctrl+d")
    return unknown_effect("Sent Ctrl+D to Chromium; the bookmark bubble needs confirming in the GUI.")

"""The project's own sandboxed desktop for the MCP tool tests (helpers; the fixture is in conftest.py).

One :class:`LocalDesktop` with the MCP tool host per test module (the ``sandbox``
fixture, built by :func:`start_sandbox`). Apps start inside it through its wrappers
(``guest/bin``: soffice accepts UNO, vlc serves HTTP, chromium serves DevTools and
keeps its own sandbox); tools are called through
``MCPToolClient(desktop.tool_socket())``, the path the env uses.
Files go in with ``desktop.upload_file`` (owned by the desktop's user) and are read
back on the host through ``/proc/<sandbox pid>/root`` (trusted test code only: the
env itself reads files through the guest, with the user's rights).
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from osworld_mcp_env.backends.local.desktop import LocalDesktop, LocalDesktopConfig
from osworld_mcp_env.mcp_host.client import MCPToolClient, ToolCallResult, ToolErrorCode
from polling import wait_until

INNER_HOME = PurePosixPath("/home/user")

# Run inside the desktop (UNO listens on its private loopback) once ``soffice FILE`` was
# launched, with ``argv[1]`` the file. The office opens the file itself (its command line
# reaches the running instance): loadComponentFromURL over UNO hung now and then, the new
# document's window shown but the call never answering (the office's main thread waiting on
# a futex while the UNO thread spins a nested event loop) until the client went away. Each
# stage goes to stderr, so a timeout says where it hung.
_UNO_PRELUDE = """
import os, sys, time, uno
ctx = uno.getComponentContext()
resolver = ctx.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", ctx)
deadline = time.monotonic() + 45
while True:
    try:
        remote = resolver.resolve("uno:socket,host=127.0.0.1,port=2002;urp;StarOffice.ComponentContext")
        break
    except Exception:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.05)
print("connected", flush=True, file=sys.stderr)
desktop = remote.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", remote)
url = uno.systemPathToFileUrl(sys.argv[1])

def documents():
    found = []
    comps = desktop.getComponents().createEnumeration()
    while comps.hasMoreElements():
        found.append(comps.nextElement())
    return found

def url_of(comp):
    try:
        return comp.getURL()
    except Exception:
        return ""  # not a document (a help window) or already closed

def wait_for(done, exit_code):
    while not done():
        if time.monotonic() > deadline:
            os._exit(exit_code)
        time.sleep(0.1)
"""
# pyuno can crash in interpreter teardown while the bridge is up: both leave without it.
_WAIT_UNTIL_OPEN = (
    _UNO_PRELUDE
    + """
print("waiting for the office to open it", flush=True, file=sys.stderr)
wait_for(lambda: any(url_of(c) == url for c in documents()), 4)
os._exit(0)
"""
)
# Closes every other document once the new one is up (an office left with no document shows
# its Start Center or quits), and only after the desktop settled: closing one document while
# the office still finishes loading the next (view, toolbars, posted events) killed the
# office once in a CI run, the bridge disposed under the enumeration that followed.
_CLOSE_THE_OTHERS = (
    _UNO_PRELUDE
    + """
print("closing the others", flush=True, file=sys.stderr)
for comp in documents():
    if url_of(comp) != url:
        try:
            comp.close(True)
        except Exception:
            pass  # already gone
# close(True) hands a vetoed close to the vetoer, which closes the document later: until
# it has, a tool may still find the old document instead of this one.
wait_for(lambda: all(url_of(c) == url for c in documents()), 5)
os._exit(0)
"""
)


class ToolCaller:
    """Calls the desktop's tools through :class:`MCPToolClient` and unpacks the results."""

    def __init__(self, client: MCPToolClient, *, timeout_s: float = 60.0) -> None:
        self.client = client
        self.timeout_s = timeout_s

    def __call__(self, name: str, **arguments: Any) -> ToolCallResult:
        return self.client.call(name, arguments, timeout_s=self.timeout_s)

    def effect(self, name: str, **arguments: Any) -> dict[str, Any]:
        """Calls a tool that must execute and returns its ``effect``."""
        result = self(name, **arguments)
        assert result.exec_ok, result.text
        return result.effect

    def data(self, name: str, **arguments: Any) -> Any:
        """Calls a read-only tool and returns its ``data``."""
        result = self(name, **arguments)
        assert result.exec_ok, result.text
        assert result.effect["kind"] == "read_only"
        return result.structured["data"]

    def error(self, name: str, **arguments: Any) -> str:
        """Calls a tool that must fail inside the tool and returns the error text."""
        result = self(name, **arguments)
        assert result.error_code == ToolErrorCode.TOOL_ERROR, result
        return result.text


@dataclass
class Sandbox:
    """A running desktop with its tool host, and helpers to move files in and out."""

    desktop: LocalDesktop
    client: MCPToolClient
    call: ToolCaller

    @property
    def home(self) -> Path:
        """The desktop's ``/home/user`` (a tmpfs inside the sandbox) seen from the host."""
        return Path(f"/proc/{self.desktop._sandbox.namespace_pid}/root") / INNER_HOME.relative_to("/")

    def host(self, inner: str | PurePosixPath) -> Path:
        """The host path of a path under ``/home/user`` inside the desktop."""
        return self.home / PurePosixPath(inner).relative_to(INNER_HOME)

    def inner(self, host: Path) -> str:
        """The path inside the desktop of a host path under :attr:`home`."""
        return str(INNER_HOME / host.relative_to(self.home))

    def put(self, name: str, data: bytes) -> str:
        """Writes ``/home/user/<name>`` as the desktop's user; returns that inner path."""
        inner = str(INNER_HOME / name)
        self.desktop.upload_file(inner, data)
        return inner

    def python(self, script: str, *args: str, timeout: float = 60.0) -> None:
        """Runs a Python snippet inside the desktop (its interpreter imports uno)."""
        result = self.desktop.execute(
            [self.desktop.config.guest_python, "-c", script, *args], timeout=timeout
        )
        if not result.ok:
            windows = [f"{w.wm_class}: {w.title}" for w in self.desktop.windows()]
            raise AssertionError(f"{result}; windows: {windows}")

    def open_office(self, inner: str) -> None:
        """Opens ``inner`` in LibreOffice (starting it if needed) and closes every other document."""
        self.desktop.launch(["soffice", "--nologo", inner])
        self.python(_WAIT_UNTIL_OPEN, inner)
        # The office finishes the load after the document is listed (view, toolbars,
        # posted events): closing or tool calls before then race it on a busy machine.
        self.desktop.settle(max_ms=15_000)
        self.python(_CLOSE_THE_OTHERS, inner)
        self.desktop.settle(max_ms=15_000)

    def open_document(self, name: str, data: bytes) -> Path:
        """Writes ``/home/user/<name>``, opens it in LibreOffice and returns its host path."""
        inner = self.put(name, data)
        self.open_office(inner)
        return self.host(inner)

    def pids(self, comm: str) -> list[int]:
        """Host pids of the desktop's processes whose ``/proc/<pid>/comm`` is ``comm``."""
        found = []
        for pid in self.desktop.processes():
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/comm").read_text().strip() == comm:
                    found.append(pid)
        return found

    def signal(self, comm: str, sig: signal.Signals) -> list[int]:
        """Sends ``sig`` to the desktop's processes named ``comm`` (only those: it is our desktop)."""
        pids = self.pids(comm)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        return pids


def start_sandbox(**config: Any) -> Sandbox:
    """Starts a desktop with the MCP tool host and connects a client to it."""
    desktop = LocalDesktop(LocalDesktopConfig(enable_mcp=True, **config))
    try:
        socket = desktop.tool_socket()
        assert socket is not None
        wait_until(lambda: os.path.exists(socket), 30, "the MCP tool host's socket")
        client = MCPToolClient(socket, connect_timeout_s=30)
    except BaseException:
        desktop.close()
        raise
    return Sandbox(desktop=desktop, client=client, call=ToolCaller(client))

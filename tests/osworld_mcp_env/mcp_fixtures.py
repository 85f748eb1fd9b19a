"""A real Xvfb + LibreOffice for the MCP server tests (until the sandboxed local backend exists).

One office per test module (``office`` fixture), started with the same accept string
the desktop's soffice wrapper uses but a private pipe name and a temporary profile,
so parallel runs do not collide. Tools are called through MCP (the SDK's in-memory
``Client``), never by importing the tool function.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from osworld_mcp_env.mcp_servers import ServerConfig, build_server

HAVE_DESKTOP = all(shutil.which(b) for b in ("Xvfb", "soffice"))
needs_desktop = pytest.mark.skipif(
    not HAVE_DESKTOP, reason="needs Xvfb and LibreOffice (tools/setup_debian.sh)"
)

_PROFILE_SEED = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema"
 xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="ShowTipOfTheDay" oor:op="fuse">
<value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="FirstRun" oor:op="fuse">
<value>false</value></prop></item>
<item oor:path="/org.openoffice.Setup/Office"><prop oor:name="ooSetupInstCompleted" oor:op="fuse">
<value>true</value></prop></item>
<item oor:path="/org.openoffice.Office.Impress/Misc/Start"><prop oor:name="EnableWizard" oor:op="fuse">
<value>false</value></prop></item>
</oor:items>
"""


def free_display() -> int:
    """Returns an X display number with no lock file."""
    for n in range(150, 400):
        if not Path(f"/tmp/.X{n}-lock").exists() and not Path(f"/tmp/.X11-unix/X{n}").exists():
            return n
    raise RuntimeError("no free X display")


def free_port() -> int:
    """Returns a free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate: Any, timeout: float, what: str) -> None:
    """Polls ``predicate`` until true or raises after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}")


@dataclass
class Xvfb:
    """A running Xvfb."""

    display: str
    proc: subprocess.Popen[bytes]


def start_xvfb() -> Xvfb:
    """Starts Xvfb on a free display."""
    n = free_display()
    proc = subprocess.Popen(
        ["Xvfb", f":{n}", "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_until(lambda: Path(f"/tmp/.X11-unix/X{n}").exists(), 10, "Xvfb")
    return Xvfb(f":{n}", proc)


@dataclass
class Office:
    """A running LibreOffice with a UNO pipe, and a way to call tools over MCP."""

    config: ServerConfig
    profile: Path
    proc: subprocess.Popen[bytes]
    display: str
    workdir: Path

    def desktop(self) -> Any:
        """Returns a UNO ``Desktop`` of this office (for test setup and read-back)."""
        from osworld_mcp_env.mcp_servers.uno_conn import UnoSession

        return UnoSession(self.config.uno_url, 20).desktop()

    def open(self, path: Path) -> Any:
        """Opens a file visibly (closing other documents first) and returns the component."""
        import uno

        desktop = self.desktop()
        comps = desktop.getComponents().createEnumeration()
        while comps.hasMoreElements():
            comps.nextElement().close(True)
        pv = uno.createUnoStruct("com.sun.star.beans.PropertyValue")
        pv.Name, pv.Value = "Hidden", False
        doc = desktop.loadComponentFromURL(uno.systemPathToFileUrl(str(path)), "_default", 0, (pv,))
        if doc is None:
            raise RuntimeError(f"LibreOffice could not open {path}")
        return doc


def start_office(tmp: Path) -> Office:
    """Starts Xvfb + soffice with a private pipe and profile."""
    xvfb = start_xvfb()
    profile = tmp / "profile"
    (profile / "user").mkdir(parents=True)
    (profile / "user" / "registrymodifications.xcu").write_text(_PROFILE_SEED)
    pipe = f"osworld_uno_test_{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "DISPLAY": xvfb.display, "SAL_USE_VCLPLUGIN": "gen"}
    proc = subprocess.Popen(
        [
            "soffice",
            f"-env:UserInstallation=file://{profile}",
            "--norestore",
            "--nologo",
            "--nodefault",
            f"--accept=pipe,name={pipe};urp;StarOffice.ComponentContext",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    proc.xvfb = xvfb  # type: ignore[attr-defined]
    config = ServerConfig(uno_url=f"uno:pipe,name={pipe};urp;StarOffice.ComponentContext", uno_timeout_s=30)
    workdir = tmp / "work"
    workdir.mkdir()
    return Office(config=config, profile=profile, proc=proc, display=xvfb.display, workdir=workdir)


def stop_office(office: Office) -> None:
    """Terminates soffice (UNO terminate, then SIGKILL of its session) and its Xvfb."""

    def terminate() -> None:
        with contextlib.suppress(Exception):
            office.desktop().terminate()

    threading.Thread(target=terminate, daemon=True).start()
    with contextlib.suppress(subprocess.TimeoutExpired):
        office.proc.wait(timeout=5)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(office.proc.pid, signal.SIGKILL)  # soffice was started in its own session
    office.proc.wait(timeout=5)
    xvfb = office.proc.xvfb.proc  # type: ignore[attr-defined]
    xvfb.terminate()
    try:
        xvfb.wait(timeout=5)
    except subprocess.TimeoutExpired:
        xvfb.kill()
        xvfb.wait(timeout=5)


@pytest.fixture(scope="module")
def office() -> Iterator[Office]:
    """One LibreOffice per test module."""
    if not HAVE_DESKTOP:
        pytest.skip("needs Xvfb and LibreOffice")
    tmp = Path(tempfile.mkdtemp(prefix="mcp-office-"))
    office = start_office(tmp)
    try:
        office.desktop()  # waits for the pipe (UnoSession retries up to 20 s)
        yield office
    finally:
        stop_office(office)
        shutil.rmtree(tmp, ignore_errors=True)


class ToolCaller:
    """Calls tools of one in-process server over MCP (the SDK's in-memory ``Client``)."""

    def __init__(self, server: Any) -> None:
        self.server = server

    def __call__(self, name: str, **arguments: Any) -> Any:
        async def go() -> Any:
            with anyio.fail_after(60):
                async with Client(self.server) as client:
                    return await client.call_tool(name, arguments)

        return anyio.run(go)

    def effect(self, name: str, **arguments: Any) -> dict[str, Any]:
        """Calls a tool that must execute and returns its ``effect``."""
        result = self(name, **arguments)
        assert not result.is_error, result.content[0].text
        return result.structured_content["effect"]

    def data(self, name: str, **arguments: Any) -> Any:
        """Calls a read-only tool and returns its ``data``."""
        result = self(name, **arguments)
        assert not result.is_error, result.content[0].text
        assert result.structured_content["effect"]["kind"] == "read_only"
        return result.structured_content["data"]

    def error(self, name: str, **arguments: Any) -> str:
        """Calls a tool that must fail and returns the error text."""
        result = self(name, **arguments)
        assert result.is_error, result
        return result.content[0].text


def caller_for(namespace: str, config: ServerConfig) -> ToolCaller:
    """Returns a :class:`ToolCaller` for a freshly built server of ``namespace``."""
    return ToolCaller(build_server(namespace, config))

"""MCPToolClient against serve_all (os + a fault namespace, on the host); stdio ClientSession.

The real apps behind the client are tested in the sandboxed desktop (test_mcp_calc.py,
test_env_tools.py); these servers need no app, so they run on the host.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp_fixtures import wait_until
from osworld_mcp_env.mcp_client import MCPToolClient, ToolErrorCode

pytestmark = [pytest.mark.timeout(120)]

# A fault-injection namespace mounted beside the real ones: a tool that hangs and one that crashes.
SERVER_SCRIPT = textwrap.dedent("""
    import sys, time
    from mcp.server.mcpserver import MCPServer
    from osworld_mcp_env.mcp_servers import ServerConfig, serve_all

    faults = MCPServer("faults")

    @faults.tool(name="faults.hang")
    def hang(seconds: float) -> str:
        time.sleep(seconds)
        return "woke"

    @faults.tool(name="faults.crash")
    def crash() -> str:
        raise RuntimeError("boom")

    serve_all(sys.argv[1], ServerConfig(), namespaces=("libreoffice_calc", "os"),
              extra_servers={"faults": faults})
""")


@pytest.fixture(scope="module")
def socket_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("mcp") / "mcp.sock"
    proc = subprocess.Popen([sys.executable, "-c", SERVER_SCRIPT, str(path)])
    try:
        wait_until(path.exists, 30, "the MCP socket")
        yield path
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def client(socket_path: Path) -> Iterator[MCPToolClient]:
    with MCPToolClient(socket_path) as c:
        yield c


def test_lists_tools_per_namespace_with_read_only_hints(client: MCPToolClient) -> None:
    tools = client.list_tools("libreoffice_calc")
    assert len(tools) == 31 and all(name.startswith("libreoffice_calc.") for name in tools)
    assert tools["libreoffice_calc.env_info"].annotations.read_only_hint is True
    assert tools["libreoffice_calc.set_cell_value"].annotations.read_only_hint is False
    assert tools["libreoffice_calc.set_cell_value"].input_schema["required"] == ["cell", "value"]
    assert "os.calculator" in client.list_tools("os")


def test_unknown_tool_and_bad_arguments_dispatch_nothing(client: MCPToolClient) -> None:
    for name in ("libreoffice_calc.no_such_tool", "nonexistent.tool", "computer"):
        r = client.call(name, {})
        assert (r.exec_ok, r.error_code, r.dispatched) == (False, ToolErrorCode.UNKNOWN_TOOL, False)
    for args in ({"cell": "A1"}, {"cell": 5, "value": "x"}, {"cell": "A1", "value": "x", "colour": 1}):
        r = client.call("libreoffice_calc.set_cell_value", args)
        assert (r.error_code, r.dispatched) == (ToolErrorCode.INVALID_ARGUMENTS, False), args
    assert client.call("os.calculator", {"expression": "2*3"}).structured["data"] == 6


def test_tool_error_and_crash_are_tool_errors(client: MCPToolClient) -> None:
    r = client.call("os.calculator", {"expression": "__import__('os')"})
    assert r.error_code == ToolErrorCode.TOOL_ERROR and "allowed" in r.text and r.dispatched
    crash = client.call("faults.crash", {})
    assert crash.error_code == ToolErrorCode.TOOL_ERROR


def test_a_hung_tool_times_out_and_the_server_keeps_working(client: MCPToolClient) -> None:
    r = client.call("faults.hang", {"seconds": 5}, timeout_s=0.5)
    assert r.error_code == ToolErrorCode.TIMEOUT and 400 < r.latency_ms < 2000
    assert client.call("os.calculator", {"expression": "1+1"}).structured["data"] == 2
    assert client.call("faults.hang", {"seconds": 0}, timeout_s=5).exec_ok


def test_stdio_server_with_the_sdks_client_session() -> None:
    """The standalone server speaks stdio to the SDK's own ClientSession."""
    exe = Path(sys.executable).with_name("osworld-mcp-server")
    params = StdioServerParameters(command=str(exe), args=["os", "--stdio"], env=dict(os.environ))

    async def go() -> None:
        with anyio.fail_after(60):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                tools = (await session.list_tools()).tools
                assert {"os.calculator", "os.search_files"} <= {t.name for t in tools}
                r = await session.call_tool("os.calculator", {"expression": "6*7"})
                assert not r.is_error and r.structured_content["data"] == 42
                assert r.structured_content["effect"]["kind"] == "read_only"
                r = await session.call_tool("os.nope", {})
                assert r.is_error

    anyio.run(go)

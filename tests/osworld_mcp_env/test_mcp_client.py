"""serve_all on a Unix socket with the host-side MCPToolClient; a stdio server under ClientSession."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import anyio
import openpyxl
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp_fixtures import Office, office, wait_until  # noqa: F401
from osworld_mcp_env.mcp_client import MCPToolClient, ToolErrorCode
from osworld_mcp_env.mcp_servers.uno_conn import CALC, UnoSession

pytestmark = [pytest.mark.desktop, pytest.mark.timeout(120)]

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

    serve_all(sys.argv[1], ServerConfig(uno_url=sys.argv[2]), namespaces=("libreoffice_calc", "os"),
              extra_servers={"faults": faults})
""")


@pytest.fixture(scope="module")
def socket_path(office: Office) -> Iterator[Path]:  # noqa: F811
    path = office.workdir / "mcp.sock"
    proc = subprocess.Popen([sys.executable, "-c", SERVER_SCRIPT, str(path), office.config.uno_url])
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


@pytest.fixture
def book(office: Office) -> Path:  # noqa: F811
    wb = openpyxl.Workbook()
    wb.active.append(["a", 1])
    path = office.workdir / "client.xlsx"
    wb.save(path)
    office.open(path)
    return path


def test_lists_tools_per_namespace_with_read_only_hints(client: MCPToolClient) -> None:
    tools = client.list_tools("libreoffice_calc")
    assert len(tools) == 31 and all(name.startswith("libreoffice_calc.") for name in tools)
    assert tools["libreoffice_calc.env_info"].annotations.read_only_hint is True
    assert tools["libreoffice_calc.set_cell_value"].annotations.read_only_hint is False
    assert tools["libreoffice_calc.set_cell_value"].input_schema["required"] == ["cell", "value"]
    assert "os.calculator" in client.list_tools("os")


def test_call_reports_effect_and_zero_effect(client: MCPToolClient, book: Path) -> None:
    r = client.call("libreoffice_calc.set_cell_value", {"cell": "B2", "value": "7"})
    assert r.exec_ok and r.effect["count"] == 1 and r.changed is True and r.error_code is None
    again = client.call("libreoffice_calc.set_cell_value", {"cell": "B2", "value": "7"})
    assert again.exec_ok and again.effect["kind"] == "none" and again.changed is False
    assert client.call("libreoffice_calc.save").effect["unit"] == "bytes"
    assert openpyxl.load_workbook(book).active["B2"].value == 7


def test_unknown_tool_and_bad_arguments_dispatch_nothing(client: MCPToolClient, book: Path) -> None:
    for name in ("libreoffice_calc.no_such_tool", "nonexistent.tool", "computer"):
        r = client.call(name, {})
        assert (r.exec_ok, r.error_code, r.dispatched) == (False, ToolErrorCode.UNKNOWN_TOOL, False)
    for args in ({"cell": "A1"}, {"cell": 5, "value": "x"}, {"cell": "A1", "value": "x", "colour": 1}):
        r = client.call("libreoffice_calc.set_cell_value", args)
        assert (r.error_code, r.dispatched) == (ToolErrorCode.INVALID_ARGUMENTS, False), args
    assert client.call("libreoffice_calc.get_column_data", {"column_name": "A"}).structured["data"] == ["a"]


def test_tool_error_and_crash_are_tool_errors(client: MCPToolClient, book: Path) -> None:
    r = client.call("libreoffice_calc.rename_sheet", {"old_name": "Nope", "new_name": "x"})
    assert r.error_code == ToolErrorCode.TOOL_ERROR and "Nope" in r.text and r.dispatched
    crash = client.call("faults.crash", {})
    assert crash.error_code == ToolErrorCode.TOOL_ERROR


def test_a_hung_tool_times_out_and_the_desktop_keeps_working(client: MCPToolClient, book: Path) -> None:
    r = client.call("faults.hang", {"seconds": 5}, timeout_s=0.5)
    assert r.error_code == ToolErrorCode.TIMEOUT and 400 < r.latency_ms < 2000
    assert client.call("libreoffice_calc.set_cell_value", {"cell": "C1", "value": "after"}).exec_ok
    assert client.call("os.calculator", {"expression": "1+1"}).structured["data"] == 2
    assert client.call("faults.hang", {"seconds": 0}, timeout_s=5).exec_ok


def test_stdio_server_with_the_sdks_client_session(office: Office, book: Path) -> None:  # noqa: F811
    exe = Path(sys.executable).with_name("osworld-mcp-server")
    params = StdioServerParameters(
        command=str(exe),
        args=["libreoffice_calc", "--stdio"],
        env={**os.environ, "OSWORLD_UNO_URL": office.config.uno_url},
    )

    async def go() -> None:
        with anyio.fail_after(60):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                tools = (await session.list_tools()).tools
                assert {t.name for t in tools} >= {
                    "libreoffice_calc.set_cell_value",
                    "libreoffice_calc.env_info",
                }
                r = await session.call_tool(
                    "libreoffice_calc.set_cell_value", {"cell": "D4", "value": "via stdio"}
                )
                assert not r.is_error and r.structured_content["effect"]["targets"] == ["D4"]
                r = await session.call_tool("libreoffice_calc.nope", {})
                assert r.is_error

    anyio.run(go)
    doc = UnoSession(office.config.uno_url).document(CALC)
    assert doc.getSheets().getByIndex(0).getCellRangeByName("D4").getString() == "via stdio"

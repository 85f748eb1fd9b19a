"""MCPToolClient against serve_all (os + a fault namespace, on the host); stdio ClientSession.

The real apps behind the client are tested in the sandboxed desktop (test_mcp_calc.py,
test_env_tools.py); these servers need no app, so they run on the host.
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from osworld_mcp_env.mcp_host.client import MCPToolClient, ToolCallResult, ToolErrorCode
from polling import wait_until

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


# ----------------------------------------------------------------------------- a host that dies


class ToolHost:
    """A ``serve_all`` process of the os namespace that a test may kill, stop and restart."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.path.unlink(missing_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "osworld_mcp_env.mcp_servers.cli", "os", "--uds", str(self.path)]
        )
        wait_until(self.path.exists, 60, "the MCP socket")

    def signal(self, sig: signal.Signals) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, sig)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=10)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.signal(signal.SIGCONT)
            self.kill()


@pytest.fixture
def host(tmp_path: Path) -> Iterator[ToolHost]:
    h = ToolHost(tmp_path / "mcp.sock")
    h.start()
    try:
        yield h
    finally:
        h.close()


def calc(client: MCPToolClient, expression: str, timeout_s: float = 60.0) -> ToolCallResult:
    return client.call("os.calculator", {"expression": expression}, timeout_s=timeout_s)


def test_arguments_that_are_not_json_text_are_refused_and_the_session_lives_on(host: ToolHost) -> None:
    """A lone surrogate once killed the session for the rest of the env's life."""
    deep: dict[str, object] = {"expression": "1"}
    for _ in range(1000):
        deep = {"a": deep}
    with MCPToolClient(host.path) as client:
        assert calc(client, "1+1").exec_ok
        for args in ({"expression": "\ud800"}, {"expression": float("nan")}, {"expression": "1", "x": deep}):
            r = client.call("os.calculator", args)
            assert (r.error_code, r.dispatched) == (ToolErrorCode.INVALID_ARGUMENTS, False), r
        big = client.call("os.calculator", {"expression": "1" * 5_000_000})
        assert (big.error_code, big.dispatched) == (ToolErrorCode.PAYLOAD_TOO_LARGE, False)
        assert len(big.text) < 300
        assert [calc(client, "2+2").structured["data"] for _ in range(3)] == [4, 4, 4]


def test_a_result_with_a_name_that_is_not_utf8_does_not_break_the_session(
    host: ToolHost, tmp_path: Path
) -> None:
    (tmp_path / "files").mkdir()
    Path(os.fsdecode(os.fsencode(tmp_path / "files") + b"/bad\xff.txt")).touch()
    with MCPToolClient(host.path) as client:
        r = client.call("os.search_files", {"keyword": "bad", "root_dir": str(tmp_path / "files")})
        assert r.exec_ok and r.structured["data"] == [str(tmp_path / "files" / "bad\ufffd.txt")]
        assert calc(client, "3*3").structured["data"] == 9


def test_the_calculator_bomb_is_a_tool_error(host: ToolHost) -> None:
    with MCPToolClient(host.path) as client:
        for bomb in ("((10**1000)**1000)**1000", "-" * 100_000 + "1", "9**9**9**9", "2**(2**64)"):
            r = calc(client, bomb, timeout_s=30)
            assert r.error_code == ToolErrorCode.TOOL_ERROR and "MemoryError" not in r.text, r
        assert calc(client, "10**999").exec_ok


def test_a_killed_host_is_a_desktop_error_and_a_restarted_one_is_used_again(host: ToolHost) -> None:
    with MCPToolClient(host.path) as client:
        assert calc(client, "1+1").exec_ok
        host.kill()
        for _ in range(2):  # the dropped connection, then the refused reconnect
            r = calc(client, "1+1", timeout_s=20)
            assert r.error_code == ToolErrorCode.DESKTOP_ERROR, r
        host.start()
        assert calc(client, "2+3").structured["data"] == 5


def test_a_host_restarted_between_calls_is_reconnected_within_the_call(host: ToolHost) -> None:
    """The old session is unknown to the new host (404): nothing ran, so the call is sent again."""
    with MCPToolClient(host.path) as client:
        assert calc(client, "1+1").exec_ok
        host.kill()
        host.start()
        assert calc(client, "4+4").structured["data"] == 8


def test_a_stopped_host_times_out_within_the_deadline_and_serves_after_it_resumes(host: ToolHost) -> None:
    with MCPToolClient(host.path) as client:
        assert calc(client, "1+1").exec_ok
        host.signal(signal.SIGSTOP)
        started = time.monotonic()
        r = calc(client, "1+1", timeout_s=2)
        waited = time.monotonic() - started
        assert r.error_code == ToolErrorCode.TIMEOUT and r.dispatched
        assert waited < 2 + 1.0, f"the call took {waited:.1f} s for a 2 s deadline"
        host.signal(signal.SIGCONT)
        assert calc(client, "5+5").structured["data"] == 10


def test_a_stopped_host_times_out_while_connecting_too(host: ToolHost) -> None:
    host.signal(signal.SIGSTOP)
    with MCPToolClient(host.path) as client:
        started = time.monotonic()
        r = calc(client, "1+1", timeout_s=2)
        assert r.error_code == ToolErrorCode.TIMEOUT and time.monotonic() - started < 3.0
        host.signal(signal.SIGCONT)
        assert calc(client, "1+1").exec_ok


def test_a_missing_socket_is_a_desktop_error_at_once_not_a_timeout(host: ToolHost) -> None:
    with MCPToolClient(host.path) as client:
        host.kill()
        host.path.unlink()
        started = time.monotonic()
        r = calc(client, "1+1", timeout_s=30)
        assert (r.error_code, r.dispatched) == (ToolErrorCode.DESKTOP_ERROR, False), r
        assert time.monotonic() - started < 10, "no waiting for a socket that is gone"
    with MCPToolClient(host.path) as fresh:
        r = calc(fresh, "1+1", timeout_s=30)
        assert (r.error_code, r.dispatched) == (ToolErrorCode.DESKTOP_ERROR, False), r


def _threads_and_fds() -> tuple[int, int]:
    return threading.active_count(), len(os.listdir("/proc/self/fd"))


def test_a_client_dropped_without_close_leaves_no_thread_or_descriptor(host: ToolHost) -> None:
    gc.collect()
    before = _threads_and_fds()
    client = MCPToolClient(host.path)
    assert calc(client, "1+1").exec_ok
    assert client.list_tools("os")
    assert _threads_and_fds() > before
    del client
    gc.collect()
    wait_until(lambda: _threads_and_fds() == before, 30, f"threads and fds back to {before}")

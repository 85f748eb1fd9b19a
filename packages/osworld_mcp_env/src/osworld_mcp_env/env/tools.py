"""The env's text tools: a desktop's MCP client, the focused app's catalog, and a step's tool or bash call.

:func:`run_tool` carries out a :class:`~osworld_mcp_env.actions.ToolCall` for
:meth:`~osworld_mcp_env.env.core.OSWorldMCPEnv.step`: an MCP call through the
desktop's :class:`ToolCatalog`, or (``enable_bash``) a shell command, each within
what is left of the step's deadline and recorded as ``info["tool_call"]``.

The catalog shown with each observation follows the focused window: its
``WM_CLASS`` goes through :mod:`osworld_mcp_env.mcp_host.apps` to an app and its
namespaces; an app without tools gets an explicit empty list, never every tool.

Every wait here (the tool host's socket appearing, listing a namespace) is bounded
by the step's :func:`~osworld_mcp_env.deadline.deadline` scope, so a tool host that
is stopped or gone costs a step its own deadline, not 20 s more. The socket is
waited for only until it first appears: once seen, a missing socket was removed
(a tmp cleaner on a long run) and will not come back, so a call fails at once
(``desktop_error``) and the next reset replaces the tool host (the guest refuses
its fast reset, :meth:`~osworld_mcp_env.guest.state.Guest.unhealthy_core`).
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import TYPE_CHECKING, Any

from osworld_mcp_env.actions import BASH, ToolCall, parse_bash
from osworld_mcp_env.backends.base import Desktop
from osworld_mcp_env.deadline import budget
from osworld_mcp_env.env.faults import desktop_fault
from osworld_mcp_env.errors import ActionError, DesktopError, ErrorCode
from osworld_mcp_env.info import StepInfo, ToolCallRecord, ToolSchema
from osworld_mcp_env.mcp_host.apps import app_namespaces
from osworld_mcp_env.mcp_host.client import MCPToolClient, ToolCallResult
from osworld_mcp_env.mcp_host.namespaces import AX
from osworld_mcp_env.mcp_servers.catalog import NAMESPACES
from osworld_mcp_env.text import truncate

if TYPE_CHECKING:
    from osworld_mcp_env.env.config import EnvConfig

SOCKET_WAIT_S = 20.0
PYAUTOGUI_GRID_ENV = "OSWORLD_PYAUTOGUI_GRID"  # guest/coordinate_grid/sitecustomize.py reads it
AX_ACT = f"{AX.name}.act"
AX_ANSWER_RESERVE_S = 2.0  # of a step's deadline, kept for ax.act's answer after its waits
LIST_TIMEOUT_S = 10.0


class ToolCatalog:
    """The MCP client of one running desktop plus the per-app tool lists it shows.

    Args:
        socket_path: The desktop's MCP socket (``Desktop.tool_socket()``).
        desktop: The desktop; its ``generation`` tells when the sandbox was replaced.
    """

    def __init__(self, socket_path: str, desktop: Desktop, *, ax_tools: bool = False) -> None:
        self.socket_path = socket_path
        self.ax_tools = ax_tools
        self._generation = desktop.generation
        self._client = MCPToolClient(socket_path)
        self._schemas: dict[str, list[ToolSchema]] = {}
        self._read_only: dict[str, bool] = {}
        self._socket_seen = False  # once it was there, a missing socket is gone for good

    def serves(self, socket_path: str | None, desktop: Desktop) -> bool:
        """True while this client still talks to ``desktop``'s current tool host."""
        return socket_path == self.socket_path and desktop.generation == self._generation

    def _wait_for_socket(self) -> None:
        # The tool host starts beside the guest server and listens ~1 s later.
        if self._socket_seen:
            if not os.path.exists(self.socket_path):
                raise DesktopError(f"The MCP tool host's socket {self.socket_path} was removed.")
            return
        wait = budget(SOCKET_WAIT_S)
        deadline = time.monotonic() + wait
        while not os.path.exists(self.socket_path):
            if time.monotonic() > deadline:
                raise DesktopError(f"The MCP tool host did not open {self.socket_path} in {wait:g} s.")
            time.sleep(0.02)
        self._socket_seen = True

    def namespace_tools(self, namespace: str) -> list[ToolSchema]:
        """The tool schemas of one namespace as the model sees them."""
        if namespace not in self._schemas:
            self._wait_for_socket()
            tools = self._client.list_tools(namespace, timeout_s=budget(LIST_TIMEOUT_S))
            self._schemas[namespace] = [
                ToolSchema(
                    name=tool.name,
                    description=tool.description or "",
                    parameters=tool.input_schema,
                    read_only=bool(tool.annotations and tool.annotations.read_only_hint),
                )
                for tool in tools.values()
            ]
            for schema in self._schemas[namespace]:
                self._read_only[schema["name"]] = schema["read_only"]
        return self._schemas[namespace]

    def for_app(self, app: str) -> list[ToolSchema]:
        """Every tool of the focused app's served namespaces (and ``ax``'s when on); ``[]`` for none."""
        served = [ns for ns in app_namespaces(app) if ns in NAMESPACES]
        if self.ax_tools:
            served.append(AX.name)
        return [tool for ns in served for tool in self.namespace_tools(ns)]

    def is_read_only(self, name: str) -> bool | None:
        """The tool's ``readOnlyHint``, or None for a name never listed."""
        namespace = name.split(".", 1)[0]
        if name not in self._read_only and namespace in NAMESPACES:
            try:
                self.namespace_tools(namespace)
            except DesktopError:
                return None
        return self._read_only.get(name)

    def call(self, name: str, arguments: dict[str, Any], *, timeout_s: float) -> ToolCallResult:
        """Validates and calls a tool; never raises for a bad call."""
        namespace = name.split(".", 1)[0]
        if namespace in NAMESPACES:
            # An unreachable host becomes the client's own error value below.
            with contextlib.suppress(DesktopError):
                self._wait_for_socket()
        return self._client.call(name, arguments, timeout_s=timeout_s)

    def close(self) -> None:
        """Closes the client's sessions and thread."""
        self._client.close()


def run_tool(
    call: ToolCall,
    info: StepInfo,
    *,
    tools: ToolCatalog | None,
    desktop: Desktop,
    config: EnvConfig,
    shown: frozenset[str],
) -> tuple[ActionError | None, str]:
    """Runs one tool call of a step: (the agent's error or None, the text the model reads).

    ``tools``: the episode's tool catalog (None where the desktop serves no tools); ``desktop``
    runs bash and settles after a tool. ``shown``: the tool names the last observation listed
    (``in_catalog`` of the record).
    Never raises for a bad call or a dead desktop: each is an error value.
    """
    if call.name == BASH and config.enable_bash:
        return _run_bash(call, info, desktop=desktop, config=config)
    if tools is None:
        return ActionError(
            ErrorCode.UNKNOWN_TOOL,
            f"No tool named {call.name!r} is available here; GUI actions use name 'computer_use'.",
            {"name": call.name},
        ), ""
    if call.name.split(".", 1)[0] == AX.name and not config.ax_tools:
        return ActionError(
            ErrorCode.UNKNOWN_TOOL,
            f"No tool named {call.name!r} is offered: the ax tools need the env option ax_tools=True.",
            {"name": call.name},
        ), ""
    time_left = budget(config.step_timeout_s)
    if time_left <= 0:
        return ActionError(ErrorCode.TIMEOUT, "No time was left for the tool call; nothing was sent."), ""
    arguments = dict(call.arguments)
    if call.name == AX_ACT and isinstance(arguments.get("deadline_s", 0), int | float):
        # The batch's waits must end inside the step's deadline, with time left to answer.
        left = max(0.1, time_left - AX_ANSWER_RESERVE_S)
        arguments["deadline_s"] = min(float(arguments.get("deadline_s") or left), left)
    result = tools.call(call.name, arguments, timeout_s=time_left)
    info["tool_call"] = ToolCallRecord(
        name=call.name,
        arguments=dict(call.arguments),
        exec_ok=result.exec_ok,
        effect=result.effect,
        read_only=tools.is_read_only(call.name),
        in_catalog=call.name in shown,
        dispatched=result.dispatched,
        returncode=None,
        stderr=None,
        timed_out=False,
        latency_ms=_latency(config, result.latency_ms),
    )
    if result.error_code is not None:
        message = result.text.removeprefix(f"Error [{result.error_code}]: ")
        return ActionError(str(result.error_code), message, {"name": call.name, **result.details}), ""
    # The tool changed the app behind the screen's back: let it repaint before the frame,
    # with the same thresholds as after a GUI action (the guest's defaults).
    try:
        info["timings"] = {"settle_ms": desktop.settle()}
    except DesktopError as exc:
        # The tool ran; a desktop too sick to settle shows in the observation's error.
        info["settle_error"] = desktop_fault(exc).to_dict()
    return None, result.text


def _run_bash(
    call: ToolCall, info: StepInfo, *, desktop: Desktop, config: EnvConfig
) -> tuple[ActionError | None, str]:
    bash = parse_bash(call)
    if isinstance(bash, ActionError):
        return bash, ""
    started = time.perf_counter()
    command = bash.command
    if bash.pyautogui_grid is not None:
        # Read by the desktop's python wrappers (guest/bin) for this command alone.
        command = f"export {PYAUTOGUI_GRID_ENV}={bash.pyautogui_grid}\n{command}"
    try:
        result = desktop.execute(command, shell=True, timeout=float(bash.timeout))
    except DesktopError as exc:
        return desktop_fault(exc), ""
    text = result.output + (f"\n[stderr]\n{result.error}" if result.error else "")
    text = truncate(text, config.bash_output_chars)
    # A command is no listed tool and its effect is unknown (see ToolCallRecord).
    info["tool_call"] = ToolCallRecord(
        name=BASH,
        arguments=dict(call.arguments),
        exec_ok=result.status == "success",
        effect=None,
        read_only=None,
        in_catalog=False,
        dispatched=True,
        returncode=result.returncode,
        stderr=truncate(result.error, config.bash_output_chars),
        timed_out=result.timed_out,
        latency_ms=_latency(config, (time.perf_counter() - started) * 1000),
    )
    if result.timed_out:
        return ActionError(
            ErrorCode.TIMEOUT,
            f"The command ran past its {bash.timeout:g} s timeout or the step's deadline and was killed.",
        ), text
    return None, f"[exit code {result.returncode}]\n{text}"


def _latency(config: EnvConfig, milliseconds: float) -> float | None:
    """A call's wall-clock time for its record, None when timings are off."""
    return milliseconds if config.record_timings else None

"""``ax``: the semantic channel's MCP tools (observe, find, act) over the accessibility worker.

The worker (:mod:`osworld_mcp_env.ax.worker`) runs as the desktop user and is started by
this server through :func:`~osworld_mcp_env.mcp_servers.privileges.start_piped` on first use;
its answers are untrusted (:mod:`osworld_mcp_env.ax.link`, :func:`~osworld_mcp_env.ax.records.parse_records`).
A failed ``act`` is an MCP error result whose structured content carries the code
(``stale_element_ref``, ``ambiguous_target``, ``unsupported_operation``, ``wait_timeout``,
``wait_budget_exhausted``, ``desktop_error``), ``failure_phase``, ``input_events_emitted``,
``stopped_at`` and the completed steps; the env turns it into ``info["error"]``.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from pydantic import Field

from osworld_mcp_env.ax import compact
from osworld_mcp_env.ax.batch import BatchRunner, StepError, parse_steps
from osworld_mcp_env.ax.link import WorkerFault, WorkerLink
from osworld_mcp_env.ax.records import REF_PATTERN, Record, UntrustedAnswer, parse_records
from osworld_mcp_env.mcp_host.namespaces import AX
from osworld_mcp_env.mcp_servers import privileges
from osworld_mcp_env.mcp_servers.config import ServerConfig
from osworld_mcp_env.mcp_servers.effects import Effect, ToolOutput, read
from osworld_mcp_env.mcp_servers.registry import ToolRegistry

OBSERVE_TIMEOUT_S = 20.0
DIFF_LINES = 20


@dataclass
class AxApp:
    """The app context of ``ax``: the worker and the last observation of each scope."""

    link: WorkerLink
    last: dict[str, dict[str, Record]] = field(default_factory=dict)
    last_scope: str | None = None
    generation: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    @asynccontextmanager
    async def lifespan(cls, config: ServerConfig) -> AsyncIterator[AxApp]:
        """Owns the worker for the server's life."""
        app = cls(WorkerLink(privileges.start_piped))
        try:
            yield app
        finally:
            app.link.close()

    def request(self, payload: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """A worker request whose fault is a tool error; observations of a dead worker are forgotten."""
        try:
            reply = self.link.request(payload, timeout_s)
        except WorkerFault as exc:
            raise ToolError(f"desktop_error: {exc}") from exc
        finally:
            if self.link.generation != self.generation:
                self.generation = self.link.generation
                self.last.clear()
                self.last_scope = None
        return reply

    def observe(self, scope: str | None) -> tuple[str | None, list[Record]]:
        """Walks the scope (the focused window when None); remembers it for the next diff."""
        reply = self.request({"cmd": "observe", "scope": scope}, OBSERVE_TIMEOUT_S)
        if not reply["ok"]:
            raise ToolError(f"{reply.get('code')}: {str(reply.get('message'))[:500]}")
        try:
            records = parse_records(reply.get("records"))
        except UntrustedAnswer as exc:
            raise ToolError(f"desktop_error: the accessibility worker's answer was refused ({exc})") from exc
        root = reply.get("root")
        root = root if isinstance(root, str) and any(r.ref == root for r in records) else None
        if root is not None:  # the diff after ax.act compares this root's subtree, by ref
            self.last[root] = {r.ref: r for r in records}
            self.last_scope = root
        return root, records


ax: ToolRegistry[AxApp] = ToolRegistry(AX, AxApp.lifespan)


@ax.tool(read_only=True)
def observe(
    app: AxApp,
    scope: Annotated[
        str | None,
        Field(description="A ref (e17) whose subtree or window to show; default: the focused window."),
    ] = None,
    max_lines: Annotated[int, Field(ge=5, le=2000, description="Lines shown; the rest is counted.")] = 200,
) -> ToolOutput:
    """Compact accessibility view of the focused window (or of a ref's subtree).

    Each element shown carries a ref like [e17] for ax.act and ax.find; refs stay valid while
    their element lives. Grouping wrappers are dropped, toolbars are one line, a repeated
    subtree is shown once. A table shows its visible range and its non-empty visible cells
    (A1[e41]=12); other cells are reached with ax.find(name="C7").
    """
    with app.lock:
        root, records = app.observe(_ref_arg(scope))
    if root is None:
        return read("No focused window with an accessibility tree.", {"elements": 0})
    view = compact.render(records, root, max_lines=max_lines)
    return read(
        f"View of [{root}] ({len(records)} elements):\n{view}", {"root": root, "elements": len(records)}
    )


@ax.tool(read_only=True)
def find(
    app: AxApp,
    role: Annotated[str | None, Field(description="AT-SPI role, e.g. 'push button', 'table cell'.")] = None,
    name: Annotated[
        str | None, Field(description="Part of the name, or a cell address such as 'B3'.")
    ] = None,
    text: Annotated[str | None, Field(description="Part of the element's text or name.")] = None,
    state: Annotated[
        str | None, Field(description="A state it must have, e.g. 'focused', 'checked'.")
    ] = None,
    scope: Annotated[
        str | None, Field(description="A ref to search under; default: the focused window.")
    ] = None,
    limit: Annotated[int, Field(ge=1, le=200)] = 20,
) -> ToolOutput:
    """Refs of elements that match every given field, including those the compact view left out.

    Calc cells are found by address (name='C7', also beyond the visible range) or by text.
    """
    query = {k: v for k, v in {"role": role, "name": name, "text": text, "state": state}.items() if v}
    if not query:
        raise ToolError("give at least one of role, name, text, state")
    with app.lock:
        reply = app.request(
            {"cmd": "find", "scope": _ref_arg(scope), "query": query, "limit": limit}, OBSERVE_TIMEOUT_S
        )
    if not reply["ok"]:
        raise ToolError(f"{reply.get('code')}: {str(reply.get('message'))[:500]}")
    try:
        records = parse_records(reply.get("records"))[:limit]
    except UntrustedAnswer as exc:
        raise ToolError(f"desktop_error: the accessibility worker's answer was refused ({exc})") from exc
    lines = [compact.describe(r) for r in records]
    if not lines:
        return read("No element matches.", {"refs": []})
    return read(f"{len(lines)} match(es):\n" + "\n".join(lines), {"refs": [r.ref for r in records]})


@ax.tool()
def act(
    app: AxApp,
    steps: Annotated[
        list[dict[str, Any]],
        Field(
            description=(
                "Up to 64 steps in order. An operation: {'op': 'press'|'click'|'focus'|'toggle'|"
                "'scroll_into_view'|'select', 'ref': 'e17'}, {'op': 'set_text', 'ref', 'text'}, "
                "{'op': 'set_value', 'ref', 'value': number}, {'op': 'key', 'keys': 'ctrl+s', 'ref'?}, "
                "{'op': 'type', 'text', 'ref'?}. A wait (no input): {'wait': 'window', 'name'}, "
                "{'wait': 'ref', 'ref', 'state'?}, {'wait': 'text', 'text'}, {'wait': 'query', 'role'?, "
                "'name'?, 'text'?, 'state'?}, {'wait': 'stable', 'ms'?}; each wait has 'timeout_s' (10) "
                "and 'optional' (false: a wait not met stops the batch)."
            )
        ),
    ],
    deadline_s: Annotated[
        float | None, Field(gt=0, le=600, description="Set by the env from the step's deadline.")
    ] = None,
) -> ToolOutput:
    """Runs steps on refs in order; every ref is re-checked against its live element before its input.

    A ref that no longer denotes the element it was bound to stops the batch with
    stale_element_ref (no input sent; observe again, never reuse it); two fitting elements give
    ambiguous_target; an operation the element lacks gives unsupported_operation. All waits
    share 60 s. Each step reports delivery, invoked and state_change (confirmed/none/unknown) with
    before/after values; the result lists window changes and a diff against the last ax.observe.
    """
    try:
        parsed = parse_steps(steps)
    except StepError as exc:
        raise ToolError(f"invalid steps: {exc}") from exc
    with app.lock:
        runner = BatchRunner(app.link, deadline_s)
        generation = app.link.generation
        result = runner.run(parsed)
        diff = _diff_with_last(app) if result.error is None or app.link.generation == generation else []
    summary = [f"{s['step']}. {s['what']}: " + _evidence_text(s) for s in result.steps]
    windows = [f"{kind}: {', '.join(items)}" for kind, items in result.windows.items()]
    data = {"steps": result.steps}  # window changes and the diff are lines of the text already
    if result.error is not None:
        return ActFailure.of(result.error, result.stopped_at, summary, windows, diff, data)
    text = "\n".join(
        [f"{len(result.steps)} step(s) done.", *summary, *windows, *(["diff:", *diff] if diff else [])]
    )
    return ToolOutput(message=text, effect=Effect.unknown(steps=len(result.steps)), data=data)


class ActFailure(ToolOutput):
    """A batch that stopped: an MCP error result whose structured content says where and why."""

    error: dict[str, Any]

    @classmethod
    def of(
        cls,
        error: dict[str, Any],
        stopped_at: int | None,
        summary: list[str],
        windows: list[str],
        diff: list[str],
        data: dict[str, Any],
    ) -> ActFailure:
        """The failure of step ``stopped_at`` after the completed steps in ``summary``."""
        emitted = error.get("input_events_emitted")
        said = {
            False: "no input was emitted",
            True: "input was emitted",
            None: "input may have been emitted",
        }[emitted]
        done = f"; steps completed before it: {len(summary)}" if summary else "; no step completed"
        message = f"Stopped at step {stopped_at}: {error['message']} ({said}{done})."
        lines = [message, *summary, *windows, *(["diff:", *diff] if diff else [])]
        full = {**error, "stopped_at": stopped_at, "completed": len(summary)}
        return cls(message="\n".join(lines), effect=Effect.unknown(), data=data, error=full)

    def to_call_result(self) -> CallToolResult:
        """``isError`` with the failure in ``structuredContent.error``."""
        return CallToolResult(
            content=[TextContent(type="text", text=f"Error [{self.error['code']}]: {self.message}")],
            structured_content=self.model_dump(mode="json"),
            is_error=True,
        )


def _diff_with_last(app: AxApp) -> list[str]:
    """The changes, by ref, since the last observation of the last observed scope."""
    scope = app.last_scope
    if scope is None or scope not in app.last:
        return []
    before = app.last[scope]
    try:
        _root, records = app.observe(scope)
    except ToolError:
        return []
    return compact.diff(before, {r.ref: r for r in records}, max_lines=DIFF_LINES)


def _evidence_text(step: dict[str, Any]) -> str:
    parts = [str(step.get("delivery"))]
    if "invoked" in step:
        parts.append("invoked" if step["invoked"] else "not invoked")
    if "state_change" in step:
        parts.append(f"state_change {step['state_change']}")
    if "waited_s" in step:
        parts.append(f"waited {step['waited_s']} s" + (f" -> [{step['found']}]" if step.get("found") else ""))
    if step.get("met") is False:
        parts.append("not met (optional)")
    return ", ".join(parts)


def _ref_arg(value: str | None) -> str | None:
    if not value:
        return None
    ref = value.strip().strip("[]")
    if not REF_PATTERN.match(ref):
        raise ToolError(f"scope must be a ref like 'e17', got {value[:40]!r}")
    return ref


__all__ = ["ActFailure", "AxApp", "act", "ax", "find", "observe"]

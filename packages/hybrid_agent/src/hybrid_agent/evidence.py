"""The one converter from the env's report of a call to the agent's :class:`Evidence`.

The env reports an executed tool call as ``info["tool_call"]``, a
:class:`~osworld_mcp_env.info.ToolCallRecord` (its ``effect`` is the structured
effect object: ``kind``, ``count``, ``unit`` ...), and a refused or failed one as
``info["error"]``. The agent keeps a small typed
:class:`~hybrid_agent.trajectory.Evidence` whose ``effect`` is a count. Only this
module reads those ``info`` keys, through the env's typed view
(:func:`osworld_mcp_env.info.step_info`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from osworld_mcp_env.info import step_info

from hybrid_agent.trajectory import Call, Evidence


def effect_count(effect: Mapping[str, Any] | None) -> int | None:
    """The effect object's count: ``changed`` -> count, ``none``/``read_only`` -> 0, else ``None``.

    A read-only call changed nothing, so it counts 0 (``drop_on_effect`` keeps the frame
    after it); an ``unknown`` effect stays unknown.
    """
    if not effect:
        return None
    kind = effect.get("kind")
    if kind == "changed":
        count = effect.get("count")
        return int(count) if isinstance(count, int) else None
    if kind in ("none", "read_only"):
        return 0
    return None


def evidence_from_info(call: Call, info: Mapping[str, Any]) -> Evidence | None:
    """The evidence of one executed step, from the env's ``info``.

    Args:
        call: The call sent to the env (model space is fine: only the name is read).
        info: The ``info`` dict ``env.step`` returned for it.

    Returns:
        ``None`` for a GUI action; otherwise the evidence of the tool call. A call the env
        refused before dispatch (unknown tool, bad arguments) has ``exec_ok=False`` and the
        env's error code.
    """
    if call.is_gui:
        return None
    typed = step_info(info)
    error = typed.get("error") or {}
    record = typed.get("tool_call")
    if record is None:
        return Evidence(exec_ok=False, error_code=error.get("code") or "not_dispatched")
    effect = record["effect"]
    return Evidence(
        exec_ok=record["exec_ok"] and not error,
        effect=effect_count(effect),
        effect_kind=effect.get("kind") if effect else None,
        read_only=record["read_only"],
        error_code=error.get("code"),
        returncode=record["returncode"],
        stderr=record["stderr"],
        timed_out=record["timed_out"],
    )


def window_changes_from_info(info: Mapping[str, Any]) -> tuple[str, ...]:
    """A GUI step's window changes as lines (``opened: popup ... at (0, 44) 302x607``); () where none.

    The env reports them for GUI actions (``info["window_changes"]``); a step record and
    the metrics read them here, beside the tool calls' evidence.
    """
    changes = step_info(info).get("window_changes") or []
    return tuple(f"{c['change']}: {c['window']}" for c in changes)

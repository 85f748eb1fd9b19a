"""The typed contract of ``info``: what ``env.reset`` and ``env.step`` report beside the observation.

``info`` stays a plain ``dict`` at runtime (Gymnasium's vector envs stack it key
by key), but its keys and their shapes are declared here once, as
:class:`StepInfo`, and every writer (the desktop env, the toy env of
``grpo_trainer``) and reader (the agent's evidence, the rollout, the runner, the
validator) goes through these types. :func:`step_info` gives a reader the typed
view of the dict an env returned.

A tool call, MCP or bash, is reported in one shape, :class:`ToolCallRecord`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict, cast


class ToolSchema(TypedDict):
    """One tool shown with an observation (``info["tools"]``), as the model sees it.

    Attributes:
        name: ``<namespace>.<tool>``, the name a call uses.
        description: What the tool does.
        parameters: The JSON schema of its arguments.
        read_only: The tool declares ``readOnlyHint``: it never changes state.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    read_only: bool


class ToolCallRecord(TypedDict):
    """What the env did with one text-tool call (``info["tool_call"]``), MCP or ``bash``.

    Written for every call handed to its executor: an MCP call that the MCP
    client refused before sending (unknown tool, arguments that fail the tool's
    schema) has one with ``dispatched=False``. A call the env refused first (no
    tool host, invalid bash arguments, no time left, a dead desktop) has only
    ``info["error"]``.

    Attributes:
        name: The tool name (``<namespace>.<tool>`` or ``bash``).
        arguments: The arguments as the agent sent them.
        exec_ok: MCP: the tool ran without error (``isError`` false). Bash: the
            command ran to its end (any exit code; see ``returncode``).
        effect: MCP: the structured effect the tool reported (``kind``:
            ``changed``/``none``/``unknown``/``read_only``, ``count``, ``unit``)
            or None when it reported none. Bash: always None (a shell command's
            effect is unknown).
        read_only: MCP: the tool's ``readOnlyHint``, None for a tool never
            listed. Bash: None (a command may change anything).
        in_catalog: The name was among the tools shown with the last
            observation (``info["tools"]``). Bash: False (never listed there).
        dispatched: The call reached the tool host (MCP) or the desktop (bash,
            always True).
        returncode: Bash: the command's exit code, -1 when it did not exit by
            itself (killed at its timeout, or never started). MCP: None.
        stderr: Bash: what the command wrote to standard error, apart from its
            standard output (cut to ``bash_output_chars``, as the output is), so
            HybridCUA's failure rule can tell ``grep``'s silent exit 1 from an
            error. MCP: None.
        timed_out: Bash: the command was killed at its timeout (a command that
            could not start has ``returncode`` -1 and ``timed_out`` False). MCP: False.
        latency_ms: Wall-clock milliseconds of the call; None when the env's
            ``record_timings`` is off (timings are the one part of ``info`` that
            differs between two runs of the same actions).
    """

    name: str
    arguments: dict[str, Any]
    exec_ok: bool
    effect: dict[str, Any] | None
    read_only: bool | None
    in_catalog: bool
    dispatched: bool
    returncode: int | None
    stderr: str | None
    timed_out: bool
    latency_ms: float | None


class CheckReport(TypedDict):
    """One evaluator check of the episode's end (``info["evaluation"]["checks"]``)."""

    func: str
    score: float
    result_missing: bool
    reason: str | None


class EvaluationReport(TypedDict):
    """The evaluator's verdict at the episode's end (``info["evaluation"]``)."""

    score: float
    checks: list[CheckReport]
    infeasible: bool


class FaultReport(TypedDict):
    """A failure beside the step's own result (``observation_error``, ``tools_error``)."""

    code: str
    message: str


class EvalErrorReport(TypedDict):
    """The evaluator could not run (``info["eval_error"]``): the exception's class and message."""

    type: str
    message: str


class StepInfo(TypedDict, total=False):
    """The ``info`` of ``reset`` and ``step``.

    The desktop env always writes ``step``, ``tools``, ``frame_id`` and
    ``active_window`` (the toy env of ``grpo_trainer`` only ``tools``); the other
    keys appear when they apply. All keys are optional to the type checker so
    that a step can build its ``info`` part by part.

    Attributes:
        step: Steps taken in this episode (0 after ``reset``).
        tools: The tools of the focused app (:class:`ToolSchema`); ``[]`` for an
            app without tools or with MCP off.
        frame_id: Episode-local id of the observation's screenshot (1 after
            ``reset``); a GUI action may cite it (``arguments.frame_id``) so that the
            stale-frame guard can refuse coordinates read from an older layout.
        active_window: Title of the focused window.
        timings: Wall-clock milliseconds of the parts of the call (absent when
            ``record_timings`` is off).
        task_id: ``reset`` only: the task's id.
        desktop_replaced: ``reset`` only: why the desktop was replaced (a dead one).
        action: The validated call as sent (absent when the action was refused).
        error: The agent's mistake or a desktop fault as a value:
            ``ActionError.to_dict()`` (``code``, ``message`` and the error's details).
        tool_call: The text-tool call's record (:class:`ToolCallRecord`).
        settle_error: The tool ran but the desktop could not settle after it
            (``ActionError.to_dict()``).
        evaluation: At the episode's end: the evaluator's verdict.
        eval_error: At the episode's end: the evaluator could not run
            (``type``, ``message``); the reward 0 is then not a score.
        claimed_success: At the end of a ``terminate``: the status the agent claimed.
        observation_error: The screenshot could not be taken (``code``, ``message``);
            the observation shows the last frame.
        tools_error: The tool list could not be read (``code``, ``message``).
        window_changes: After a GUI action on the hybrid guest: the top-level windows it
            opened, closed or moved and a new focus (``{"change", "window"}``, popups
            included: ``guest.layout.window_changes``); absent where the guest cannot say.
        zoom: After a ``zoom``: the screenshot shows ``region`` (``[x1, y1, x2, y2]``, both
            corners included) enlarged ``scale`` times at its top left (``size``: the enlarged
            part, the rest black); ``parent_frame_id`` is the frame the crop was taken from,
            the one a coordinate read on it cites (``osworld_mcp_env.zoom.ZoomView``).
    """

    step: int
    tools: list[ToolSchema]
    frame_id: int
    active_window: str
    timings: dict[str, float]
    task_id: str
    desktop_replaced: str
    action: dict[str, Any]
    error: dict[str, Any]
    tool_call: ToolCallRecord
    settle_error: dict[str, Any]
    evaluation: EvaluationReport
    eval_error: EvalErrorReport
    claimed_success: bool
    observation_error: FaultReport
    tools_error: FaultReport
    window_changes: list[dict[str, str]]
    zoom: dict[str, Any]


def step_info(info: Mapping[str, Any]) -> StepInfo:
    """The typed view of an ``info`` dict an env returned (no copy, no check).

    Readers take ``info`` from Gymnasium as ``dict[str, Any]``; this is where it
    gets its declared shape, so a key read elsewhere is checked by the type checker.
    """
    return cast(StepInfo, info)


__all__ = [
    "CheckReport",
    "EvalErrorReport",
    "EvaluationReport",
    "FaultReport",
    "StepInfo",
    "ToolCallRecord",
    "ToolSchema",
    "step_info",
]

"""The agent-side record of a trajectory: frames, calls, evidence, steps.

These are the inputs of the context builder (Eq. 1) and the retention rules
(Eq. 2). They hold exactly what the study's agent keeps per step: the
screenshot it saw, the tool result relayed to it, its raw output, the call
that was executed and the evidence the environment returned for it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from PIL import Image

from hybrid_agent.step_kind import StepKind, classify_step, cli_step_failed

GUI_TOOL_NAME = "computer_use"


@dataclass(frozen=True)
class Call:
    """One call as the model emits it: ``{"name": ..., "arguments": {...}}``.

    Model space: GUI coordinates are still on the model's grid (see ``coords``). The
    env's typed forms (``osworld_mcp_env.actions.GuiAction`` / ``ToolCall``) are made
    from it after coordinate mapping.

    Attributes:
        name: ``computer_use`` for GUI actions, ``<namespace>.<tool>`` for MCP tools.
        arguments: The JSON arguments object.
    """

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    @property
    def is_gui(self) -> bool:
        """True for a ``computer_use`` call (GUI action), False for an MCP tool call."""
        return self.name == GUI_TOOL_NAME

    def to_json(self) -> str:
        """Returns the canonical one-line JSON the context shows for this call.

        Canonical (fixed key order, no ASCII escaping) so that the same call is
        rendered byte-identically in rollouts and in training replays.
        """
        return json.dumps({"name": self.name, "arguments": self.arguments}, ensure_ascii=False)


@dataclass(frozen=True)
class Evidence:
    """What the environment reported about an executed text-tool call (MCP or ``bash``).

    Built from the env's report by :func:`hybrid_agent.evidence.evidence_from_info`.

    Attributes:
        exec_ok: The call executed without an error (MCP ``isError`` false; bash: the command
            ran to its end, whatever its exit code).
        effect: How much the call changed (cells written, replacements made), where the
            tool can know; ``None`` when it cannot. ``0`` means "ran, changed nothing".
        effect_kind: The env's effect kind (``changed``, ``none``, ``unknown``,
            ``read_only``), or ``None`` when the env reported none.
        read_only: The tool never changes state (its ``readOnlyHint``); ``None`` when unknown.
        error_code: The env's error code when the call failed or was refused.
        returncode: Bash: the command's exit code (-1: killed or never started); ``None`` for an
            MCP call or a command that never reached the desktop.
        stderr: Bash: the command's standard error, apart from its output; ``None`` otherwise.
        timed_out: Bash: the command was killed at its timeout.
    """

    exec_ok: bool
    effect: int | None = None
    effect_kind: str | None = None
    read_only: bool | None = None
    error_code: str | None = None
    returncode: int | None = None
    stderr: str | None = None
    timed_out: bool = False

    @property
    def command_failed(self) -> bool:
        """HybridCUA's failure rule on this report (:func:`hybrid_agent.step_kind.cli_step_failed`).

        Meaningful for a CLI step only (the caller classifies the call). A command that could
        not start (``returncode`` -1, not timed out, not ``exec_ok``) failed in the desktop, not
        in the agent's command: exempt, as HybridCUA exempts its execution layer's failures.
        A command that never reached the desktop has no ``returncode`` and did not fail.
        """
        infra = self.returncode is not None and not self.exec_ok and not self.timed_out
        return cli_step_failed(self.returncode, self.stderr or "", self.timed_out, infra_error=infra)


@dataclass(frozen=True)
class Frame:
    """One screenshot, with optional accessibility text and an identity digest.

    Attributes:
        image: The screenshot as a PIL image (RGB).
        a11y: Accessibility text of the same moment, if the env provided one.
        digest: A caller-supplied identity (e.g. the env's frame hash). When ``None`` the
            md5 of the pixels is used, computed once.
    """

    image: Image.Image
    a11y: str | None = None
    digest: str | None = None

    @classmethod
    def from_array(cls, array: np.ndarray, a11y: str | None = None) -> Frame:
        """Wraps an ``(H, W, 3) uint8`` array, as the env's observation holds it."""
        return cls(image=Image.fromarray(np.asarray(array, dtype=np.uint8)), a11y=a11y)

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)`` in pixels."""
        return self.image.size

    @cached_property
    def key(self) -> str:
        """The identity used to find byte-identical frames."""
        if self.digest is not None:
            return self.digest
        h = hashlib.md5(usedforsecurity=False)
        h.update(f"{self.image.mode}:{self.image.size}".encode())
        h.update(self.image.tobytes())
        return h.hexdigest()


@dataclass(frozen=True)
class Executed:
    """One call a reply made and what the env reported for it.

    Attributes:
        call: The call as the model wrote it (model space).
        evidence: The env's report of a text-tool call; ``None`` for a GUI or control action.
    """

    call: Call
    evidence: Evidence | None = None

    @property
    def kind(self) -> StepKind:
        """The call's kind (:func:`~hybrid_agent.step_kind.classify_step`)."""
        return classify_step(self.call.name, self.call.arguments)

    @property
    def cli_failed(self) -> bool:
        """A CLI step that failed by HybridCUA's rule."""
        return step_failed(self.call, self.evidence)


@dataclass(frozen=True)
class Step:
    """One finished step of the trajectory.

    Attributes:
        frame: The screenshot the model saw when it chose this step's call.
        tool_result: The tool result relayed at this step (the result of the *previous*
            call; empty after a GUI action or at the first step).
        tool_result_parts: The previous reply's calls' results one by one, when it made several.
        response: The model's raw output (think, ``Action:`` line, ``<tool_call>``).
        call: The call that was executed (the reply's first).
        evidence: The env's report for a text-tool call; ``None`` for a GUI action.
        more: The reply's further calls, each executed as its own env step after ``call``
            (HybridCUA's several calls per turn); empty for one call per reply.
    """

    frame: Frame
    tool_result: str
    response: str
    call: Call
    evidence: Evidence | None = None
    more: tuple[Executed, ...] = ()
    tool_result_parts: tuple[str, ...] = ()

    @property
    def executed(self) -> tuple[Executed, ...]:
        """Every call of the reply, in the order executed."""
        return (Executed(self.call, self.evidence), *self.more)

    @property
    def mcp_exec_ok(self) -> bool:
        """True when this step was an MCP tool call (kind ``tool``) that executed without error."""
        tool = classify_step(self.call.name, self.call.arguments) is StepKind.TOOL
        return tool and self.evidence is not None and self.evidence.exec_ok


def step_failed(call: Call, evidence: Evidence | None) -> bool:
    """A CLI step (:func:`~hybrid_agent.step_kind.classify_step`) that failed by HybridCUA's rule.

    Only CLI steps are checked, as in HybridCUA: a failing pyautogui heredoc is a GUI step.
    """
    if evidence is None or classify_step(call.name, call.arguments) is not StepKind.CLI:
        return False
    return evidence.command_failed


@dataclass(frozen=True)
class Observation:
    """What the model sees now, before choosing the next call.

    Attributes:
        frame: The current screenshot.
        tool_result: The result of the last executed call (empty after a GUI action); after a
            reply of several calls, each one's result in order, a blank line apart.
        parts: After a reply of several calls: each call's result, in order (a context policy
            may cut each on its own); empty otherwise.
        frame_id: The env's id of the screenshot (``info["frame_id"]``), shown to the model
            and cited with its coordinate actions; ``None``: not shown.
        zoom_scale: The screenshot is a zoom (``info["zoom"]``) enlarged this many times, and
            the model is told so; ``None``: the whole screen.
    """

    frame: Frame
    tool_result: str = ""
    parts: tuple[str, ...] = ()
    frame_id: int | None = None
    zoom_scale: int | None = None

    @property
    def results(self) -> tuple[str, ...]:
        """The relayed result of each call of the last reply (one entry, or none, for one call)."""
        return self.parts or ((self.tool_result,) if self.tool_result else ())

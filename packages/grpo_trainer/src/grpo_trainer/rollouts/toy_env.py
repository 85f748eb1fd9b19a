"""``grpo_trainer:ToolOrGui-v0``: a fast env with the desktop env's interface and one real choice.

The task is "put 5 in cell A1". Two routes succeed in two calls: the MCP tool
``libreoffice_calc.set_cell_value(cell="A1", value="5")`` then ``terminate``, or the GUI
route ``type "5"`` + newline (A1 is selected) then ``terminate``. A read-only tool
``libreoffice_calc.get_cell_value``, a useless click and a wrong write are the ways to
waste steps or fail. Observation, action and ``info`` keys match
``osworld_mcp_env`` (screenshot, tool_result, active_app, instruction;
``info["tools"]``, ``info["tool_call"]`` as the same
:class:`~osworld_mcp_env.info.ToolCallRecord`, ``info["error"]``) so the rollout
code is the one the real desktop uses; a step takes microseconds, so the learning
test trains in seconds. ``crash_at=k`` (or ``options={"crash_at": k}``) makes step
``k`` raise, the way a dying desktop does.
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import numpy as np
from osworld_mcp_env.info import StepInfo, ToolCallRecord, ToolSchema
from osworld_mcp_env.spaces import action_space, observation_space

ENV_ID = "grpo_trainer:ToolOrGui-v0"
SIZE = 16
INSTRUCTION = "Put the value 5 into cell A1 of the open sheet, then terminate."
TOOLS: list[ToolSchema] = [
    ToolSchema(
        name="libreoffice_calc.set_cell_value",
        description="Write a value into one cell.",
        parameters={
            "type": "object",
            "properties": {"cell": {"type": "string"}, "value": {"type": "string"}},
            "required": ["cell", "value"],
        },
        read_only=False,
    ),
    ToolSchema(
        name="libreoffice_calc.get_cell_value",
        description="Read the value of one cell.",
        parameters={"type": "object", "properties": {"cell": {"type": "string"}}, "required": ["cell"]},
        read_only=True,
    ),
]


def _executed(
    name: str, arguments: dict[str, Any], effect: dict[str, Any], read_only: bool
) -> ToolCallRecord:
    """The record of a toy tool call: listed, dispatched, run without error, in no time."""
    return ToolCallRecord(
        name=name,
        arguments=arguments,
        exec_ok=True,
        effect=effect,
        read_only=read_only,
        in_catalog=True,
        dispatched=True,
        returncode=None,
        stderr=None,
        timed_out=False,
        latency_ms=0.0,
    )


class ToolOrGuiEnv(gym.Env):
    """The toy spreadsheet. Reward 1 at the end when A1 holds "5", else 0."""

    metadata = {"render_modes": []}  # noqa: RUF012 - gym.Env types it as an instance field

    def __init__(self, max_steps: int = 6, crash_at: int | None = None) -> None:
        """``max_steps`` truncates episodes (match the trainer's T_max); ``crash_at`` arms a crash."""
        self.max_steps = max_steps
        self.crash_default = crash_at
        self.observation_space = observation_space(SIZE, SIZE, with_a11y=False)
        self.action_space = action_space()
        self._value = ""
        self._t = 0
        self._crash_at: int | None = None

    def _obs(self, tool_result: str = "") -> dict[str, Any]:
        screen = np.full((SIZE, SIZE, 3), 255, dtype=np.uint8)
        screen[0, : len(self._value)] = 0  # the cell's content is visible
        return {
            "screenshot": screen,
            "tool_result": tool_result,
            "active_app": "libreoffice_calc",
            "instruction": INSTRUCTION,
        }

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Empty sheet, A1 selected; ``options["crash_at"]`` arms a crash at that step."""
        super().reset(seed=seed)
        self._value, self._t = "", 0
        self._crash_at = (options or {}).get("crash_at", self.crash_default)
        return self._obs(), {"tools": TOOLS}

    def step(self, action: Any):
        """Executes one call; malformed input is an ``info["error"]``, never an exception."""
        if self._crash_at is not None and self._t == self._crash_at:
            raise RuntimeError(f"desktop died at step {self._t}")
        self._t += 1
        info: StepInfo = {"tools": TOOLS}
        try:
            call = json.loads(action) if isinstance(action, str) else dict(action)
            name, args = call["name"], dict(call.get("arguments") or {})
        except (ValueError, TypeError, KeyError):
            info["error"] = {"code": "invalid_action", "message": "expected a JSON call"}
            return self._finish(self._obs(), info)
        tool_result = ""
        if name == "computer_use":
            kind = args.get("action")
            if kind == "terminate":
                info["claimed_success"] = args.get("status") == "success"  # as the desktop env reports it
                obs = self._obs()
                return obs, float(self._value == "5"), True, False, info
            if kind == "type":
                self._value = str(args.get("text", "")).rstrip("\n")
        elif name == "libreoffice_calc.set_cell_value" and set(args) == {"cell", "value"}:
            if args["cell"] == "A1":
                self._value = str(args["value"])
            info["tool_call"] = _executed(name, args, {"kind": "changed", "count": 1}, read_only=False)
            tool_result = f"Wrote {args['value']!r} to {args['cell']}."
        elif name == "libreoffice_calc.get_cell_value" and set(args) == {"cell"}:
            info["tool_call"] = _executed(name, args, {"kind": "read_only"}, read_only=True)
            tool_result = repr(self._value if args["cell"] == "A1" else "")
        else:
            info["error"] = {"code": "unknown_tool", "name": name}
        return self._finish(self._obs(tool_result), info)

    def _finish(self, obs: dict[str, Any], info: StepInfo):
        truncated = self._t >= self.max_steps
        return obs, float(self._value == "5") if truncated else 0.0, False, truncated, info

"""Run directories recorded by hybrid_agent's runner over the toy spreadsheet, for the SFT tests.

The toy env (``grpo_trainer:ToolOrGui-v0``, 16x16 screen) is the desktop env's interface at
microseconds a step, so the runner records real episode files here in milliseconds.
"""

from __future__ import annotations

import json
from pathlib import Path

import grpo_trainer  # noqa: F401  (registers the toy env)
import gymnasium as gym
from grpo_trainer.rollouts.toy_env import ENV_ID, TOOLS
from hybrid_agent.agent_loop import AgentConfig
from hybrid_agent.policies.base import Generation
from hybrid_agent.policies.scripted import render_call
from hybrid_agent.runner import RunConfig, Runner
from hybrid_agent.suite import SuiteTask
from hybrid_agent.toolset import ToolSpec, tools_from_env

CLICK = {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [8, 4]}}
WRITE = {"name": "libreoffice_calc.set_cell_value", "arguments": {"cell": "A1", "value": "5"}}
WRONG = {"name": "libreoffice_calc.set_cell_value", "arguments": {"cell": "A1", "value": "4"}}
TYPE = {"name": "computer_use", "arguments": {"action": "type", "text": "5\n"}}
DONE = {"name": "computer_use", "arguments": {"action": "terminate", "status": "success"}}

# Run 0 and 1: click, write, done (score 1). Run 2: a malformed reply first (it executes nothing),
# then the same three calls (score 1, 4 replies, 3 steps). Run 3 writes 4 (score 0).
SCRIPTS: dict[int, list[dict | None]] = {
    0: [CLICK, WRITE, DONE],
    1: [CLICK, WRITE, DONE],
    2: [None, CLICK, WRITE, DONE],
    3: [CLICK, WRONG, DONE],
}
GUI_SCRIPT = [TYPE, DONE]


class ToyScript:
    """A policy replying each run's script in the stack's text format, in screen pixels."""

    name = "toy-script"
    concurrent = True

    def __init__(self, scripts: dict[int, list[dict | None]]) -> None:
        self.scripts = scripts

    def generate(self, requests):
        out = []
        for request in requests:
            script = self.scripts[request.run % len(self.scripts)]
            call = script[min(request.step, len(script) - 1)]
            out.append(Generation(text="I will click somewhere." if call is None else render_call(call)))
        return out


def toy_catalog() -> dict[str, ToolSpec]:
    """The toy env's tools by name (the records name the tools shown; the specs come from here)."""
    return {tool.qualified_name: tool for tool in tools_from_env(TOOLS)}


def record_toy_run(
    out: Path, scripts: dict[int, list[dict | None]] = SCRIPTS, gui_only: bool = False
) -> Path:
    """Records one toy task, one run per script, with the runner; returns the run directory."""
    agent = AgentConfig(coordinates="absolute_screen", gui_only=gui_only)
    config = RunConfig(policy="toy-script", agent=agent, runs=len(scripts), max_steps=6)
    runner = Runner(config, ToyScript(scripts), out, env_factory=lambda: gym.make(ENV_ID), progress=False)
    result = runner.evaluate([SuiteTask("toy", "libreoffice_calc", "toy")])
    assert (result.finished, result.errors) == (len(scripts), 0)
    return out


def rewrite_step(run_dir: Path, run: int, step: int, **fields) -> None:
    """Changes fields of one recorded step line (a record edited after the dataset was built)."""
    path = run_dir / "episodes" / f"toy__run{run}.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        if line.get("type") == "step" and line["step"] == step:
            line.update(fields)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))

"""The execution term against what the real desktop returns for commands, not assumed exit codes.

Each command runs through the env's bash channel on the embedded desktop; the env's
report goes through the agent's one converter (``evidence_from_info``) into a step
sample, and HybridCUA's rule decides. ``false`` exits 1 with nothing on stderr, so,
like ``grep`` without a match, it is no failure.
"""

from __future__ import annotations

import sys
from pathlib import Path

import gymnasium as gym
import pytest
from grpo_helpers import episode, sample
from grpo_trainer.objectives.advantage import hybridcua_config
from grpo_trainer.objectives.rewards import step_bonuses, used_cli
from hybrid_agent.evidence import evidence_from_info
from hybrid_agent.trajectory import Call

sys.path.insert(0, str(Path(__file__).parents[2] / "osworld_mcp_env"))
from desktop_support import desktop_missing

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        desktop_missing() is not None, reason=f"embedded desktop unavailable: {desktop_missing()}"
    ),
]

# (arguments, exit code, stderr is empty, HybridCUA's verdict)
COMMANDS = [
    ({"command": "ls ~ | head -3"}, 0, True, False),
    ({"command": "ls /nonexistent"}, 2, False, True),
    ({"command": "grep zzz /etc/hostname"}, 1, True, False),
    ({"command": "foobarbaz"}, 127, False, True),
    ({"command": "sleep 5", "timeout": 1}, -1, True, True),
    ({"command": "false"}, 1, True, False),
]


def test_the_execution_term_on_what_the_desktop_returns():
    env = gym.make("osworld_mcp_env:OSWorldMCP-v0", task="os-create-file", enable_bash=True)
    try:
        env.reset()
        samples = []
        for index, (arguments, code, quiet, _failed) in enumerate(COMMANDS):
            call = Call("bash", arguments)
            _obs, _r, _t, _tr, info = env.step({"name": "bash", "arguments": arguments})
            record = info["tool_call"]
            assert record["returncode"] == code, (arguments, record)
            assert (record["stderr"].strip() == "") is quiet, (arguments, record)
            assert record["timed_out"] is (arguments.get("timeout") == 1)
            evidence = evidence_from_info(call, info)
            samples.append(sample(call, exec_ok=evidence.exec_ok, index=index, evidence=evidence))
    finally:
        env.close()
    assert [s.cli_failed for s in samples] == [failed for *_, failed in COMMANDS]
    ep = episode(0.0, samples)
    paper, _ = hybridcua_config("paper")
    assert step_bonuses(ep, paper) == [0.0, -0.3, 0.0, -0.3, -0.3, 0.0]
    released, _ = hybridcua_config("released")
    assert step_bonuses(ep, released) == [0.0] * 6
    assert used_cli(ep)

"""Interface-restricted episodes: which calls each mode refuses, and the refusal inside the agent loop."""

import grpo_trainer  # noqa: F401  (registers the toy env)
import gymnasium as gym
import pytest
from grpo_trainer.model.toy_menu import GUI_TYPE, TERMINATE, TOOL_WRITE
from hybrid_agent.agent_loop import AgentConfig, AgentEpisode, AgentLoop
from hybrid_agent.errors import ConfigError
from hybrid_agent.interface_mode import refused_calls
from hybrid_agent.messages import to_openai
from hybrid_agent.parse import ParseErrorCode
from hybrid_agent.policies.base import Generation
from hybrid_agent.trajectory import Call

CLICK = Call("computer_use", {"action": "left_click", "coordinate": [1, 2]})
HEREDOC = Call("computer_use", {"action": "bash", "command": "python3 <<'PY'\nimport pyautogui\nPY"})
SHELL = Call("computer_use", {"action": "bash", "command": "ls ~"})
RAW_SHELL = Call("bash", {"command": "grep -c x f.txt"})
WAIT = Call("computer_use", {"action": "wait", "time": "1"})
TOOL = Call("libreoffice_calc.set_cell_value", {"cell": "A1", "value": "5"})


@pytest.mark.parametrize(
    ("mode", "accepted", "refused"),
    [
        ("gui", [CLICK, HEREDOC, WAIT], [SHELL, RAW_SHELL, TOOL]),
        ("cli", [SHELL, RAW_SHELL, WAIT], [CLICK, HEREDOC, TOOL]),
        ("hybrid", [CLICK, HEREDOC, SHELL, RAW_SHELL, WAIT, TOOL], []),
    ],
)
def test_each_mode_accepts_its_interface_and_control_actions(mode, accepted, refused):
    for call in accepted:
        assert refused_calls(mode, [call]) is None, call
    for call in refused:
        error = refused_calls(mode, [call])
        assert error is not None and error.code == ParseErrorCode.INTERFACE_REFUSED, call


def test_one_refused_call_refuses_the_whole_reply():
    error = refused_calls("cli", [SHELL, CLICK, WAIT])
    assert error is not None and "your reply made a gui step" in error.message


def test_an_unknown_mode_is_a_config_error():
    with pytest.raises(ConfigError, match="interface must be one of"):
        AgentConfig(interface="mcp")


def test_the_loop_refuses_a_tool_call_in_a_gui_only_episode_and_tells_the_model():
    env = gym.make("grpo_trainer:ToolOrGui-v0", max_steps=6)
    try:
        loop = AgentLoop(AgentConfig(interface="gui"))
        obs, info = env.reset(seed=0)
        episode = AgentEpisode.start("toy", 0, obs, info)
        refused = loop.step(env, episode, loop.observe(episode), Generation(text=TOOL_WRITE))
        assert refused.call is None and not refused.exec_ok and not refused.ended
        assert refused.record["parse"]["code"] == "interface_refused" and episode.steps == []
        shown = to_openai(loop.observe(episode).request.messages)[-1]["content"]
        assert any("Error [interface_refused]" in p.get("text", "") for p in shown)
        typed = loop.step(env, episode, loop.observe(episode), Generation(text=GUI_TYPE))
        assert typed.exec_ok
        done = loop.step(env, episode, loop.observe(episode), Generation(text=TERMINATE))
        assert done.ended and done.end["score"] == 1.0 and done.end["steps"] == 3
    finally:
        env.close()

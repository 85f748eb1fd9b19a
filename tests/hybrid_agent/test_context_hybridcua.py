"""The ``hybridcua`` context policy on hand-written trajectories; the study's rule unchanged beside it."""

import pytest
from hybrid_agent.agent_loop import AgentConfig
from hybrid_agent.context import ContextConfig, build_context
from hybrid_agent.errors import ConfigError
from hybrid_agent.messages import count_images
from hybrid_agent.presets import NAMED_POLICIES, context_policy, retention_from_name
from hybrid_agent.prompt import CLI_TRUNCATION_MARKER, render_cli_output
from hybrid_agent.retention import OUTSIDE_IMAGE_WINDOW, FrameForm
from hybrid_agent.trajectory import Call, Frame, Observation, Step
from PIL import Image

HYBRIDCUA = AgentConfig(context="hybridcua", adapter="hybridcua")


def frame(shade: int) -> Frame:
    return Frame(Image.new("RGB", (16, 12), (shade, shade, shade)))


def bash(command: str) -> Call:
    return Call("computer_use", {"action": "bash", "command": command})


def trajectory(n: int = 6):
    """n steps, step i ran ``cmd{i}`` and the next turn relayed its output ``out{i}``."""
    steps = [
        Step(
            frame(10 * i),
            f"[exit code 0]\nout{i - 1}\n" if i else "",
            f"Action: Run cmd{i}.\n<tool_call/>",
            bash(f"cmd{i}"),
        )
        for i in range(n)
    ]
    return steps, Observation(frame(10 * n), f"[exit code 0]\nout{n - 1}\n")


def texts(message) -> list[str]:
    return [part["text"] for part in message["content"] if part["type"] == "text"]


def test_three_full_turns_images_on_three_frames_and_one_liners_only_for_dropped_steps():
    steps, current = trajectory()
    context = build_context(steps, current, "Do it.", [], HYBRIDCUA.context_config())
    messages = context.messages
    # system + 3 past turns (user, assistant) + the current user turn
    assert [m["role"] for m in messages] == ["system"] + ["user", "assistant"] * 3 + ["user"]
    assert count_images(messages) == 3  # frames 4, 5 and the current one
    final = context.plan.final()
    assert [final[i].form for i in range(7)] == [FrameForm.OUT_OF_WINDOW] * 3 + [
        FrameForm.PLACEHOLDER,
        FrameForm.IMAGE,
        FrameForm.IMAGE,
        FrameForm.IMAGE,
    ]
    assert texts(messages[1]) == ["CLI output:\nout2\n", OUTSIDE_IMAGE_WINDOW]  # turn 3 keeps its text
    assert messages[2]["content"] == "Action: Run cmd3.\n<tool_call/>"
    closing = texts(messages[-1])[-1]
    # Steps 1-3 left the window: only they are one-liners; 4-6 are shown in full.
    assert "Step 1: Run cmd0.\nStep 2: Run cmd1.\nStep 3: Run cmd2." in closing and "Step 4" not in closing
    assert texts(messages[-1])[0] == "CLI output:\nout5\n"


def test_each_command_of_a_turn_is_cut_at_1000_characters_with_hybridcuas_marker():
    long = "[exit code 0]\n" + "x" * 1500
    assert render_cli_output(long, 1000) == "CLI output:\n" + "x" * 1000 + CLI_TRUNCATION_MARKER
    assert CLI_TRUNCATION_MARKER == "\n...(truncated)..."
    assert render_cli_output("[exit code 1]\n", 1000) == "CLI output:\n(no output)"
    assert render_cli_output("Error [timeout]: killed", 1000) == "CLI output:\nError [timeout]: killed"
    steps, _ = trajectory(1)
    parts = (long, "[exit code 0]\nshort\n")
    current = Observation(frame(99), "\n\n".join(parts), parts)
    config = HYBRIDCUA.context_config()
    (first, second, _image, _closing) = build_context(steps, current, "Do it.", [], config).messages[-1][
        "content"
    ]
    assert first["text"] == "CLI output:\n" + "x" * 1000 + CLI_TRUNCATION_MARKER
    assert second["text"] == "CLI output:\nshort\n"


def test_the_studys_rule_is_kept_as_it_is():
    steps, current = trajectory()
    config = AgentConfig(context="win4").context_config()
    assert (config.history, config.relay, config.tool_result_chars) == ("all", "tool_result", 1500)
    messages = build_context(steps, current, "Do it.", [], config).messages
    assert count_images(messages) == 4
    closing = texts(messages[-1])[-1]
    assert all(f"Step {i}: Run cmd{i - 1}." in closing for i in range(1, 7))
    assert texts(messages[-1])[0] == "Tool result: [exit code 0]\nout5\n"


def test_the_named_policy_and_its_parts():
    policy = context_policy("hybridcua")
    assert policy is NAMED_POLICIES["hybridcua"] and retention_from_name("hybridcua") == policy.retention
    assert (policy.retention.window, policy.retention.image_window, policy.tool_result_chars) == (4, 3, 1000)
    assert retention_from_name("win4+images").rules == ("image_window",)
    with pytest.raises(ConfigError, match="history must be one of"):
        ContextConfig(history="some")

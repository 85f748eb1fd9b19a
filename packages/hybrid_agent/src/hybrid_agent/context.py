"""The context builder (the study's Eq. 1): trajectory so far -> chat messages.

Layout, for the step ``t = len(steps)`` and window ``k`` (counting the current frame)::

    system     format rules + <tools> (computer_use first, then the retrieved MCP tools)
    user       [Tool result of step i-1's call, cut at L chars] + screenshot i | replacement
    assistant  [think] + "Action: ..." + <tool_call>{call i}</tool_call>
               ... for every past step i inside the window ...
    user       [Tool result of the last call] + current screenshot | replacement
               + instruction + "Previous actions:" (one line for *every* earlier step)

Which frames are shown and how is decided by :mod:`hybrid_agent.retention`; the
builder only renders a :class:`~hybrid_agent.retention.RetentionPlan`, so passing a
stored plan replays a context exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from osworld_mcp_env.actions import ZOOM, ActionSpec
from PIL import Image

from hybrid_agent.errors import ConfigError, ContextError
from hybrid_agent.messages import Message, image_part, text_part
from hybrid_agent.parse import extract_action_line, split_think
from hybrid_agent.presets import HISTORIES, RELAYS
from hybrid_agent.prompt import (
    PromptConfig,
    current_turn_text,
    render_cli_output,
    render_tool_result,
    system_prompt,
)
from hybrid_agent.retention import FrameForm, RetentionConfig, RetentionPlan, RetentionRecord, plan_retention
from hybrid_agent.skill import with_skill_text
from hybrid_agent.toolset import ToolSpec
from hybrid_agent.trajectory import Call, Frame, Observation, Step


class TurnRenderer(Protocol):
    """What a model family decides about its context (a :class:`hybrid_agent.adapters.ModelAdapter`)."""

    gui_actions: Mapping[str, ActionSpec]
    """The ``computer_use`` vocabulary the family offers (the skill text teaches ``zoom`` where it is)."""

    def system_prompt(self, tools: Sequence[ToolSpec], screen: tuple[int, int], config: PromptConfig) -> str:
        """The system message for ``screen`` (its resolution is the family's coordinate space)."""
        ...

    def preprocess(self, image: Image.Image) -> Image.Image:
        """The screenshot as the family sees it."""
        ...

    def assistant_turn(self, step: Step, keep_think: bool) -> str:
        """A past step as the model would have written it."""
        ...


@dataclass(frozen=True)
class ContextConfig:
    """Context construction settings (research defaults: k=4, drop off, L=1500, think stripped).

    Attributes:
        retention: Window and retention rules.
        prompt: System-prompt settings.
        tool_result_chars: L, the characters of a relayed tool result kept per turn.
        keep_think: Show the reasoning of past in-window steps (the study's raw responses
            did; stripping it saves ~300 tokens per past step for a Thinking model).
        renderer: The model family's prompt, screenshot rule and past-turn format (the agent
            loop passes its adapter); ``None``: the stack's Qwen prompt at ``prompt.resolution``,
            frames as they are, canonical past calls.
        history: ``all``: a one-line entry for every earlier step (the study); ``dropped``: only
            for the steps that left the window (HybridCUA).
        relay: ``tool_result``: ``Tool result:`` cut at L (the study); ``cli_output``: each
            command's ``CLI output:`` cut at L (HybridCUA).
    """

    retention: RetentionConfig = field(default_factory=RetentionConfig)
    prompt: PromptConfig = field(default_factory=PromptConfig)
    tool_result_chars: int = 1500
    keep_think: bool = False
    renderer: TurnRenderer | None = None
    history: str = "all"
    relay: str = "tool_result"

    def __post_init__(self) -> None:
        if self.tool_result_chars < 0:
            raise ConfigError(f"tool_result_chars must be >= 0, got {self.tool_result_chars}.")
        if self.history not in HISTORIES or self.relay not in RELAYS:
            raise ConfigError(
                f"history must be one of {HISTORIES} and relay one of {RELAYS}, got {self.history!r}, "
                f"{self.relay!r}."
            )


@dataclass(frozen=True)
class Context:
    """A built context.

    Attributes:
        messages: The chat messages (transformers / Qwen-VL processor format).
        plan: Every retention decision taken to build them.
        history: The one-line action summaries of all earlier steps.
    """

    messages: list[Message]
    plan: RetentionPlan
    history: tuple[str, ...]


def call_summary(call: Call) -> str:
    """A one-line summary synthesised from a call, for outputs that had no ``Action:`` line."""
    arguments = dict(call.arguments)
    if call.is_gui:
        action = arguments.pop("action", "?")
        inner = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
        return f"{action}({inner})"
    inner = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
    return f"{call.name}({inner})"


def action_summary(step: Step) -> str:
    """The step's one-line history entry: its ``Action:`` line, else a summary of the call."""
    _, rest = split_think(step.response)
    return extract_action_line(rest) or call_summary(step.call)


def render_assistant(step: Step, keep_think: bool) -> str:
    """The assistant turn of a past step: [think], the ``Action:`` line and the executed call.

    The call is re-serialised from the executed :class:`Call` rather than copied from the
    raw text, so repaired outputs appear in their repaired, canonical form.
    """
    think, _ = split_think(step.response)
    head = f"<think>\n{think}\n</think>\n\n" if keep_think and think else ""
    return f"{head}Action: {action_summary(step)}\n<tool_call>\n{step.call.to_json()}\n</tool_call>"


def downscale(image: Image.Image, factor: float) -> Image.Image:
    """Resizes by ``factor`` (each side at least 1 px) with a box filter."""
    width, height = image.size
    size = (max(1, round(width * factor)), max(1, round(height * factor)))
    return image.resize(size, Image.Resampling.BOX)


def _frame_part(frame: Frame, record: RetentionRecord, factor: float, renderer: TurnRenderer | None) -> dict:
    image = renderer.preprocess(frame.image) if renderer is not None else frame.image
    if record.form == FrameForm.IMAGE:
        return image_part(image)
    if record.form == FrameForm.DOWNSCALED:
        return image_part(downscale(image, factor))
    if record.form in (FrameForm.PLACEHOLDER, FrameForm.A11Y):
        return text_part(record.text)
    raise ContextError(f"Frame {record.frame} is {record.form} but was asked to be rendered.")


def _user_turn(observed: Observation | Step, frame_part: dict, config: ContextConfig) -> list[dict]:
    limit = config.tool_result_chars
    if config.relay == "cli_output":
        results = observed.parts if isinstance(observed, Observation) else observed.tool_result_parts
        texts = results or ((observed.tool_result,) if observed.tool_result else ())
        return [*(text_part(render_cli_output(text, limit)) for text in texts), frame_part]
    tool_result = observed.tool_result
    parts = [text_part(render_tool_result(tool_result, limit))] if tool_result else []
    return [*parts, frame_part]


def build_context(
    steps: Sequence[Step],
    current: Observation,
    instruction: str,
    tools: Sequence[ToolSpec],
    config: ContextConfig | None = None,
    plan: RetentionPlan | None = None,
) -> Context:
    """Builds the messages for the next model call.

    Args:
        steps: Finished steps, oldest first.
        current: The current observation (screenshot and last tool result).
        instruction: The task instruction.
        tools: The retrieved MCP tools shown this step (``computer_use`` is always added first).
        config: Context settings; research defaults when ``None``.
        plan: A stored plan to replay instead of deciding retention anew.

    Returns:
        The messages, the retention plan used and the one-line history.

    Raises:
        ContextError: When ``plan`` was made for a different step.
    """
    config = config or ContextConfig()
    step = len(steps)
    if plan is None:
        plan = plan_retention(steps, current, config.retention)
    elif plan.step != step:
        raise ContextError(f"The plan is for step {plan.step} but the trajectory is at step {step}.")
    final = plan.final()
    factor = config.retention.downscale_factor
    renderer = config.renderer
    screen = current.frame.image.size
    system = (
        renderer.system_prompt(tools, screen, config.prompt)
        if renderer is not None
        else system_prompt(tools, config.prompt)
    )
    if config.prompt.skill_text:
        system = with_skill_text(system, zoom=renderer is not None and ZOOM in renderer.gui_actions)
    messages: list[Message] = [{"role": "system", "content": system}]
    for index, past in enumerate(steps):
        record = final[index]
        if record.form == FrameForm.OUT_OF_WINDOW:
            continue
        frame_part = _frame_part(past.frame, record, factor, renderer)
        assistant = (
            renderer.assistant_turn(past, config.keep_think)
            if renderer is not None
            else render_assistant(past, config.keep_think)
        )
        messages.append({"role": "user", "content": _user_turn(past, frame_part, config)})
        messages.append({"role": "assistant", "content": assistant})
    history = tuple(action_summary(past) for past in steps)
    shown = history
    if config.history == "dropped":
        shown = tuple(line for i, line in enumerate(history) if final[i].form == FrameForm.OUT_OF_WINDOW)
    current_part = _frame_part(current.frame, final[step], factor, renderer)
    content = _user_turn(current, current_part, config)
    content.append(
        text_part(
            current_turn_text(instruction, shown, frame_id=current.frame_id, zoom_scale=current.zoom_scale)
        )
    )
    messages.append({"role": "user", "content": content})
    return Context(messages=messages, plan=plan, history=history)

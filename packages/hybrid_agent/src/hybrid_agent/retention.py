"""Which screenshots enter the context, and in what form (the study's Eq. 2 and Appendix B).

The window (k steps, counting the current frame) decides which steps are shown
at all. Inside it, an ordered list of named rules may turn a frame into a
downscaled image, accessibility text or a short placeholder. Rules are looked
up in a registry (``@register_retention("drop_on_success")``) and all share one
signature, so the builder never branches on a rule name.

Every decision is a :class:`RetentionRecord` ``(step, frame, rule, kept, form,
text)``. A :class:`RetentionPlan` holds them all; the context builder renders
from a plan, so a trainer that stored the plan rebuilds the exact context.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from osworld_mcp_env.registry import Registry
from osworld_mcp_env.text import truncate

from hybrid_agent.errors import ConfigError, ContextError, RegistryError
from hybrid_agent.trajectory import Frame, Observation, Step


class FrameForm(StrEnum):
    """How one frame appears in the context."""

    IMAGE = "image"
    DOWNSCALED = "downscaled"
    A11Y = "a11y"
    PLACEHOLDER = "placeholder"
    OUT_OF_WINDOW = "out_of_window"

    @property
    def has_pixels(self) -> bool:
        """True when the frame's pixels (full or downscaled) reach the model."""
        return self in (FrameForm.IMAGE, FrameForm.DOWNSCALED)


@dataclass(frozen=True)
class RetentionConfig:
    """Window and retention rules.

    Attributes:
        window: Steps shown, counting the current one (k=4: three past steps + now);
            ``None`` shows every step.
        rules: Registered rule names, applied in this order to each in-window frame.
            The study's "drop" is ``("drop_on_success",)``; default: none.
        downscale_factor: Scale of frames older than the newest under ``downscale_old``.
        a11y_max_chars: Bound of the accessibility text under ``a11y_old``, truncation marker included.
        max_consecutive_skips: ``skip_identical`` keeps a frame after this many skips in a row.
        image_window: Under ``image_window``: frames shown as images, counting the current one
            (HybridCUA's RL: 3, the current and two previous); older in-window turns keep their
            text with a marker in place of the screenshot.
    """

    window: int | None = 4
    rules: tuple[str, ...] = ()
    downscale_factor: float = 0.5
    a11y_max_chars: int = 4000
    max_consecutive_skips: int = 2
    image_window: int = 3

    def __post_init__(self) -> None:
        if self.window is not None and self.window < 1:
            raise ConfigError(
                f"window must be >= 1 (it counts the current frame) or None, got {self.window}."
            )
        if not 0 < self.downscale_factor <= 1:
            raise ConfigError(f"downscale_factor must be in (0, 1], got {self.downscale_factor}.")
        if self.a11y_max_chars < 1 or self.max_consecutive_skips < 0 or self.image_window < 1:
            raise ConfigError("a11y_max_chars and image_window must be >= 1 and max_consecutive_skips >= 0.")
        for name in self.rules:
            get_retention(name)  # unknown names fail here, at construction, not mid-episode
        if len(set(self.rules)) != len(self.rules):
            raise ConfigError(f"rules lists a rule twice: {self.rules}.")


@dataclass(frozen=True)
class FrameView:
    """What a rule may look at for one frame.

    Attributes:
        index: Frame index; frame ``i`` is the screenshot seen at step ``i`` (0-based),
            the current frame has index ``len(steps)``.
        is_current: True for the newest frame.
        frame: The screenshot.
        previous: The step whose call led to this frame (``None`` for frame 0).
    """

    index: int
    is_current: bool
    frame: Frame
    previous: Step | None


@dataclass(frozen=True)
class Verdict:
    """A rule's decision for one frame: the new form and, for text forms, the text."""

    form: FrameForm
    text: str = ""


@dataclass(frozen=True)
class RetentionRecord:
    """One keep/drop decision, enough to replay the context exactly.

    Attributes:
        step: Index of the step whose context was built (= index of the current frame).
        frame: Index of the frame decided on.
        rule: ``"window"`` or the registered rule name.
        kept: Whether the frame's pixels stay in the context after this decision.
        form: The frame's form after this decision.
        text: Placeholder or accessibility text replacing the frame, else empty.
    """

    step: int
    frame: int
    rule: str
    kept: bool
    form: FrameForm
    text: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for trajectory logs."""
        out = asdict(self)
        out["form"] = str(self.form)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RetentionRecord:
        """Inverse of :meth:`to_dict`."""
        return cls(**{**data, "form": FrameForm(data["form"])})


@dataclass(frozen=True)
class RetentionPlan:
    """All retention decisions for the context of one step."""

    step: int
    records: tuple[RetentionRecord, ...]

    def final(self) -> dict[int, RetentionRecord]:
        """The last (deciding) record of each frame, by frame index."""
        return {record.frame: record for record in self.records}

    def shown_frames(self) -> list[int]:
        """Indices of frames whose pixels enter the context."""
        return [i for i, record in sorted(self.final().items()) if record.form.has_pixels]

    def to_dicts(self) -> list[dict[str, Any]]:
        """JSON-able list of records."""
        return [record.to_dict() for record in self.records]

    @classmethod
    def from_dicts(cls, records: Iterable[Mapping[str, Any]]) -> RetentionPlan:
        """Rebuilds a plan from :meth:`to_dicts` output.

        Raises:
            ContextError: When the records are empty or belong to different steps.
        """
        parsed = tuple(RetentionRecord.from_dict(r) for r in records)
        steps = {r.step for r in parsed}
        if len(steps) != 1:
            raise ContextError(f"A plan's records must all have one step, got steps {sorted(steps)}.")
        return cls(step=steps.pop(), records=parsed)


@dataclass
class RetentionState:
    """Decisions made so far while planning one context (rules read it, never write it)."""

    config: RetentionConfig
    window_start: int
    final: dict[int, RetentionRecord] = field(default_factory=dict)
    frames: dict[int, Frame] = field(default_factory=dict)
    step: int = 0  # the current frame's index


RetentionRule = Callable[[FrameView, RetentionState], Verdict | None]
"""A rule: given a frame (still shown as pixels) and the decisions so far, return a new
form, or ``None`` when the rule does not apply. A ``Verdict`` with the frame's current
form records an explicit "kept by this rule" decision."""

RULES: Registry[RetentionRule] = Registry("retention rule", error=RegistryError)
"""Retention rules by name (:attr:`RetentionConfig.rules`)."""


def register_retention(name: str) -> Callable[[RetentionRule], RetentionRule]:
    """Registers a retention rule under ``name``; the function is returned unchanged.

    Raises:
        RegistryError: When ``name`` is already taken by a different function.
    """
    return RULES.register(name)


def get_retention(name: str) -> RetentionRule:
    """Returns the rule registered as ``name``.

    Raises:
        RegistryError: For an unknown name; the message lists the known ones.
    """
    return RULES.get(name)


def retention_rules() -> tuple[str, ...]:
    """Names of all registered rules, sorted."""
    return tuple(RULES.names())


def window_start(step: int, window: int | None) -> int:
    """First frame index inside a window of ``window`` steps ending at frame ``step``."""
    return 0 if window is None else max(0, step - window + 1)


def plan_retention(steps: Sequence[Step], current: Observation, config: RetentionConfig) -> RetentionPlan:
    """Decides the form of every frame for the context of step ``len(steps)``.

    Frames are decided oldest first so that rules can look at earlier decisions
    (``skip_identical`` compares with the last frame still shown). A rule is only
    consulted while the frame is still shown as pixels.
    """
    step = len(steps)
    start = window_start(step, config.window)
    state = RetentionState(config=config, window_start=start, step=step)
    records: list[RetentionRecord] = []

    def decide(record: RetentionRecord) -> None:
        records.append(record)
        state.final[record.frame] = record

    for index in range(step + 1):
        if index < start:
            decide(RetentionRecord(step, index, "window", False, FrameForm.OUT_OF_WINDOW))
            continue
        decide(RetentionRecord(step, index, "window", True, FrameForm.IMAGE))
        view = FrameView(
            index=index,
            is_current=index == step,
            frame=current.frame if index == step else steps[index].frame,
            previous=steps[index - 1] if index > 0 else None,
        )
        state.frames[index] = view.frame
        for name in config.rules:
            if not state.final[index].form.has_pixels:
                break
            verdict = get_retention(name)(view, state)
            if verdict is not None:
                decide(
                    RetentionRecord(step, index, name, verdict.form.has_pixels, verdict.form, verdict.text)
                )
    return RetentionPlan(step=step, records=tuple(records))


# ----------------------------------------------------------------------------- rules

DROPPED_AFTER_SUCCESS = "[Screenshot omitted: the previous MCP tool call succeeded]"
DROPPED_AFTER_EFFECT = (
    "[Screenshot omitted: the previous MCP tool call succeeded and changed {effect} item(s)]"
)
DROPPED_IDENTICAL = "[Screenshot omitted: identical to the last screenshot shown]"
A11Y_HEADER = "[Screenshot replaced by its accessibility tree]\n"
OUTSIDE_IMAGE_WINDOW = "[Earlier screenshot omitted]"


@register_retention("drop_on_success")
def drop_on_success(view: FrameView, state: RetentionState) -> Verdict | None:
    """The study's rule: the frame after an execution-successful MCP call becomes a placeholder."""
    if view.previous is not None and view.previous.mcp_exec_ok:
        return Verdict(FrameForm.PLACEHOLDER, DROPPED_AFTER_SUCCESS)
    return None


@register_retention("drop_on_effect")
def drop_on_effect(view: FrameView, state: RetentionState) -> Verdict | None:
    """Drop gated on semantic success: only when the MCP call reported a non-zero effect.

    A call that ran but changed nothing (``effect == 0``, e.g. 0 replacements) or whose
    effect is unknown keeps its frame, and the record says so: the model must see that
    nothing happened.
    """
    previous = view.previous
    if previous is None or not previous.mcp_exec_ok or previous.evidence is None:
        return None
    effect = previous.evidence.effect
    if effect:
        return Verdict(FrameForm.PLACEHOLDER, DROPPED_AFTER_EFFECT.format(effect=effect))
    return Verdict(state.final[view.index].form)


def _consecutive_skips(index: int, state: RetentionState) -> int:
    count = 0
    while index - 1 - count >= state.window_start and state.final[index - 1 - count].rule == "skip_identical":
        count += 1
    return count


@register_retention("skip_identical")
def skip_identical(view: FrameView, state: RetentionState) -> Verdict | None:
    """Skip a frame byte-identical to the last frame still shown in the window.

    Comparing with the last *shown* frame (not merely the previous one) guarantees the
    model has those pixels somewhere in the context.
    """
    if _consecutive_skips(view.index, state) >= state.config.max_consecutive_skips:
        return None
    for earlier in range(view.index - 1, state.window_start - 1, -1):
        record = state.final[earlier]
        if record.form.has_pixels:
            if state.frames[earlier].key == view.frame.key:
                return Verdict(FrameForm.PLACEHOLDER, DROPPED_IDENTICAL)
            return None
    return None


@register_retention("downscale_old")
def downscale_old(view: FrameView, state: RetentionState) -> Verdict | None:
    """Frames older than the newest are shown at ``downscale_factor`` of their size."""
    if (
        view.is_current
        or state.config.downscale_factor == 1
        or state.final[view.index].form != FrameForm.IMAGE
    ):
        return None
    return Verdict(FrameForm.DOWNSCALED)


@register_retention("a11y_old")
def a11y_old(view: FrameView, state: RetentionState) -> Verdict | None:
    """Frames older than the newest are replaced by their accessibility text, when there is one."""
    if view.is_current or not view.frame.a11y:
        return None
    return Verdict(FrameForm.A11Y, A11Y_HEADER + truncate(view.frame.a11y, state.config.a11y_max_chars))


@register_retention("image_window")
def image_window(view: FrameView, state: RetentionState) -> Verdict | None:
    """HybridCUA's RL context: images on the newest ``image_window`` frames only; older turns get a marker."""
    if state.step - view.index >= state.config.image_window:
        return Verdict(FrameForm.PLACEHOLDER, OUTSIDE_IMAGE_WINDOW)
    return None

"""The retention registry and rule composition."""

import pytest
from hybrid_agent import retention
from hybrid_agent.errors import RegistryError
from hybrid_agent.presets import retention_from_name
from hybrid_agent.retention import (
    OUTSIDE_IMAGE_WINDOW,
    FrameForm,
    RetentionConfig,
    Verdict,
    drop_on_success,
    get_retention,
    plan_retention,
    register_retention,
    retention_rules,
    window_start,
)
from hybrid_agent.trajectory import Call, Evidence, Frame, Observation, Step
from osworld_mcp_env import errors as env_errors
from osworld_mcp_env.registry import Registry
from osworld_mcp_env.text import TRUNCATION_MARKER
from PIL import Image

MCP = Call("os.get_volume", {})


def frames(n):
    return [Frame(Image.new("RGB", (4, 4), (i, 0, 0))) for i in range(n)]


def test_builtin_rules_are_registered():
    assert set(retention_rules()) >= {
        "drop_on_success",
        "drop_on_effect",
        "skip_identical",
        "downscale_old",
        "a11y_old",
    }
    assert get_retention("drop_on_success") is drop_on_success


def test_registering_a_different_function_under_a_taken_name_raises():
    with pytest.raises(
        RegistryError,
        match="Duplicate retention rule 'drop_on_success': already registered to drop_on_success",
    ):
        register_retention("drop_on_success")(lambda view, state: None)
    register_retention("drop_on_success")(drop_on_success)  # the same function again is harmless


def test_an_unknown_rule_is_a_registry_error_of_the_whole_stack():
    with pytest.raises(env_errors.RegistryError, match=r"Did you mean 'a11y_old'\? Known: a11y_old, "):
        get_retention("a11y_odl")


@pytest.mark.parametrize(
    ("step", "window", "start"), [(0, 4, 0), (3, 4, 0), (4, 4, 1), (9, 2, 8), (9, 1, 9), (9, None, 0)]
)
def test_window_start_counts_the_current_frame(step, window, start):
    assert window_start(step, window) == start


def test_rules_apply_in_order_and_stop_once_the_pixels_are_gone(monkeypatch):
    rules = Registry("retention rule", error=RegistryError)  # keep the global registry clean
    for name in retention.RULES:
        rules.add(name, retention.get_retention(name))
    monkeypatch.setattr(retention, "RULES", rules)
    register_retention("test_always_downscale")(lambda view, state: Verdict(FrameForm.DOWNSCALED))
    fs = frames(3)
    steps = [Step(fs[0], "", "", MCP, Evidence(True)), Step(fs[1], "", "", MCP, Evidence(False))]
    # drop first: frame 1 (after a successful call) becomes a placeholder and is not downscaled.
    plan = plan_retention(
        steps, Observation(fs[2]), RetentionConfig(rules=("drop_on_success", "test_always_downscale"))
    )
    assert [(r.frame, r.rule, r.form) for r in plan.records] == [
        (0, "window", FrameForm.IMAGE),
        (0, "test_always_downscale", FrameForm.DOWNSCALED),
        (1, "window", FrameForm.IMAGE),
        (1, "drop_on_success", FrameForm.PLACEHOLDER),
        (2, "window", FrameForm.IMAGE),
        (2, "test_always_downscale", FrameForm.DOWNSCALED),
    ]
    assert [r.kept for r in plan.records] == [True, True, True, False, True, True]


def test_gui_steps_never_trigger_the_drop_rules():
    fs = frames(2)
    gui = Call("computer_use", {"action": "wait", "time": 1})
    plan = plan_retention(
        [Step(fs[0], "", "", gui)],
        Observation(fs[1]),
        RetentionConfig(rules=("drop_on_success", "drop_on_effect")),
    )
    assert plan.shown_frames() == [0, 1]


def test_a11y_old_bounds_the_text_with_the_stack_marker():
    tree = "row A1=7 " * 100
    steps = [Step(Frame(Image.new("RGB", (4, 4)), a11y=tree), "", "", MCP, Evidence(False))]
    plan = plan_retention(
        steps, Observation(frames(2)[1]), RetentionConfig(rules=("a11y_old",), a11y_max_chars=120)
    )
    (record,) = [r for r in plan.records if r.rule == "a11y_old"]
    body = record.text.removeprefix(retention.A11Y_HEADER)
    dropped = len(tree) - body.index("\n[...")
    assert len(body) == 120 and body.endswith(TRUNCATION_MARKER.format(dropped=dropped))
    assert tree.startswith(body[: 120 - len(TRUNCATION_MARKER.format(dropped=dropped))])


def test_the_sft_context_rule_keeps_pixels_of_the_newest_three_frames_and_shrinks_the_previous_two():
    # win31+images+downscale (grpo_trainer's SFT context rule): at step 6, frames 4..6 keep pixels,
    # 4 and 5 downscaled, 6 (current) whole, 0..3 become the marker; none leaves the window.
    shots = frames(7)
    steps = [Step(shots[i], "", "", Call("computer_use", {"action": "wait"})) for i in range(6)]
    config = retention_from_name("win31+images+downscale")
    final = plan_retention(steps, Observation(shots[6]), config).final()
    assert [final[i].form for i in range(7)] == [FrameForm.PLACEHOLDER] * 4 + [
        FrameForm.DOWNSCALED,
        FrameForm.DOWNSCALED,
        FrameForm.IMAGE,
    ]
    assert final[0].text == OUTSIDE_IMAGE_WINDOW and final[0].rule == "image_window"

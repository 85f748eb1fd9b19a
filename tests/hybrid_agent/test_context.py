"""Hand-written trajectories with the exact message lists the builder must produce."""

import base64
import io

import pytest
from hybrid_agent.context import ContextConfig, build_context
from hybrid_agent.errors import ConfigError, ContextError, RegistryError
from hybrid_agent.messages import to_openai
from hybrid_agent.prompt import system_prompt
from hybrid_agent.retention import (
    DROPPED_AFTER_EFFECT,
    DROPPED_AFTER_SUCCESS,
    DROPPED_IDENTICAL,
    FrameForm,
    RetentionConfig,
    RetentionPlan,
)
from hybrid_agent.toolset import ToolSpec
from hybrid_agent.trajectory import Call, Evidence, Frame, Observation, Step
from PIL import Image

INSTRUCTION = "Put 7 in A1 and save."
CLICK = Call("computer_use", {"action": "left_click", "coordinate": [100, 200]})
SAVE_KEY = Call("computer_use", {"action": "key", "keys": ["ctrl", "s"]})
SET = Call("libreoffice_calc.set_cell_value", {"cell": "A1", "value": "7"})
REPLACE = Call("libreoffice_calc2.fill_blank_down", {"range": "A1:A9"})
SORT = Call("libreoffice_calc.sort_column", {"column": "B"})
CALC_TOOLS = [ToolSpec("libreoffice_calc", "set_cell_value", "Write one cell.")]


def frame(shade: int, size=(16, 12), a11y=None) -> Frame:
    return Frame(Image.new("RGB", size, (shade, shade, shade)), a11y=a11y)


FRAMES = [frame(i * 40) for i in range(6)]


def tool_call(call: Call) -> str:
    return f"<tool_call>\n{call.to_json()}\n</tool_call>"


def trajectory():
    """Five steps: GUI, MCP ok (effect 1), MCP ok (effect 0), MCP failed, GUI without Action line."""
    steps = [
        Step(
            FRAMES[0],
            "",
            "<think>A1 is top left.</think>\nAction: Click cell A1.\n" + tool_call(CLICK),
            CLICK,
        ),
        Step(FRAMES[1], "", "Action: Write 7 into A1.\n" + tool_call(SET), SET, Evidence(True, 1)),
        Step(FRAMES[2], "R1", "Action: Fill blanks down.\n" + tool_call(REPLACE), REPLACE, Evidence(True, 0)),
        Step(FRAMES[3], "R2", "Action: Sort column B.\n" + tool_call(SORT), SORT, Evidence(False)),
        Step(FRAMES[4], "ERR", tool_call(SAVE_KEY), SAVE_KEY),
    ]
    return steps, Observation(FRAMES[5], "")


HISTORY = [
    "Click cell A1.",
    "Write 7 into A1.",
    "Fill blanks down.",
    "Sort column B.",
    "key(keys=['ctrl', 's'])",
]


def assistant(index: int, steps, think=False) -> dict:
    head = "<think>\nA1 is top left.\n</think>\n\n" if think and index == 0 else ""
    return {
        "role": "assistant",
        "content": f"{head}Action: {HISTORY[index]}\n{tool_call(steps[index].call)}",
    }


def current_text(n: int) -> str:
    lines = "\n".join(f"Step {i + 1}: {HISTORY[i]}" for i in range(n)) or "None"
    return (
        "Choose the next step from the screenshot, the instruction and the previous actions.\n\n"
        f"Instruction: {INSTRUCTION}\n\nPrevious actions:\n{lines}"
    )


def img(i: int) -> dict:
    return {"type": "image", "image": FRAMES[i].image}


def txt(text: str) -> dict:
    return {"type": "text", "text": text}


def build(window=4, rules=(), keep_think=False, n=5, tools=()):
    steps, current = trajectory()
    if n < 5:
        current = Observation(FRAMES[n], steps[n].tool_result)
    config = ContextConfig(retention=RetentionConfig(window=window, rules=rules), keep_think=keep_think)
    return build_context(steps[:n], current, INSTRUCTION, list(tools), config)


def system() -> dict:
    return {"role": "system", "content": system_prompt([])}


def test_window_4_shows_three_past_steps_and_the_current_one():
    steps, _ = trajectory()
    assert build().messages == [
        system(),
        {"role": "user", "content": [txt("Tool result: R1"), img(2)]},
        assistant(2, steps),
        {"role": "user", "content": [txt("Tool result: R2"), img(3)]},
        assistant(3, steps),
        {"role": "user", "content": [txt("Tool result: ERR"), img(4)]},
        assistant(4, steps),
        {"role": "user", "content": [img(5), txt(current_text(5))]},
    ]


def test_window_1_shows_only_the_current_turn_with_the_full_history():
    assert build(window=1).messages == [system(), {"role": "user", "content": [img(5), txt(current_text(5))]}]


def test_window_edges_before_the_window_is_full():
    steps, _ = trajectory()
    # Step 0: nothing before, "None" history.
    assert build(n=0).messages == [system(), {"role": "user", "content": [img(0), txt(current_text(0))]}]
    # Step 2 with k=4: both past steps are inside; the tool result R1 belongs to the current turn.
    assert build(n=2).messages == [
        system(),
        {"role": "user", "content": [img(0)]},
        assistant(0, steps),
        {"role": "user", "content": [img(1)]},
        assistant(1, steps),
        {"role": "user", "content": [txt("Tool result: R1"), img(2), txt(current_text(2))]},
    ]
    # window=None keeps every step.
    assert len(build(window=None).messages) == 1 + 2 * 5 + 1


def test_drop_on_success_replaces_frames_after_successful_calls_and_keeps_the_one_after_a_failure():
    steps, _ = trajectory()
    context = build(rules=("drop_on_success",))
    assert context.messages == [
        system(),
        {"role": "user", "content": [txt("Tool result: R1"), txt(DROPPED_AFTER_SUCCESS)]},  # after SET ok
        assistant(2, steps),
        {
            "role": "user",
            "content": [txt("Tool result: R2"), txt(DROPPED_AFTER_SUCCESS)],
        },  # after effect-0 ok
        assistant(3, steps),
        {"role": "user", "content": [txt("Tool result: ERR"), img(4)]},  # after the failed SORT: kept
        assistant(4, steps),
        {"role": "user", "content": [img(5), txt(current_text(5))]},
    ]
    assert context.plan.shown_frames() == [4, 5]


def test_drop_gated_on_effect_keeps_the_frame_after_a_zero_effect_call():
    context = build(rules=("drop_on_effect",))
    assert context.messages[1] == {
        "role": "user",
        "content": [txt("Tool result: R1"), txt(DROPPED_AFTER_EFFECT.format(effect=1))],
    }
    assert context.messages[3] == {"role": "user", "content": [txt("Tool result: R2"), img(3)]}
    final = context.plan.final()
    assert (final[3].rule, final[3].kept, final[3].form) == ("drop_on_effect", True, FrameForm.IMAGE)
    assert (final[4].rule, final[4].kept) == ("window", True)  # a failed call: the rule does not apply


def test_dropped_current_frame_leaves_a_placeholder_in_the_current_turn():
    context = build(n=2, rules=("drop_on_success",))
    assert context.messages[-1]["content"] == [
        txt("Tool result: R1"),
        txt(DROPPED_AFTER_SUCCESS),
        txt(current_text(2)),
    ]


def test_keep_think_shows_past_reasoning_only_when_asked():
    steps, _ = trajectory()
    assert build(n=1).messages[2] == assistant(0, steps)
    assert build(n=1, keep_think=True).messages[2] == assistant(0, steps, think=True)


def test_tool_result_is_cut_at_l_characters_with_a_marker():
    steps, current = trajectory()
    current = Observation(FRAMES[5], "x" * 2000)
    messages = build_context(steps, current, INSTRUCTION, []).messages
    # osworld_mcp_env.text.truncate: the marker counts inside the 1500-character bound.
    assert messages[-1]["content"][0] == txt(
        "Tool result: " + "x" * 1464 + "\n[... truncated 536 characters ...]"
    )
    short = build_context(steps, Observation(FRAMES[5], "x" * 1500), INSTRUCTION, []).messages
    assert short[-1]["content"][0] == txt("Tool result: " + "x" * 1500)


def test_system_message_lists_computer_use_first_then_the_retrieved_tools_one_per_line():
    content = build(tools=CALC_TOOLS).messages[0]["content"]
    block = content.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0].split("\n")
    assert len(block) == 2
    assert block[0].startswith('{"type": "function", "function": {"name": "computer_use"')
    assert block[1].startswith('{"type": "function", "function": {"name": "libreoffice_calc.set_cell_value"')
    assert "call it by name" in content
    assert "call it by name" not in build().messages[0]["content"]


def identical_run(shades, window=4, max_skips=2):
    frames = [frame(s) for s in shades]
    steps = [
        Step(f, "", "Action: wait", Call("computer_use", {"action": "wait", "time": 1})) for f in frames[:-1]
    ]
    config = ContextConfig(
        retention=RetentionConfig(window=window, rules=("skip_identical",), max_consecutive_skips=max_skips)
    )
    return build_context(steps, Observation(frames[-1]), "x", [], config)


def test_identical_frame_is_skipped_when_its_twin_is_shown():
    context = identical_run([10, 10, 20, 20])
    users = [m["content"] for m in context.messages if m["role"] == "user"]
    assert [part["type"] for part in users[0]] == ["image"]
    assert users[1] == [txt(DROPPED_IDENTICAL)]
    assert users[2][0]["type"] == "image"
    assert users[3][0] == txt(DROPPED_IDENTICAL)
    assert context.plan.shown_frames() == [0, 2]


def test_identical_skip_stops_after_max_consecutive_and_never_skips_a_twin_outside_the_window():
    assert identical_run([10, 10, 10, 10]).plan.shown_frames() == [0, 3]  # frames 1, 2 skipped, 3 kept
    assert identical_run([10, 10], window=1).plan.shown_frames() == [1]  # twin 0 is out of the window


def test_downscale_old_halves_past_frames_and_keeps_the_current_one():
    steps, current = trajectory()
    config = ContextConfig(retention=RetentionConfig(window=2, rules=("downscale_old",)))
    messages = build_context(steps, current, INSTRUCTION, [], config).messages
    past, now = messages[1]["content"][1]["image"], messages[3]["content"][0]["image"]
    assert past.size == (8, 6) and now is FRAMES[5].image


def test_a11y_old_replaces_past_frames_that_have_text():
    steps, current = trajectory()
    steps[4] = Step(frame(1, a11y="table A1=7 " * 10), "ERR", steps[4].response, SAVE_KEY)
    # 60: room for osworld_mcp_env.text.truncate's marker inside the bound (20 would cut bare).
    config = ContextConfig(retention=RetentionConfig(window=3, rules=("a11y_old",), a11y_max_chars=60))
    messages = build_context(steps, current, INSTRUCTION, [], config).messages
    assert messages[1]["content"][1] == img(3)  # no a11y text: stays an image
    expected = "[Screenshot replaced by its accessibility tree]\n" + ("table A1=7 " * 10)[:25]
    assert messages[3]["content"][1] == txt(expected + "\n[... truncated 85 characters ...]")


def test_a_stored_plan_replays_the_same_messages():
    steps, current = trajectory()
    config = ContextConfig(retention=RetentionConfig(window=3, rules=("drop_on_success", "skip_identical")))
    original = build_context(steps, current, INSTRUCTION, [], config)
    plan = RetentionPlan.from_dicts(original.plan.to_dicts())
    replayed = build_context(steps, current, INSTRUCTION, [], ContextConfig(), plan=plan)
    assert replayed.messages[1:] == original.messages[1:]
    with pytest.raises(ContextError, match="plan is for step 5 but the trajectory is at step 4"):
        build_context(steps[:4], current, INSTRUCTION, [], plan=plan)


def test_every_frame_gets_a_window_record():
    records = build(window=2, rules=("drop_on_success",)).plan.records
    assert [(r.frame, r.rule, r.kept) for r in records] == [
        (0, "window", False),
        (1, "window", False),
        (2, "window", False),
        (3, "window", False),
        (4, "window", True),
        (5, "window", True),
    ]
    assert all(r.step == 5 for r in records)


def test_unknown_rule_names_list_the_known_ones():
    with pytest.raises(
        RegistryError, match=r"Did you mean 'drop_on_success'\?.*Known: a11y_old, .*skip_identical"
    ):
        RetentionConfig(rules=("drop_on_sucess",))
    with pytest.raises(ConfigError, match="counts the current frame"):
        RetentionConfig(window=0)


def test_openai_format_carries_the_same_pixels_as_a_data_url():
    messages = to_openai(build(window=1).messages)
    part = messages[-1]["content"][0]
    assert part["type"] == "image_url"
    header, data = part["image_url"]["url"].split(",", 1)
    assert header == "data:image/png;base64"
    decoded = Image.open(io.BytesIO(base64.b64decode(data)))
    assert decoded.tobytes() == FRAMES[5].image.tobytes()
    assert messages[0] == system()

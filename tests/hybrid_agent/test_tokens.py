import pytest
from hybrid_agent.context import ContextConfig, build_context
from hybrid_agent.errors import ConfigError
from hybrid_agent.messages import images_of, text_part
from hybrid_agent.retention import RetentionConfig
from hybrid_agent.tokens import TaskTokens, TokenCounter, VisionGrid, summarize_tokens
from hybrid_agent.trajectory import Call, Evidence, Frame, Observation, Step
from PIL import Image

tiny_qwen = pytest.importorskip("tiny_qwen", reason="needs the tokens extra")


def processor_count(proc, messages) -> int:
    """The processor's own count: chat template + tokenizer + image expansion."""
    out = proc.apply_chat_template(messages, tokenize=True, add_generation_prompt=True, return_dict=True)
    return len(out["input_ids"][0])


def solid(width, height, shade=0):
    return Image.new("RGB", (width, height), (shade, 40, 80))


def test_qwen3_vl_full_hd_frame_is_2040_tokens_by_the_real_image_processor():
    ip = tiny_qwen.qwen3_vl_image_processor()
    out = ip(images=[solid(1920, 1080)], return_tensors="np")
    # 1080 -> 1088 (34 x 32), 1920 -> 1920 (60 x 32): grid 68 x 120 patches, merged 34 x 60.
    assert out["image_grid_thw"].tolist() == [[1, 68, 120]]
    assert VisionGrid.from_image_processor(ip).tokens(1920, 1080) == 2040 == 34 * 60
    assert VisionGrid.qwen3_vl().tokens(960, 540) == 510  # half size: 17 x 30 (544 x 960)


@pytest.mark.parametrize("size", [(1920, 1080), (1280, 720), (1366, 767), (100, 40), (3840, 2160)])
def test_vision_grid_matches_the_image_processor_grid(size):
    ip = tiny_qwen.qwen3_vl_image_processor()
    grid = ip(images=[solid(*size)], return_tensors="np")["image_grid_thw"].tolist()[0]
    assert list(VisionGrid.from_image_processor(ip).grid(*size)) == grid


def small_trajectory():
    gui = Call("computer_use", {"action": "left_click", "coordinate": [10, 20]})
    mcp = Call("libreoffice_calc.set_cell_value", {"cell": "A1", "value": "7"})
    steps = [
        Step(
            Frame(solid(96, 64, 1)),
            "",
            "<think>look</think>\nAction: click A1\n<tool_call>x</tool_call>",
            gui,
        ),
        Step(Frame(solid(200, 130, 2)), "", "Action: write A1", mcp, Evidence(True, 1)),
        Step(Frame(solid(33, 47, 3)), "wrote 1 cell " * 200, "Action: click B2", gui),
    ]
    return steps, Observation(Frame(solid(640, 360, 4)), "")


@pytest.mark.parametrize("rules", [(), ("drop_on_success",), ("downscale_old",)])
@pytest.mark.parametrize("window", [1, 2, 4])
def test_counter_equals_the_processor_on_built_contexts(window, rules):
    proc = tiny_qwen.processor(tiny_qwen.small_image_processor())
    counter = TokenCounter.from_processor(proc)
    steps, current = small_trajectory()
    config = ContextConfig(retention=RetentionConfig(window=window, rules=rules), keep_think=True)
    messages = build_context(steps, current, "Put 7 in A1", [], config).messages
    counted = counter.count(messages)
    assert counted.total == processor_count(proc, messages)
    assert len(counted.per_image) == len(images_of(messages))


def test_counter_with_the_real_qwen3_vl_image_settings_counts_2040_per_full_hd_frame():
    proc = tiny_qwen.processor(tiny_qwen.qwen3_vl_image_processor())
    counter = TokenCounter.from_processor(proc)
    messages = [
        {"role": "system", "content": "You are a computer-use agent."},
        {
            "role": "user",
            "content": [{"type": "image", "image": solid(1920, 1080)}, text_part("Instruction: go")],
        },
    ]
    counted = counter.count(messages)
    assert counted.per_image == (2040,)
    assert counted.total == processor_count(proc, messages)
    assert counted.text == counted.total - 2040


def test_counter_built_from_parts_equals_counter_from_processor():
    tok = tiny_qwen.tiny_tokenizer()
    from hybrid_agent.tokens import QWEN_CHATML_TEMPLATE

    parts = TokenCounter(tok, VisionGrid(16, 2, 32 * 32 * 4, 128 * 128), chat_template=QWEN_CHATML_TEMPLATE)
    proc = tiny_qwen.processor(tiny_qwen.small_image_processor())
    steps, current = small_trajectory()
    messages = build_context(steps, current, "go", []).messages
    assert parts.count(messages) == TokenCounter.from_processor(proc).count(messages)


def test_pad_token_typed_into_text_is_refused():
    proc = tiny_qwen.processor(tiny_qwen.small_image_processor())
    counter = TokenCounter.from_processor(proc)
    messages = [{"role": "user", "content": [text_part("<|image_pad|>")]}]
    with pytest.raises(ConfigError, match="1 <\\|image_pad\\|> tokens for 0 images"):
        counter.count(messages)


def test_output_tokens_are_the_tokenizer_length():
    proc = tiny_qwen.processor(tiny_qwen.small_image_processor())
    counter = TokenCounter.from_processor(proc)
    text = "Action: click\n<tool_call>{}</tool_call>"
    assert counter.count_output(text) == len(proc.tokenizer(text)["input_ids"])


def test_summary_per_task_and_p95_peak():
    tasks = []
    for peak in range(1, 21):  # peaks 1..20
        task = TaskTokens()
        task.add(peak, 2)
        task.add(1, 3)
        tasks.append(task)
    summary = summarize_tokens(tasks)
    assert summary.tasks == 20
    assert summary.input_per_task == pytest.approx(sum(p + 1 for p in range(1, 21)) / 20)  # 11.5
    assert summary.input_per_step == pytest.approx(11.5 / 2)
    # numpy linear percentile of 1..20 at 95 %: index 0.95 * 19 = 18.05 -> 19 + 0.05 = 19.05
    assert summary.peak_p95 == pytest.approx(19.05)
    assert summary.peak_max == 20
    assert summary.output_per_task == 5
    assert summary.to_metrics()["tokens/peak_p95"] == pytest.approx(19.05)
    with pytest.raises(ConfigError):
        summarize_tokens([])

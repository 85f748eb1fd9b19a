"""OpenCUA pyautogui replies (written from its documented format) -> exact env calls; code is never run."""

import pytest
from hybrid_agent.adapters import get_adapter
from hybrid_agent.parse import ParsedAction, ParseError, ParseErrorCode

SCREEN = (1920, 1080)  # seen as 1932x1092 (Qwen2.5-VL's smart_resize, released bounds)


def _reply(code: str) -> str:
    head = "## Thought: The Save button is in the centre.\n## Action: Click Save.\n"
    return f"{head}## Code:\n```python\n{code}\n```"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("pyautogui.click(x=966, y=546)", {"action": "left_click", "coordinate": [960, 540]}),
        ("pyautogui.click(966, 546)", {"action": "left_click", "coordinate": [960, 540]}),
        ("pyautogui.click(x=966, y=546, clicks=2)", {"action": "double_click", "coordinate": [960, 540]}),
        ("pyautogui.click(x=0, y=0, button='right')", {"action": "right_click", "coordinate": [0, 0]}),
        ("pyautogui.doubleClick(x=966, y=546)", {"action": "double_click", "coordinate": [960, 540]}),
        ("pyautogui.rightClick(x=966, y=546)", {"action": "right_click", "coordinate": [960, 540]}),
        ("computer.tripleClick(x=966, y=546)", {"action": "triple_click", "coordinate": [960, 540]}),
        # the function OpenCUA's system prompt advertises (and its AgentNetBench parser reads)
        ("computer.triple_click(x=966, y=546)", {"action": "triple_click", "coordinate": [960, 540]}),
        ("computer.triple_click(x=483, y=273)", {"action": "triple_click", "coordinate": [480, 270]}),
        (  # the usual drag: the pointer to the start, then dragTo the end (1932x1092 -> 1920x1080)
            "pyautogui.moveTo(x=483, y=273)\npyautogui.dragTo(x=966, y=546, duration=0.5)",
            {"action": "left_click_drag", "start_coordinate": [480, 270], "coordinate": [960, 540]},
        ),
        (
            "pyautogui.moveTo(0, 0)\npyautogui.dragTo(1931, 1091, button='left')",
            {"action": "left_click_drag", "start_coordinate": [0, 0], "coordinate": [1919, 1079]},
        ),
        ("pyautogui.moveTo(1931, 1091)", {"action": "mouse_move", "coordinate": [1919, 1079]}),
        ("pyautogui.dragTo(x=966, y=546)", {"action": "left_click_drag", "coordinate": [960, 540]}),
        ("pyautogui.scroll(-5)", {"action": "scroll", "pixels": -250}),
        ("pyautogui.scroll(3, x=966, y=546)", {"action": "scroll", "pixels": 150, "coordinate": [960, 540]}),
        ("pyautogui.hscroll(2)", {"action": "hscroll", "pixels": 100}),
        ("pyautogui.write(message='=SUM(A1:A3)\\n')", {"action": "type", "text": "=SUM(A1:A3)\n"}),
        ("pyautogui.typewrite('abc')", {"action": "type", "text": "abc"}),
        ("pyautogui.press('enter')", {"action": "key", "keys": ["enter"]}),
        ("pyautogui.hotkey('ctrl', 's')", {"action": "key", "keys": ["ctrl", "s"]}),
        ("pyautogui.hotkey(['ctrl', 'shift', 'T'])", {"action": "key", "keys": ["ctrl", "shift", "t"]}),
        ("computer.wait()", {"action": "wait", "time": 5.0}),
        ("computer.terminate(status='success')", {"action": "terminate", "status": "success"}),
        ("computer.terminate(status='failure')", {"action": "terminate", "status": "failure"}),
        ("computer.terminate(status='success', answer='42')", {"action": "answer", "text": "42"}),
    ],
)
def test_opencua_statements_become_env_calls_in_screen_pixels(code, expected):
    parsed = get_adapter("opencua").parse(_reply(code), [], SCREEN)
    assert isinstance(parsed, ParsedAction), parsed
    assert parsed.call.arguments == expected
    assert parsed.think == "The Save button is in the centre." and parsed.action_line == "Click Save."


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("## Thought: hmm\n## Action: click", ParseErrorCode.NO_TOOL_CALL),
        (_reply("pyautogui.click(x=966, y=546"), ParseErrorCode.INVALID_SYNTAX),
        (_reply("import os; os.system('rm -rf ~')"), ParseErrorCode.INVALID_SYNTAX),  # never run
        (_reply("pyautogui.click(x=__import__('os').getpid(), y=1)"), ParseErrorCode.INVALID_SYNTAX),
        (_reply("x = 5"), ParseErrorCode.INVALID_SYNTAX),
        (_reply("os.system('ls')"), ParseErrorCode.UNKNOWN_GUI_ACTION),
        (_reply("pyautogui.screenshot()"), ParseErrorCode.UNKNOWN_GUI_ACTION),
        (_reply("pyautogui.click()"), ParseErrorCode.MISSING_ARGUMENTS),
        (_reply("pyautogui.click(x=1, y=1, clicks=4)"), ParseErrorCode.INVALID_ARGUMENTS),
        (_reply("pyautogui.click(x=2000, y=10)"), ParseErrorCode.OUT_OF_SPACE),
        (_reply("pyautogui.click(x=1, y=1)\npyautogui.write('a')"), ParseErrorCode.MULTIPLE_TOOL_CALLS),
        # only moveTo then dragTo is one drag
        (_reply("pyautogui.moveTo(x=1, y=1)\npyautogui.click(x=5, y=5)"), ParseErrorCode.MULTIPLE_TOOL_CALLS),
        (
            _reply("pyautogui.dragTo(x=5, y=5)\npyautogui.moveTo(x=1, y=1)"),
            ParseErrorCode.MULTIPLE_TOOL_CALLS,
        ),
        (
            _reply("pyautogui.moveTo(x=1, y=1)\npyautogui.dragTo(x=5, y=5)\npyautogui.click(x=5, y=5)"),
            ParseErrorCode.MULTIPLE_TOOL_CALLS,
        ),
        (_reply("pyautogui.moveTo()\npyautogui.dragTo(x=5, y=5)"), ParseErrorCode.MISSING_ARGUMENTS),
        (_reply("pyautogui.moveTo(x=1, y=1)\npyautogui.dragTo(x=1, y=2000)"), ParseErrorCode.OUT_OF_SPACE),
        (_reply("computer.triple_click(x=966)"), ParseErrorCode.INVALID_ARGUMENTS),
        (_reply("pyautogui.scroll('down')"), ParseErrorCode.INVALID_ARGUMENTS),
        (_reply("pyautogui.write()"), ParseErrorCode.MISSING_ARGUMENTS),
        (_reply("computer.terminate(status='maybe')"), ParseErrorCode.INVALID_ARGUMENTS),
    ],
)
def test_malformed_opencua_replies_are_typed_errors(text, code):
    parsed = get_adapter("opencua").parse(text, [], SCREEN)
    assert isinstance(parsed, ParseError) and parsed.code == code, parsed


def test_opencua_sees_the_resized_screenshot_and_is_told_its_size():
    from hybrid_agent.prompt import PromptConfig
    from PIL import Image

    adapter = get_adapter("opencua")
    assert adapter.preprocess(Image.new("RGB", SCREEN)).size == (1932, 1092)
    prompt = adapter.system_prompt([], SCREEN, PromptConfig())
    assert "1932x1092" in prompt and "computer.triple_click(x=, y=)" in prompt

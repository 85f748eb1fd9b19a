import pytest
from hybrid_agent.step_kind import StepKind, classify_step, cli_step_failed

HEREDOC_CLICK = "python3 <<'PY'\nimport pyautogui\npyautogui.click(500, 300)\nPY"


@pytest.mark.parametrize(
    ("name", "arguments", "kind"),
    [
        ("computer_use", {"action": "left_click", "coordinate": [1, 2]}, StepKind.GUI),
        ("computer_use", {"action": "type", "text": "ls -la\n"}, StepKind.GUI),
        ("computer_use", {"action": "wait", "time": 1}, StepKind.CONTROL),
        ("computer_use", {"action": "terminate", "status": "success"}, StepKind.CONTROL),
        ("computer_use", {"action": "answer", "text": "42"}, StepKind.CONTROL),
        # The env's shell channel: pyautogui anywhere in the command makes it a GUI step.
        ("bash", {"command": HEREDOC_CLICK}, StepKind.GUI),
        ("bash", {"command": "ls ~ | head -3"}, StepKind.CLI),
        ("bash", {"command": "pip show pyautogui"}, StepKind.GUI),  # HybridCUA's test is the substring
        ("bash", {}, StepKind.CLI),
        # HybridCUA's own function, under either of its names, before the adapter maps it.
        ("computer_use", {"action": "bash", "command": HEREDOC_CLICK}, StepKind.GUI),
        ("cli", {"action": "bash", "command": "grep -c x f.txt"}, StepKind.CLI),
        ("cli", {"action": "terminate", "status": "failure"}, StepKind.CONTROL),
        ("cli", {"action": "wait", "time": "2"}, StepKind.CONTROL),
        # MCP tools, the os server's included, are tool calls, never CLI steps.
        ("libreoffice_calc.set_cell_value", {"cell": "A1", "value": "1"}, StepKind.TOOL),
        ("os.search_files", {"keyword": "x"}, StepKind.TOOL),
        ("made_up_tool", {}, StepKind.TOOL),
    ],
)
def test_classify_step_follows_hybridcuas_appendix_b(name, arguments, kind):
    assert classify_step(name, arguments) is kind


@pytest.mark.parametrize(
    ("exit_code", "stderr", "timed_out", "infra", "failed"),
    [
        (0, "", False, False, False),  # ls ~ | head -3
        (0, "warning: x\n", False, False, False),  # success with noise on stderr
        (2, "ls: cannot access '/nonexistent': No such file or directory\n", False, False, True),
        (1, "", False, False, False),  # grep without a match
        (1, " \n", False, False, False),  # whitespace alone is empty stderr
        (1, "sed: -e expression #1: unknown command\n", False, False, True),
        (127, "bash: line 1: foobarbaz: command not found\n", False, False, True),
        (-1, "", True, False, True),  # killed at its timeout
        (None, "", True, False, True),
        (None, "", False, False, False),  # no exit status, no timeout: not known to have failed
        (2, "boom", False, True, False),  # the desktop failed, not the command
        (255, "Failed to execute command: guest unreachable", False, False, False),  # layer's marker
    ],
)
def test_cli_step_failed_matches_hybridcuas_exec_failed(exit_code, stderr, timed_out, infra, failed):
    assert cli_step_failed(exit_code, stderr, timed_out, infra_error=infra) is failed

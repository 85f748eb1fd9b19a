"""VS Code on the embedded desktop: code-server's workbench as OSWorld's VS Code tasks use it.

``code`` (the guest's ``bin/code``) starts code-server as the desktop user on the
sandbox's loopback and shows it in a Chromium app window titled like VS Code's; user data
goes where VS Code keeps it. OSWorld tasks 276cc624 (line length for wrapping: 50) and
930fdb3b (Ctrl+J from the terminal to the editor) run as they are: untouched they score
0; set through VS Code's own "Open User Settings (JSON)" / "Open Keyboard Shortcuts
(JSON)" commands, typed into the window and saved, they score 1.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from osworld_mcp_env.evaluators import evaluate
from osworld_mcp_env.tasks import TaskContext, TaskRunConfig, read_task_file, run_setup
from polling import wait_until
from task_data import OSWORLD_EXAMPLES
from vscode_support import CODE_SERVER, fresh_vs_code, run_command, type_json_and_save, vs_code_window

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        not CODE_SERVER.is_file(), reason="code-server is not installed (tools/install_code_server.sh)"
    ),
]


def test_code_opens_a_folder_as_the_desktop_user_with_vs_codes_paths(desktop):
    desktop.execute(["mkdir", "-p", "/home/user/proj"])
    desktop.launch(["code", "/home/user/proj"])
    window = wait_until(lambda: vs_code_window(desktop, "proj"), 180, "VS Code's window on proj")
    assert window.title.endswith("proj - Visual Studio Code")
    owners = desktop.execute("ps -o user= -C node,chromium", shell=True).output.split()
    assert owners and set(owners) == {"user"}
    listed = desktop.execute(["code", "--list-extensions"])
    assert listed.returncode == 0, listed.error
    assert desktop.execute(["test", "-d", "/home/user/.config/Code/User"]).returncode == 0
    assert desktop.execute(["test", "-d", "/home/user/.vscode/extensions"]).returncode == 0


def _solve_through_a_json_editor(
    desktop, tmp_path: Path, task_id: str, command: str, text: str, file: str, below: int = 0
) -> None:
    """No-op then oracle: opens the JSON file with VS Code's ``command``, types ``text``, saves."""
    task = read_task_file(next(OSWORLD_EXAMPLES.glob(f"vs_code/{task_id}-*.json")))
    ctx = TaskContext(task.id, tmp_path / "work", TaskRunConfig())
    fresh_vs_code(desktop)
    run_setup(task, desktop, ctx)
    window = wait_until(lambda: vs_code_window(desktop, "Walkthrough"), 180, "VS Code's workbench")
    assert evaluate(task, desktop, ctx).score == 0.0

    desktop.activate_window(window.title)
    run_command(desktop, command, file, below=below)
    saved = f"/home/user/.config/Code/User/{file}"
    type_json_and_save(desktop, file, saved, text)
    result = evaluate(task, desktop, ctx)
    assert result.score == 1.0, (result, desktop.execute(["cat", saved]).output)


def test_vs_code_task_276cc624_no_op_0_oracle_1(desktop, tmp_path: Path):
    command, text = "Preferences: Open User Settings (JSON)", '{"editor.wordWrapColumn": 50}'
    _solve_through_a_json_editor(desktop, tmp_path, "276cc624", command, text, "settings.json")


def test_vs_code_task_930fdb3b_no_op_0_oracle_1(desktop, tmp_path: Path):
    binding = (
        '[{"key": "ctrl+j", "command": "workbench.action.focusActiveEditorGroup", "when": "terminalFocus"}]'
    )
    # The palette lists "Open Default Keyboard Shortcuts (JSON)" (read-only) first.
    command = "Preferences: Open Keyboard Shortcuts (JSON)"
    _solve_through_a_json_editor(desktop, tmp_path, "930fdb3b", command, binding, "keybindings.json", below=1)

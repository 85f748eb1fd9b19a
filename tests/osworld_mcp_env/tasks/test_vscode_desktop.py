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
from polling import wait_until
from vscode_support import CODE_SERVER, solve_through_a_json_editor, vs_code_window

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


def test_vs_code_task_276cc624_no_op_0_oracle_1(desktop, tmp_path: Path):
    command, text = "Preferences: Open User Settings (JSON)", '{"editor.wordWrapColumn": 50}'
    solve_through_a_json_editor(desktop, tmp_path, "276cc624", command, text, "settings.json")


def test_vs_code_task_930fdb3b_no_op_0_oracle_1(desktop, tmp_path: Path):
    binding = (
        '[{"key": "ctrl+j", "command": "workbench.action.focusActiveEditorGroup", "when": "terminalFocus"}]'
    )
    # The palette lists "Open Default Keyboard Shortcuts (JSON)" (read-only) first.
    command = "Preferences: Open Keyboard Shortcuts (JSON)"
    solve_through_a_json_editor(desktop, tmp_path, "930fdb3b", command, binding, "keybindings.json", below=1)

"""OSWorld VS Code tasks from their shipped JSON on the embedded desktop's code-server (-m desktop).

Each task's own setup runs, then its own evaluator: untouched (the no-op) it scores 0,
after an oracle that acts as a user would it scores 1. The oracles use VS Code's
palette and keyboard to type settings into its JSON editors, or run ``code`` from a
shell (the terminal the task opened, where it asks for one); infeasible tasks are
solved by declaring them so (FAIL).

Two tasks read the ``vscode_config`` getter, which runs the command of OSWorld's
evaluation extension (installed by the task's setup from the file cache) from the
palette. The tests have no internet, so the cached extension is a stand-in made here:
a ``.vsix`` whose ``OpenProject`` command writes the names of the open workspace's
folders to ``~/OpenProject.txt``, what the tasks compare with ``project``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from osworld_mcp_env.evaluators import evaluate
from osworld_mcp_env.tasks import Task, TaskContext, TaskRunConfig, read_task_file, run_setup
from polling import wait_until
from task_data import OSWORLD_EXAMPLES, fill_stand_in_cache, zip_bytes
from vscode_support import CODE_SERVER, fresh_vs_code, solve_through_a_json_editor, type_text, vs_code_window

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.slow,
    pytest.mark.skipif(
        not CODE_SERVER.is_file(), reason="code-server is not installed (tools/install_code_server.sh)"
    ),
]

USER_SETTINGS = "Preferences: Open User Settings (JSON)"
# The palette lists "Open Default Keyboard Shortcuts (JSON)" (read-only) first.
USER_KEYBINDINGS = "Preferences: Open Keyboard Shortcuts (JSON)"

# The stand-in of OSWorld's evaluation extension: its command writes what vscode_config reads.
EXTENSION_JS = """\
const fs = require("fs");
const os = require("os");
const path = require("path");
const vscode = require("vscode");
exports.activate = (context) => {
  context.subscriptions.push(vscode.commands.registerCommand("eval.OpenProject", () => {
    const names = (vscode.workspace.workspaceFolders || []).map((folder) => folder.name);
    fs.writeFileSync(path.join(os.homedir(), "OpenProject.txt"), names.join("\\n"));
  }));
};
"""
EXTENSION_PACKAGE = {
    "name": "eval",
    "publisher": "osworld-stand-in",
    "version": "0.0.1",
    "engines": {"vscode": "^1.60.0"},
    "main": "./extension.js",
    "activationEvents": ["onCommand:eval.OpenProject"],
    "contributes": {"commands": [{"command": "eval.OpenProject", "title": "OpenProject"}]},
}
VSIX_MANIFEST = """\
<?xml version="1.0" encoding="utf-8"?>
<PackageManifest Version="2.0.0" xmlns="http://schemas.microsoft.com/developer/vsx-schema/2011">
  <Metadata>
    <Identity Language="en-US" Id="eval" Version="0.0.1" Publisher="osworld-stand-in"/>
    <DisplayName>eval</DisplayName>
    <Description xml:space="preserve">Stand-in of OSWorld's evaluation extension</Description>
  </Metadata>
  <Installation><InstallationTarget Id="Microsoft.VisualStudio.Code"/></Installation>
  <Dependencies/>
  <Assets>
    <Asset Type="Microsoft.VisualStudio.Code.Manifest" Path="extension/package.json" Addressable="true"/>
  </Assets>
</PackageManifest>
"""
CONTENT_TYPES = (
    '<?xml version="1.0" encoding="utf-8"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension=".json" ContentType="application/json"/>'
    '<Default Extension=".js" ContentType="application/javascript"/>'
    '<Default Extension=".vsixmanifest" ContentType="text/xml"/></Types>'
)


def _eval_extension_zip() -> bytes:
    """``vscodeEvalExtension.zip`` as the tasks unpack it: ``vscodeEvalExtension/eval-0.0.1.vsix``."""
    vsix = zip_bytes(
        {
            "extension.vsixmanifest": VSIX_MANIFEST,
            "[Content_Types].xml": CONTENT_TYPES,
            "extension/package.json": json.dumps(EXTENSION_PACKAGE),
            "extension/extension.js": EXTENSION_JS,
        }
    )
    return zip_bytes({"vscodeEvalExtension/eval-0.0.1.vsix": vsix})


STAND_INS = {
    "vscodeEvalExtension.zip": _eval_extension_zip(),
    "main.py": b'print("Hello from the project")\n',
    "README.md": b"# project\n\nA small project the task opens in VS Code.\n",
    "settings.json": b'{\n  "editor.tabSize": 4\n}\n',
}


def _task(domain: str, short_id: str) -> Task:
    return read_task_file(next(OSWORLD_EXAMPLES.glob(f"{domain}/{short_id}-*.json")))


def _context(task: Task, tmp_path: Path) -> TaskContext:
    """The run's context, with a file cache holding the stand-ins of the task's downloads."""
    cache = tmp_path / "cache"
    fill_stand_in_cache(cache, task, STAND_INS.__getitem__)
    return TaskContext(task.id, tmp_path / "work", TaskRunConfig(cache_roots=(cache,)))


def _set_up(desktop, task: Task, ctx: TaskContext) -> None:
    """The task's setup on the episode-start home, with no process of the user left from before."""
    fresh_vs_code(desktop)
    run_setup(task, desktop, ctx)


@pytest.mark.parametrize("short_id", ["7c4cc09e", "971cbb5b", "dcbe20e8"])
def test_infeasible_vs_code_task_no_op_0_fail_1(desktop, tmp_path: Path, short_id: str):
    task = _task("vs_code", short_id)
    ctx = _context(task, tmp_path)
    _set_up(desktop, task, ctx)
    wait_until(lambda: vs_code_window(desktop, "Walkthrough"), 180, "VS Code's workbench")
    assert evaluate(task, desktop, ctx).score == 0.0
    assert evaluate(task, desktop, ctx, declared_infeasible=True).score == 1.0


@pytest.mark.parametrize(
    ("short_id", "command", "text", "file", "below"),
    [
        ("9439a27b", USER_SETTINGS, '{"debug.focusEditorOnBreak": false}', "settings.json", 0),
        ("9d425400", USER_SETTINGS, '{"workbench.editor.wrapTabs": true}', "settings.json", 0),
        # Its setup has set the theme "Red"; the untouched settings score 0.
        ("982d12a5", USER_SETTINGS, '{"workbench.colorTheme": "Visual Studio Dark"}', "settings.json", 0),
        (
            "ea98c5d7",
            USER_KEYBINDINGS,
            '[{"key": "ctrl+f", "command": "-list.find", "when": "listFocus && listSupportsFind"}]',
            "keybindings.json",
            1,
        ),
    ],
)
def test_vs_code_setting_task_no_op_0_oracle_1(
    desktop, tmp_path: Path, short_id: str, command: str, text: str, file: str, below: int
):
    solve_through_a_json_editor(desktop, tmp_path, short_id, command, text, file, below)


def test_vs_code_task_53ad5833_open_a_folder_no_op_0_oracle_1(desktop, tmp_path: Path):
    task = _task("vs_code", "53ad5833")
    ctx = _context(task, tmp_path)
    _set_up(desktop, task, ctx)
    listed = desktop.execute(["code", "--list-extensions"]).output.split()
    assert "osworld-stand-in.eval" in listed
    window = wait_until(lambda: vs_code_window(desktop, "Walkthrough"), 180, "VS Code's workbench")
    # The getter removes the file first: one the agent wrote itself does not count.
    desktop.execute(["sh", "-c", "printf project > ~/OpenProject.txt"])
    assert evaluate(task, desktop, ctx).score == 0.0
    assert desktop.read_file("/home/user/OpenProject.txt") == b""  # the command ran: no folder open

    # The oracle: `code ~/project` from a shell, then the window on no folder closed.
    desktop.launch(["code", "/home/user/project"])
    wait_until(lambda: vs_code_window(desktop, "- project -"), 180, "VS Code on ~/project")
    desktop.close_window(window.title, strict=True)
    wait_until(lambda: vs_code_window(desktop, window.title) is None, 60, "the first window to close")
    result = evaluate(task, desktop, ctx)
    assert result.score == 1.0, (result, desktop.read_file("/home/user/OpenProject.txt"))


def test_multi_apps_task_510f64c8_code_from_the_terminal_no_op_0_oracle_1(desktop, tmp_path: Path):
    task = _task("multi_apps", "510f64c8")
    ctx = _context(task, tmp_path)
    for oracle in (False, True):
        _set_up(desktop, task, ctx)
        terminal = wait_until(
            lambda: next((w for w in desktop.windows() if "gnome-terminal" in w.wm_class), None),
            60,
            "gnome-terminal's window",
        )
        if oracle:
            desktop.activate_window(terminal.title)
            # `history -a` writes the line before the postconfig ends the terminal (see evaluators.md).
            type_text(desktop, "code ~/Desktop/project; history -a\n")
            wait_until(lambda: vs_code_window(desktop, "project"), 180, "VS Code on ~/Desktop/project")
        result = evaluate(task, desktop, ctx)
        assert result.score == (1.0 if oracle else 0.0), result

"""OSWorld's VS Code tasks that read the file cache, run from their shipped JSON (-m desktop).

The tests have no internet, so the files a task downloads and its gold files cannot be
OSWorld's own: each is a stand-in written here by hand, in the cache layout ``tasks
fetch`` fills, and named as the task names it. A gold is typed out apart from its input
(never computed from it, nor copied from what the oracle leaves), so the check still
compares two independent results. Each task starts from a fresh VS Code; untouched it
scores 0, and the oracle, keys a user presses in the VS Code window (the palette, the
find widget, Tab on a selection), scores 1. The two infeasible tasks score 0 untouched
and 1 when the agent declares them infeasible.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from osworld_mcp_env.backends.base import Desktop
from osworld_mcp_env.evaluators import evaluate
from osworld_mcp_env.tasks import Task, TaskContext, TaskRunConfig, read_task_file, run_setup
from polling import wait_until
from task_data import OSWORLD_EXAMPLES, fill_stand_in_cache, zip_bytes
from vscode_support import (
    CODE_SERVER,
    click_into_editor,
    fresh_vs_code,
    keys,
    run_command,
    save,
    type_json_and_save,
    type_text,
    vs_code_window,
)

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.slow,
    pytest.mark.skipif(
        not CODE_SERVER.is_file(), reason="code-server is not installed (tools/install_code_server.sh)"
    ),
]

REPLACE_TEXT = "Write the text here.\nThis text is plain text.\nSave the text when you are done.\n"
REPLACE_GOLD = "Write the test here.\nThis test is plain test.\nSave the test when you are done.\n"
# Indented with tabs, so VS Code's detected indentation (a tab) is what Tab adds.
INDENT_TEXT = (
    "import math\n"
    "def area(r):\n"
    "\treturn math.pi * r * r\n"
    "def perimeter(r):\n"
    "\treturn 2 * math.pi * r\n"
    "class Circle:\n"
    "\tdef __init__(self, r):\n"
    "\t\tself.r = r\n"
    "\tdef area(self):\n"
    "\t\treturn area(self.r)\n"
    "print(Circle(2).area())\n"
)
INDENT_GOLD = (
    "import math\n"
    "\tdef area(r):\n"
    "\t\treturn math.pi * r * r\n"
    "\tdef perimeter(r):\n"
    "\t\treturn 2 * math.pi * r\n"
    "\tclass Circle:\n"
    "\t\tdef __init__(self, r):\n"
    "\t\t\tself.r = r\n"
    "\t\tdef area(self):\n"
    "\t\t\treturn area(self.r)\n"
    "print(Circle(2).area())\n"
)
PROJECT_WORKSPACE = '{\n\t"folders": [\n\t\t{\n\t\t\t"path": "project"\n\t\t}\n\t],\n\t"settings": {}\n}\n'
# What each task reads from the cache, by the name the task gives it.
STAND_INS: dict[str, dict[str, bytes]] = {
    "0ed39f63": {
        "vscode_replace_text.txt": REPLACE_TEXT.encode(),
        "vscode_replace_text_gold.txt": REPLACE_GOLD.encode(),
    },
    "6ed0a554": {"project.code-workspace": PROJECT_WORKSPACE.encode()},
    "70745df8": {
        "HW-8-main-20240207T164539Z-001.zip": zip_bytes(
            {"HW-8-main/README.md": "# HW 8\n", "HW-8-main/hw8.py": "print('hw 8')\n"}
        )
    },
    "7aeae0e2": {"main.py": b"import numpy as np\n\na = np.arange(12).reshape(3, 4)\nb = np.eye(3)\n"},
    "847a96b6": {
        "workspace1.code-workspace": b'{"folders": [{"path": "project1"}]}\n',
        "workspace2.code-workspace": b'{"folders": [{"path": "project2"}]}\n',
    },
    "c6bf789c": {
        "hw_python_oop-master.zip": zip_bytes(
            {
                "hw_python_oop-master/homework.py": "class Calculator:\n    pass\n",
                "hw_python_oop-master/__pycache__/homework.cpython-310.pyc": "stand-in bytecode",
            }
        )
    },
    "ec71221e": {"test.py": INDENT_TEXT.encode(), "test_gold.py": INDENT_GOLD.encode()},
}


def _task(short_id: str) -> Task:
    return read_task_file(next(OSWORLD_EXAMPLES.glob(f"vs_code/{short_id}-*.json")))


@pytest.fixture(scope="module")
def file_cache(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cache")
    for short_id, files in STAND_INS.items():
        fill_stand_in_cache(root, _task(short_id), files.__getitem__)
    return root


SetUp = Callable[[str, str], tuple[Task, TaskContext]]


@pytest.fixture
def set_up(desktop: Desktop, file_cache: Path, tmp_path: Path) -> SetUp:
    """Runs a task's setup on a fresh VS Code and waits for the window titled with ``title_part``.

    The untouched desktop must score 0 then.
    """

    def run(short_id: str, title_part: str) -> tuple[Task, TaskContext]:
        task = _task(short_id)
        ctx = TaskContext(task.id, tmp_path / "work", TaskRunConfig(cache_roots=(file_cache,)))
        fresh_vs_code(desktop)
        run_setup(task, desktop, ctx)
        wait_until(lambda: vs_code_window(desktop, title_part), 180, f"VS Code's window on {title_part}")
        assert evaluate(task, desktop, ctx).score == 0.0
        return task, ctx

    return run


def _scores_1(task: Task, desktop: Desktop, ctx: TaskContext, path: str) -> None:
    result = evaluate(task, desktop, ctx)
    assert result.score == 1.0, (result, desktop.execute(["cat", path]).output)


def test_code_file_opens_the_file_alone_titled_as_vs_code_does(desktop: Desktop, set_up: SetUp):
    """7aeae0e2's setup runs ``code /home/user/main.py``: an empty window, the file in it (infeasible)."""
    task, ctx = set_up("7aeae0e2", "main.py")
    assert [w.title for w in desktop.windows() if w.title.endswith("Visual Studio Code")] == [
        "main.py - Visual Studio Code"
    ]
    assert evaluate(task, desktop, ctx, declared_infeasible=True).score == 1.0


def test_847a96b6_two_workspaces_in_one_window_is_infeasible(desktop: Desktop, set_up: SetUp):
    task, ctx = set_up("847a96b6", "")  # `code` alone: any VS Code window (the walkthrough)
    assert evaluate(task, desktop, ctx, declared_infeasible=True).score == 1.0


def test_0ed39f63_replace_all_text_with_test(desktop: Desktop, set_up: SetUp):
    """The find widget's replace: Ctrl+H, the word, Tab to the replacement, Ctrl+Alt+Enter (all)."""
    task, ctx = set_up("0ed39f63", "vscode_replace_text.txt")
    path = "/home/user/Desktop/vscode_replace_text.txt"
    click_into_editor(desktop, "vscode_replace_text.txt")
    keys(desktop, "ctrl+h")
    type_text(desktop, "text")
    keys(desktop, "Tab")
    type_text(desktop, "test")
    keys(desktop, "ctrl+alt+Return", "Escape")
    save(desktop, "vscode_replace_text.txt", path, lambda content: "text" not in content)
    _scores_1(task, desktop, ctx, path)


def test_ec71221e_indent_lines_2_to_10_by_a_tab(desktop: Desktop, set_up: SetUp):
    """Lines 2 to 10 selected from the keyboard, Tab indents them (the window's title is test.py's)."""
    task, ctx = set_up("ec71221e", "test.py")
    path = "/home/user/Desktop/test.py"
    click_into_editor(desktop, "test.py")
    keys(desktop, "ctrl+Home", "Down", *["shift+Down"] * 8, "shift+End", "Tab")
    save(desktop, "test.py", path, lambda content: content != INDENT_TEXT)
    _scores_1(task, desktop, ctx, path)


def test_6ed0a554_add_two_folders_to_the_workspace(desktop: Desktop, set_up: SetUp):
    """The workspace's configuration file, opened from the palette, lists the two folders."""
    task, ctx = set_up("6ed0a554", "(Workspace)")
    run_command(desktop, "Workspaces: Open Workspace Configuration File", "project.code-workspace")
    folders = '{"folders": [{"path": "project"}, {"path": "data1"}, {"path": "data2"}], "settings": {}}'
    type_json_and_save(desktop, "project.code-workspace", "/home/user/project.code-workspace", folders)
    _scores_1(task, desktop, ctx, "/home/user/project.code-workspace")


@pytest.mark.parametrize(
    ("short_id", "folder", "settings"),
    [
        pytest.param(
            "70745df8",
            "HW-8-main",
            '{"files.autoSave": "afterDelay", "files.autoSaveDelay": 500}',
            id="70745df8",
        ),
        pytest.param(
            "c6bf789c", "hw_python_oop-master", '{"files.exclude": {"**/__pycache__": true}}', id="c6bf789c"
        ),
    ],
)
def test_a_setting_typed_into_the_user_settings_json(
    desktop: Desktop, set_up: SetUp, short_id: str, folder: str, settings: str
):
    """On the downloaded folder's window, "Open User Settings (JSON)" and the settings typed in."""
    task, ctx = set_up(short_id, folder)
    run_command(desktop, "Preferences: Open User Settings (JSON)", "settings.json")
    path = "/home/user/.config/Code/User/settings.json"
    type_json_and_save(desktop, "settings.json", path, settings)
    _scores_1(task, desktop, ctx, path)

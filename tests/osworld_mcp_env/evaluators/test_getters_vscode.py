"""The ``vscode_config`` getter's order of work, on a stand-in desktop (no X, no VS Code).

On the embedded desktop it is checked end to end by tasks 53ad5833 and 510f64c8
(``tests/osworld_mcp_env/tasks/test_vscode_tasks_offline_desktop.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from osworld_mcp_env.backends.base import ExecResult
from osworld_mcp_env.evaluators import GETTERS
from osworld_mcp_env.evaluators.getters.vscode import vscode_config
from osworld_mcp_env.tasks import TaskContext, TaskRunConfig

CONFIG = {"vscode_extension_command": "OpenProject", "path": "/home/user/OpenProject.txt", "dest": "o.txt"}


class PaletteDesktop:
    """Writes the file when the command's Return has been pressed ``works_on`` times."""

    def __init__(self, works_on: int | None) -> None:
        self.works_on, self.returns, self.log, self.file = works_on, 0, [], b"stale"

    def execute(self, command: list[str], **_: Any) -> ExecResult:
        self.log.append(("execute", command))
        self.file = None
        return ExecResult(status="success", output="", error="", returncode=0)

    def gui(self, action: dict[str, Any]) -> None:
        self.log.append((action["action"], action["arguments"]))
        if action["arguments"].get("keys") == ["Return"]:
            self.returns += 1
            if self.returns == self.works_on:
                self.file = b"project"

    def read_file(self, path: str) -> bytes | None:
        assert path == CONFIG["path"]
        return self.file


@pytest.fixture
def context(tmp_path: Path, monkeypatch) -> TaskContext:
    monkeypatch.setattr("osworld_mcp_env.evaluators.getters.vscode.WRITE_TIMEOUT_S", 0.3)
    return TaskContext("t", tmp_path, TaskRunConfig())


def test_it_is_registered_under_osworlds_name():
    assert GETTERS.get("vscode_config") is vscode_config


def test_the_file_is_removed_before_the_command_runs_and_read_once_written(context: TaskContext):
    desktop = PaletteDesktop(works_on=1)
    result = vscode_config(desktop, context, CONFIG)
    assert Path(result).read_bytes() == b"project"
    assert desktop.log == [
        ("execute", ["rm", "-f", "--", "/home/user/OpenProject.txt"]),
        ("key", {"keys": ["ctrl", "shift", "p"]}),
        ("type", {"text": "OpenProject"}),
        ("key", {"keys": ["Return"]}),
    ]


def test_a_palette_that_missed_the_keys_is_closed_and_tried_again(context: TaskContext):
    desktop = PaletteDesktop(works_on=3)
    assert Path(vscode_config(desktop, context, CONFIG)).read_bytes() == b"project"
    assert [entry for entry in desktop.log if entry == ("key", {"keys": ["Escape"]})] == [
        ("key", {"keys": ["Escape"]})
    ] * 2


def test_no_file_after_three_tries_is_none_so_the_check_scores_0(context: TaskContext):
    desktop = PaletteDesktop(works_on=None)
    assert vscode_config(desktop, context, CONFIG) is None
    assert desktop.returns == 3

"""Coverage: Ctrl+Alt+T is no longer something the embedded desktop lacks (openbox binds it)."""

from __future__ import annotations

import json
from pathlib import Path

from osworld_mcp_env.tasks.coverage import RUNNABLE, assess, coverage
from task_data import OSWORLD_EXAMPLES

# OSWorld's own postconfig step (os/13584542): open a terminal, type into it.
PRESS_CTRL_ALT_T = {
    "type": "execute",
    "parameters": {
        "command": [
            "python",
            "-c",
            "import pyautogui; pyautogui.hotkey('ctrl', 'alt', 't'); pyautogui.write('stty size')",
        ]
    },
}


def test_a_task_pressing_ctrl_alt_t_is_runnable(tmp_path: Path):
    path = tmp_path / "os" / "t1.json"
    path.parent.mkdir()
    evaluator = {
        "postconfig": [PRESS_CTRL_ALT_T],
        "func": "check_include_exclude",
        "result": {"type": "vm_terminal_output"},
        "expected": {"type": "rule", "rules": {"include": ["43 132"], "exclude": []}},
    }
    path.write_text(json.dumps({"id": "t1", "instruction": "x", "config": [], "evaluator": evaluator}))
    verdict = assess(path)
    assert verdict.status == RUNNABLE, verdict.reason


def test_no_osworld_task_is_stopped_by_the_shortcut():
    report = coverage([OSWORLD_EXAMPLES])
    assert not any("Ctrl+Alt+T" in item.reason for item in report.items)
    by_id = {item.path.stem: item for item in report.items}
    assert by_id["13584542-872b-42d8-b299-866967b5c3ef"].status == RUNNABLE

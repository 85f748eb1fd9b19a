"""hybrid-agent label on the real desktop: 2 rollouts per bundled task in each mode, then the labels file.

The scripted tool route of calc-sum-column (two MCP calls, then terminate) is refused in the
GUI-only and CLI-only modes (an MCP call is neither), so only hybrid solves it; its successes ran
no direct CLI command: label 0. os-create-file's GUI route (click, type, Enter, wait, terminate)
solves it GUI-only and hybrid alike in 5 steps and fails CLI-only (its clicks are refused): GUI-only
wins the tie as a single interface: label 0.
"""

import json
import shutil
import sys
from pathlib import Path

import pytest
from hybrid_agent.cli import main
from hybrid_agent.labels import read_labels
from osworld_mcp_env.tasks import BUNDLED_DIR

sys.path.insert(0, str(Path(__file__).parents[1]))
from desktop_support import desktop_missing

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.slow,
    pytest.mark.skipif(
        desktop_missing() is not None, reason=f"embedded desktop unavailable: {desktop_missing()}"
    ),
]


def test_label_rolls_out_each_mode_and_writes_labels_the_trainer_reads(tmp_path, capsys):
    suite = tmp_path / "suite"
    suite.mkdir()
    for task in ("calc-sum-column", "os-create-file"):
        shutil.copy(BUNDLED_DIR / f"{task}.json", suite)
    labels = tmp_path / "labels.json"
    args = ["label", "--suite", str(suite), "--policy", "scripted:tools", "--runs", "2", "--max-steps", "8"]
    assert main([*args, "--out", str(tmp_path / "runs"), "--labels", str(labels)]) == 0
    printed = capsys.readouterr().out
    print(printed)
    assert "calc-sum-column: label 0 (hybrid > gui > cli; gui 0/2, cli 0/2, hybrid 2/2)" in printed
    assert "os-create-file: label 0 (gui > hybrid > cli; gui 2/2, cli 0/2, hybrid 2/2)" in printed
    assert read_labels(labels) == {"calc-sum-column": "gui", "os-create-file": "gui"}
    modes = json.loads(labels.read_text())["tasks"]["os-create-file"]["modes"]
    assert modes["gui"]["median_length"] == modes["hybrid"]["median_length"] == 5.0

"""The repository is ruff clean: `ruff check` and `ruff format --check` with the root pyproject's [tool.ruff].

This is how the linter runs in CI (`uv run --frozen pytest`), as tests/test_types.py runs mypy.
Both read the whole checkout (ruff skips what .gitignore ignores) and take about a second.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "command",
    [["check", "--output-format", "concise", "."], ["format", "--check", "."]],
    ids=["check", "format"],
)
def test_ruff_finds_nothing(command: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *command], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    report = f"ruff {command[0]} exit {result.returncode}:\n{result.stdout}{result.stderr}"
    assert result.returncode == 0, report


def test_setup_names_no_registry_host() -> None:
    # The CPU torch index is uv configuration (tools/torch-cpu.uv.toml), not a host in the script.
    script = (ROOT / "tools" / "setup_debian.sh").read_text()
    assert "://" not in script
    assert "--config-file tools/torch-cpu.uv.toml" in script

"""The packages type-check: mypy over the three packages' sources, with the root pyproject's [tool.mypy].

This is how the type checker runs in CI (`uv run --frozen pytest`). A cold run takes about 50 s (1.7 GB) on
a 2-core machine; mypy's cache (`.mypy_cache/`) makes later runs take about a second.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = sorted(src.parent.name for src in ROOT.glob("packages/*/src"))


def test_mypy_checks_every_package_source() -> None:
    # The checked set lives in the config (a bare `uv run mypy` checks the same); a new package joins it.
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert len(PACKAGES) >= 3
    assert sorted(config["files"]) == [f"packages/{p}/src" for p in PACKAGES]


@pytest.mark.parametrize("package", PACKAGES)
def test_package_ships_py_typed(package: str) -> None:
    # Without the marker, code that imports the package sees it as untyped (PEP 561).
    assert [p.parent.name for p in (ROOT / "packages" / package / "src").glob("*/py.typed")] == [package]


@pytest.mark.slow
def test_mypy_finds_no_errors() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-pretty"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=540,
    )
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert result.returncode == 0 and not errors, (
        f"mypy exit {result.returncode}, {len(errors)} errors:\n{result.stdout}{result.stderr}"
    )

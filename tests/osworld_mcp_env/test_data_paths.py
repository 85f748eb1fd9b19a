"""The public OSWorld data is found through one setting, OSWORLD_DATA_DIR (no desktop)."""

from __future__ import annotations

from pathlib import Path

import pytest
from osworld_mcp_env.data_paths import DATA_DIR_VARIABLE, DEFAULT_DATA_DIR, osworld_data
from task_data import OSWORLD_DATA


def test_the_variable_moves_every_path(tmp_path: Path) -> None:
    data = osworld_data({DATA_DIR_VARIABLE: str(tmp_path)})
    assert data.root == tmp_path
    for path in (data.splits, data.examples, data.tools_registry, data.mcp_apis):
        assert path.is_relative_to(tmp_path)


@pytest.mark.parametrize("environ", [{}, {DATA_DIR_VARIABLE: ""}])
def test_unset_or_empty_means_the_documented_default(environ: dict[str, str]) -> None:
    assert osworld_data(environ).root == DEFAULT_DATA_DIR


def test_missing_names_the_path_and_the_setting(tmp_path: Path) -> None:
    data = osworld_data({DATA_DIR_VARIABLE: str(tmp_path)})
    reason = data.missing(data.tools_registry)
    assert str(data.tools_registry) in reason and DATA_DIR_VARIABLE in reason


@pytest.mark.skipif(not OSWORLD_DATA.root.is_dir(), reason=OSWORLD_DATA.missing(OSWORLD_DATA.root))
def test_the_layout_matches_the_data_folder() -> None:
    # The properties name the folders the public copies really have (a renamed folder fails here first).
    assert (OSWORLD_DATA.splits / "test_all.json").is_file()
    assert next(OSWORLD_DATA.examples.glob("*/*.json"), None) is not None
    assert OSWORLD_DATA.tools_registry.is_file()
    assert next(OSWORLD_DATA.mcp_apis.rglob("*.json"), None) is not None

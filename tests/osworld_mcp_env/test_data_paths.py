"""The public OSWorld data is found through one setting, OSWORLD_DATA_DIR (no desktop)."""

from __future__ import annotations

from pathlib import Path

import osworld_mcp_env
import pytest
from osworld_mcp_env.data_paths import DATA_DIR_VARIABLE, SHIPPED_DATA_DIR, osworld_data
from task_data import OSWORLD_DATA


def test_the_variable_moves_every_path(tmp_path: Path) -> None:
    data = osworld_data({DATA_DIR_VARIABLE: str(tmp_path)})
    assert data.root == tmp_path
    for path in (
        data.splits,
        data.examples,
        data.tools_registry,
        data.mcp_apis,
        *data.split_folders().values(),
    ):
        assert path.is_relative_to(tmp_path)


@pytest.mark.parametrize("environ", [{}, {DATA_DIR_VARIABLE: ""}])
def test_unset_or_empty_means_the_copy_shipped_in_the_package(environ: dict[str, str]) -> None:
    data = osworld_data(environ)
    assert data.root == SHIPPED_DATA_DIR
    assert data.root.is_relative_to(Path(osworld_mcp_env.__file__).parent)
    notice = (data.root / "NOTICE.md").read_text()
    assert "Apache License" in (data.root / "LICENSE-Apache-2.0").read_text()
    assert "b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6" in notice and "10ed9f4" in notice


def test_missing_names_the_path_and_the_setting(tmp_path: Path) -> None:
    data = osworld_data({DATA_DIR_VARIABLE: str(tmp_path)})
    reason = data.missing(data.tools_registry)
    assert str(data.tools_registry) in reason and DATA_DIR_VARIABLE in reason


def test_the_layout_matches_the_data_folder() -> None:
    # The properties name the folders the public copies really have (a renamed folder fails here first).
    assert (OSWORLD_DATA.splits / "test_all.json").is_file()
    assert next(OSWORLD_DATA.examples.glob("*/*.json"), None) is not None
    assert OSWORLD_DATA.tools_registry.is_file()
    assert next(OSWORLD_DATA.mcp_apis.rglob("*.json"), None) is not None
    assert (OSWORLD_DATA.mcp_tasks / "has_tool.json").is_file()
    assert (OSWORLD_DATA.study_splits / "test_all_no_internet.json").is_file()
    assert len(list(OSWORLD_DATA.examples.glob("*/*.json"))) == 369

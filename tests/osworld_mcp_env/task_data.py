"""Shared helpers for the task and evaluator tests: OSWorld's task files, stand-in caches, LibreOffice.

The data folder is the copy shipped in the package, or ``OSWORLD_DATA_DIR``
(``osworld_mcp_env.data_paths``).
"""

from __future__ import annotations

import io
import shutil
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from osworld_mcp_env.data_paths import osworld_data
from osworld_mcp_env.tasks import Task
from osworld_mcp_env.tasks.cache import osworld_cache_name
from osworld_mcp_env.tasks.coverage import cache_urls

OSWORLD_DATA = osworld_data()
OSWORLD_EXAMPLES = OSWORLD_DATA.examples
OSWORLD_SPLITS = OSWORLD_DATA.splits

needs_soffice = pytest.mark.skipif(
    shutil.which("soffice") is None, reason="LibreOffice (soffice) not installed"
)


def real_task_files() -> list[Path]:
    return sorted(OSWORLD_EXAMPLES.rglob("*.json"))


def fill_stand_in_cache(root: Path, task: Task, stand_in: Callable[[str], bytes]) -> None:
    """Writes a stand-in of every file ``task`` reads from the cache, where ``tasks fetch`` puts it.

    The tests have no internet: ``stand_in(name)`` makes the file the task names ``name``
    (its download's or its gold's destination).
    """
    (root / task.id).mkdir(parents=True, exist_ok=True)
    for url, name in cache_urls(task):
        (root / task.id / osworld_cache_name(url, name)).write_bytes(stand_in(name))


def zip_bytes(members: dict[str, str | bytes]) -> bytes:
    """A zip archive made in memory, one member per name (a stand-in download or an extension)."""
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return data.getvalue()


def soffice_convert(src: Path, out_dir: Path, target: str, profile: Path) -> Path:
    """Converts ``src`` with LibreOffice's real filters (private profile, bounded time)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            "soffice",
            f"-env:UserInstallation={profile.as_uri()}",
            "--headless",
            "--convert-to",
            target,
            "--outdir",
            str(out_dir),
            str(src),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return out_dir / (src.stem + "." + target.split(":")[0])

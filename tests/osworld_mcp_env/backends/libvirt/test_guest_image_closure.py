"""The guest image's copy of this package is complete: tools/build-image's own import check passes on it.

The image holds only the files :func:`guest_modules` returns. A module the guest imports
lazily (the ``ax`` tool host imports :mod:`osworld_mcp_env.ax` only when its namespace is
built) once slipped past the copy and failed the image build inside its chroot, 40 minutes
into CI. Here the same import check runs in seconds over the same file list, with nothing
else of the package importable.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="module")
def build_image() -> ModuleType:
    loader = SourceFileLoader("build_image", str(REPO / "tools" / "build-image"))
    spec = spec_from_loader("build_image", loader)
    assert spec is not None
    module = module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_the_copied_files_alone_pass_the_images_import_check(build_image: ModuleType, tmp_path: Path) -> None:
    for path in build_image.guest_modules():
        target = tmp_path / path.relative_to(build_image.PACKAGE_SRC)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    probe = build_image.IMPORT_CHECK + "import osworld_mcp_env\nprint(osworld_mcp_env.__file__)\n"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert Path(done.stdout.split()[-1]).is_relative_to(tmp_path)


def test_no_task_definition_is_copied(build_image: ModuleType) -> None:
    copied = [p.relative_to(build_image.PACKAGE_SRC).as_posix() for p in build_image.guest_modules()]
    assert copied, "the guest copy is empty"
    assert not [p for p in copied if p.startswith("osworld_mcp_env/tasks")]

"""``compare_archive``: two archives unpacked and their files compared pairwise by one file metric.

As OSWorld scores it: both archives are unpacked (zip, tar, tar.gz/tgz, tar.bz2, tar.xz,
chosen by the file name as ``shutil.unpack_archive`` chooses); the sorted entry names of
``options["file_path"]`` (default the top folder) must be equal; then each pair of files
is scored by the metric ``file_type`` names and the score is their mean. Unlike
``shutil.unpack_archive`` on Python 3.11, unpacking here refuses members that would land
outside the folder (absolute, ``..``), links and devices, and stops past 1 GiB: the
archive is the agent's work, and OSWorld's evaluation crashes or is unsafe on those.
"""

from __future__ import annotations

import os
import tarfile
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from osworld_mcp_env.evaluators.registry import METRICS, ZeroScore, register_metric

FILE_TYPE_METRICS = {
    "text": "compare_text_file",
    "pdf": "compare_pdfs",
    "docx": "compare_docx_files",
    "ppt": "compare_pptx_files",
    "image": "compare_images",
    "csv": "compare_csv",
    "table": "compare_table",
    "audio": "compare_audios",
    "video": "compare_videos",
}
"""OSWorld's ``file_type`` values and the metric each pair of files is scored by."""

MAX_UNPACKED_BYTES = 1 << 30

_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")


def _member_path(root: Path, name: str) -> Path:
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts:
        raise ZeroScore(f"compare_archive: member {name!r} would land outside the folder (refused)")
    return root.joinpath(*pure.parts)


def _write(root: Path, name: str, data: bytes, budget: list[int]) -> None:
    budget[0] -= len(data)
    if budget[0] < 0:
        raise ZeroScore(f"compare_archive: unpacks to more than {MAX_UNPACKED_BYTES} bytes (refused)")
    target = _member_path(root, name)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def unpack(archive: str, root: Path) -> None:
    """Unpacks ``archive`` into ``root``: regular files and folders only, inside ``root``.

    Raises:
        ZeroScore: An unknown format, an unreadable archive, a refused member.
    """
    budget = [MAX_UNPACKED_BYTES]
    try:
        if archive.endswith(".zip"):
            with zipfile.ZipFile(archive) as z:
                for info in z.infolist():
                    if info.is_dir():
                        _member_path(root, info.filename).mkdir(parents=True, exist_ok=True)
                    elif (info.external_attr >> 16) & 0o170000 == 0o120000:
                        raise ZeroScore(f"compare_archive: member {info.filename!r} is a link (refused)")
                    else:
                        _write(root, info.filename, z.read(info), budget)
        elif archive.endswith(_TAR_SUFFIXES):
            with tarfile.open(archive) as tar:
                for member in tar:
                    if member.isdir():
                        _member_path(root, member.name).mkdir(parents=True, exist_ok=True)
                    elif member.isfile():
                        stream = tar.extractfile(member)
                        _write(root, member.name, stream.read() if stream else b"", budget)
                    else:
                        raise ZeroScore(f"compare_archive: member {member.name!r} is not a file (refused)")
        else:
            raise ZeroScore(f"compare_archive: {archive!r} is no archive format OSWorld unpacks (it raises)")
    except (OSError, zipfile.BadZipFile, tarfile.TarError, EOFError) as exc:
        raise ZeroScore(f"compare_archive: cannot unpack {archive!r} (OSWorld raises): {exc}") from exc


def _check_options(options: Mapping[str, Any]) -> list[str]:
    file_type = options.get("file_type", "text")
    if file_type not in FILE_TYPE_METRICS:
        return [f"compare_archive: file_type {file_type!r} is not one of {sorted(FILE_TYPE_METRICS)}."]
    inner = {k: v for k, v in options.items() if k not in ("file_type", "file_path")}
    return METRICS.get(FILE_TYPE_METRICS[file_type]).problems(inner)


@register_metric("compare_archive", options=None, check_options=_check_options)
def compare_archive(result: Any, expected: Any, **options: Any) -> float:
    """The mean score of the paired files, 0 when the entry names differ (module docstring).

    Options besides ``file_type`` and ``file_path`` go to the file metric.
    """
    if not result:
        return 0.0
    inner = dict(options)
    file_path = str(inner.pop("file_path", ""))
    metric = METRICS.get(FILE_TYPE_METRICS[str(inner.pop("file_type", "text"))]).fn
    with tempfile.TemporaryDirectory(prefix="osworld-archive-") as tmp:
        folders = []
        for label, archive in (("pred", result), ("gold", expected)):
            folder = Path(tmp, label)
            folder.mkdir()
            unpack(str(archive), folder)
            folders.append(_member_path(folder, file_path) if file_path else folder)
        try:
            names = [sorted(os.listdir(f)) for f in folders]
        except OSError as exc:
            raise ZeroScore(
                f"compare_archive: no folder {file_path!r} in the archive (OSWorld raises)"
            ) from exc
        if names[0] != names[1]:
            return 0.0
        if not names[0]:
            raise ZeroScore("compare_archive: both archives are empty (OSWorld divides by zero)")
        total = sum(metric(str(folders[0] / n), str(folders[1] / n), **inner) for n in names[0])
    return total / len(names[0])

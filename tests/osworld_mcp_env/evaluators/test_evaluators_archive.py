"""compare_archive on hand-made zip and tar archives: names first, then the mean of a file metric."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest
from osworld_mcp_env.evaluators import METRICS, ZeroScore

archive = METRICS.get("compare_archive")
compare = archive.fn


def make_zip(path: Path, files: dict[str, str]) -> str:
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return str(path)


def make_tar(path: Path, files: dict[str, str]) -> str:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return str(path)


def test_same_names_then_the_mean_of_the_text_metric(tmp_path: Path):
    gold = make_zip(
        tmp_path / "gold.zip", {"a.txt": "one", "b.txt": "two", "c.txt": "three", "d.txt": "four"}
    )
    assert (
        compare(
            make_zip(
                tmp_path / "same.zip", {"a.txt": "one", "b.txt": "two", "c.txt": "three", "d.txt": "four"}
            ),
            gold,
        )
        == 1.0
    )
    one_off = make_zip(
        tmp_path / "off.zip", {"a.txt": "one", "b.txt": "2", "c.txt": "three", "d.txt": "four"}
    )
    assert compare(one_off, gold) == 0.75
    # Options other than file_type/file_path reach the file metric.
    upper = make_zip(
        tmp_path / "upper.zip", {"a.txt": "ONE", "b.txt": "TWO", "c.txt": "THREE", "d.txt": "four"}
    )
    assert compare(upper, gold) == 0.25
    assert compare(upper, gold, ignore_case=True) == 1.0
    missing = make_zip(tmp_path / "missing.zip", {"a.txt": "one", "b.txt": "two", "c.txt": "three"})
    assert compare(missing, gold) == 0.0
    assert compare(None, gold) == 0.0


def test_file_path_selects_a_folder_and_formats_mix(tmp_path: Path):
    gold = make_zip(tmp_path / "gold.zip", {"slides/1.txt": "x", "slides/2.txt": "y"})
    pred = make_tar(tmp_path / "pred.tar.gz", {"slides/1.txt": "x", "slides/2.txt": "z", "notes.md": "n"})
    assert compare(pred, gold, file_path="slides") == 0.5
    assert compare(pred, gold) == 0.0  # top level: ["notes.md", "slides"] vs ["slides"]
    with pytest.raises(ZeroScore, match="no folder"):
        compare(pred, gold, file_path="lecture_slides")


def test_options_are_checked_at_load():
    assert archive.problems({"file_type": "pdf", "file_path": "x"}) == []
    assert "file_type 'epub'" in archive.problems({"file_type": "epub"})[0]
    assert archive.problems({"file_type": "text", "bogus": 1}) != []


def test_unsafe_or_unknown_archives_score_zero_with_the_reason(tmp_path: Path):
    gold = make_zip(tmp_path / "gold.zip", {"a.txt": "one"})
    escaping = make_tar(tmp_path / "evil.tar.gz", {"../../outside.txt": "x"})
    with pytest.raises(ZeroScore, match="outside the folder"):
        compare(escaping, gold)
    assert not (tmp_path.parent / "outside.txt").exists()
    link = tmp_path / "link.tar"
    with tarfile.open(link, "w") as tar:
        info = tarfile.TarInfo("a.txt")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(info)
    with pytest.raises(ZeroScore, match="not a file"):
        compare(str(link), gold)
    rar = tmp_path / "a.rar"
    rar.write_bytes(b"Rar!")
    with pytest.raises(ZeroScore, match="no archive format"):
        compare(str(rar), gold)
    empty = make_zip(tmp_path / "empty.zip", {})
    with pytest.raises(ZeroScore, match="divides by zero"):
        compare(empty, make_zip(tmp_path / "empty2.zip", {}))

"""Writing into the file cache: nothing half-written, every byte hashed on the way in.

A file appears under its final name only once it is whole: bytes go to a temporary
file in the same folder (so the rename cannot cross file systems), which is flushed,
``fsync``-ed and renamed over the target; the folder is ``fsync``-ed so the rename
survives a crash. A failure removes the temporary file.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

CHUNK = 1 << 20


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def atomic_writer(target: Path) -> Iterator[BinaryIO]:
    """Yields a binary file that replaces ``target`` when the block ends without an error."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)


def write_bytes_atomic(target: Path, data: bytes) -> None:
    """Replaces ``target`` with ``data``, whole or not at all."""
    with atomic_writer(target) as out:
        out.write(data)


def file_digests(path: Path) -> tuple[int, str, str]:
    """``(size, sha256, git blob sha1)`` of a file: the Hub's ETag is one of the two digests."""
    size = path.stat().st_size
    sha256 = hashlib.sha256()
    blob = hashlib.sha1(f"blob {size}\0".encode(), usedforsecurity=False)
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            sha256.update(chunk)
            blob.update(chunk)
    return size, sha256.hexdigest(), blob.hexdigest()

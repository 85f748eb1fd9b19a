"""The cache's record of what ``osworld-mcp tasks fetch`` wrote: one JSON file at the cache root.

For every url fetched it keeps the file's path (relative to the root), size and
SHA-256, where it came from (``hub`` or ``http``) and, for Hub files, the ETag and
commit. A later fetch trusts a file only while its size still matches its record,
and anyone can re-hash the cache against it. The record is rewritten atomically
after each file, so an interrupted fetch leaves a record of every file it finished.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from osworld_mcp_env.errors import FetchError
from osworld_mcp_env.tasks.fetch.files import write_bytes_atomic

MANIFEST_NAME = "osworld-fetch-manifest.json"
VERSION = 1


@dataclass(frozen=True)
class Entry:
    """One fetched file.

    Attributes:
        path: Relative to the cache root.
        size: Bytes.
        sha256: Hex digest of the content.
        source: ``hub`` or ``http``.
        etag: The Hub's ETag (Hub files).
        commit: The Hub commit it came from (Hub files).
    """

    path: str
    size: int
    sha256: str
    source: str
    etag: str | None = None
    commit: str | None = None


@dataclass
class Manifest:
    """The url -> :class:`Entry` record of one cache root."""

    root: Path
    entries: dict[str, Entry] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        """The manifest file."""
        return self.root / MANIFEST_NAME

    @classmethod
    def load(cls, root: Path) -> Manifest:
        """Reads the root's manifest (empty when there is none yet).

        Raises:
            FetchError: The file exists but is not a manifest of this version.
        """
        path = root / MANIFEST_NAME
        if not path.is_file():
            return cls(root)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            if raw.get("version") != VERSION:
                raise ValueError(f"version {raw.get('version')!r}, expected {VERSION}")
            entries = {url: Entry(**entry) for url, entry in raw["files"].items()}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise FetchError(
                f"{path} is not a fetch manifest ({exc}); move it away to start a new one"
            ) from None
        return cls(root, entries)

    def trusts(self, url: str, file: Path) -> bool:
        """Whether ``file`` is the one recorded for ``url`` and still has its recorded size."""
        entry = self.entries.get(url)
        return (
            entry is not None
            and self.root / entry.path == file
            and file.is_file()
            and file.stat().st_size == entry.size
        )

    def record(self, url: str, entry: Entry) -> None:
        """Adds or replaces ``url``'s entry and rewrites the file atomically."""
        self.entries[url] = entry
        files = {u: asdict(e) for u, e in sorted(self.entries.items())}
        data = json.dumps({"version": VERSION, "files": files}, indent=1, sort_keys=True)
        write_bytes_atomic(self.path, data.encode())

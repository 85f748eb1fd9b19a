"""Which revision of OSWorld's task JSONs a folder holds: a fingerprint, and what is known of it.

OSWorld's tasks change upstream without version numbers (45 of the 369 differ
between two snapshots three months apart), so a score means little without the
task files it was measured on. The fingerprint is the SHA-256 of the sorted lines
``<domain>/<id>.json <git blob id>``: it does not depend on where the folder lies,
and the blob ids can be compared with any git checkout of OSWorld
(``git ls-tree -r HEAD evaluation_examples/examples``).

:data:`KNOWN_CORPORA` states the provenance of the corpus this package ships
(``osworld_mcp_env/public_data``, :mod:`osworld_mcp_env.data_paths`), established by
comparing blob ids with the public repositories that carry upstream's files.
"""

from __future__ import annotations

import hashlib
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

OSWORLD_2026_04 = (
    "OSWorld-Verified task set (upstream xlang-ai/OSWorld after its July 2025 OSWorld-Verified revision): "
    "367 files as upstream's main on 2026-04-29 (blob-identical to ljxpython/OSWorldUse@b5007a9, "
    "snapshot commit f6cee71), 2 as of about January 2026 (libreoffice_impress/3161d64e, os/5c1075ca: "
    "blob-identical to the copy vendored in acid-pooler760/hybrid-routing-agent@9135223); "
    "test_all.json is blob 6c07dfa. Upstream's own commit id is not known."
)

KNOWN_CORPORA: dict[str, str] = {
    "sha256:d056aea097eba2f7d0a46aae4859896863236b633d5f38d7545c9c3cbc2168ee": OSWORLD_2026_04,
}
"""Fingerprint -> provenance statement."""


def git_blob_id(data: bytes) -> str:
    """The id git gives a file with this content (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


@dataclass(frozen=True)
class CorpusVersion:
    """What a folder of task files is.

    Attributes:
        fingerprint: ``sha256:<hex>`` over the sorted ``<domain>/<id>.json <blob id>`` lines.
        files: How many task files it covers.
        statement: The provenance, or None when the fingerprint is not one of :data:`KNOWN_CORPORA`.
    """

    fingerprint: str
    files: int
    statement: str | None

    def line(self) -> str:
        """The statement for reports, wrapped at 110 columns."""
        what = self.statement or "unknown revision (not the corpus this package's statement is about)"
        return textwrap.fill(
            f"corpus: {self.files} task files, {self.fingerprint}: {what}",
            110,
            subsequent_indent="  ",
            break_on_hyphens=False,
        )


def corpus_version(task_files: Sequence[Path]) -> CorpusVersion:
    """Fingerprints ``task_files`` (OSWorld's ``examples/<domain>/<id>.json``) and looks the result up."""
    lines = sorted(f"{p.parent.name}/{p.name} {git_blob_id(p.read_bytes())}" for p in task_files)
    fingerprint = "sha256:" + hashlib.sha256("\n".join(lines).encode()).hexdigest()
    return CorpusVersion(fingerprint, len(lines), KNOWN_CORPORA.get(fingerprint))

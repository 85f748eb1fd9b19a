"""What a fetch must write: one job per distinct url, at the path the file cache looks first for it.

Every url goes to the cache's mirror layout (``tasks/cache.py``, layout 3): a
Hugging Face ``/resolve/main/`` url to ``<root>/<path in the repository>`` (so a
fetched cache has the layout of ``xlangai/ubuntu_osworld_file_cache`` itself), any
other url to ``<root>/<host>/<url path>``. That place does not depend on the task,
so a file several tasks share is fetched once. A url is already cached when every
task that uses it finds a file in some layout: a cache built by hand, or by OSWorld,
counts too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from osworld_mcp_env.tasks.cache import FileCache, url_mirror_path
from osworld_mcp_env.tasks.coverage import cache_urls
from osworld_mcp_env.tasks.fetch.manifest import Manifest
from osworld_mcp_env.tasks.model import Task


@dataclass(frozen=True)
class FileJob:
    """One url to put in the cache.

    Attributes:
        url: As the tasks name it.
        target: Where it is written; None when the url's path would leave the cache (``..``).
        uses: ``(task id, destination basename)`` of every task that reads it.
    """

    url: str
    target: Path | None
    uses: tuple[tuple[str, str], ...]

    @property
    def task_ids(self) -> tuple[str, ...]:
        """The tasks that read the url, each once."""
        return tuple(dict.fromkeys(t for t, _ in self.uses))


def mirror_target(root: Path, url: str) -> Path | None:
    """``root / url_mirror_path(url)``, or None when that path would leave ``root`` or names no file."""
    rel = url_mirror_path(url)
    if ".." in rel.parts or rel.is_absolute() or not rel.name:
        return None
    return root / rel


def plan_jobs(tasks: Iterable[Task], root: Path) -> list[FileJob]:
    """The jobs for ``tasks``, in the order their urls first appear."""
    uses: dict[str, list[tuple[str, str]]] = {}
    for task in tasks:
        for url, dest in cache_urls(task):
            uses.setdefault(url, []).append((task.id, dest))
    return [
        FileJob(url, mirror_target(root, url), tuple(dict.fromkeys(users))) for url, users in uses.items()
    ]


def is_cached(job: FileJob, cache: FileCache, manifest: Manifest) -> bool:
    """Whether every task of ``job`` already finds its file (a recorded file only while its size holds)."""
    if job.target is None:
        return False
    if job.target.is_file() and job.url in manifest.entries and not manifest.trusts(job.url, job.target):
        return False
    return all(any(p.is_file() for p in cache.candidates(job.url, tid, dest)) for tid, dest in job.uses)

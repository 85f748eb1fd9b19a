"""Running a fetch: each job cached, fetched or failed (never half-written), then one summary table.

Hub urls go through :mod:`~osworld_mcp_env.tasks.fetch.hub`, every other url through
:mod:`~osworld_mcp_env.tasks.fetch.http`; each file fetched is recorded in the
cache's :class:`~osworld_mcp_env.tasks.fetch.manifest.Manifest`. One failure does not
stop the others: the report lists every failure with its reason, and
:attr:`FetchReport.ok` is False when there is one. A lock file keeps two fetches
from writing one cache at once.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path, PurePosixPath

from osworld_mcp_env.errors import FetchError
from osworld_mcp_env.tasks.cache import FileCache
from osworld_mcp_env.tasks.fetch import http, hub
from osworld_mcp_env.tasks.fetch.manifest import Entry, Manifest
from osworld_mcp_env.tasks.fetch.plan import FileJob, is_cached

LOCK_NAME = ".osworld-fetch.lock"


@dataclass(frozen=True)
class FetchConfig:
    """How files are fetched.

    Attributes:
        max_bytes: Largest file accepted over plain HTTP (OSWorld's biggest inputs are videos of some 100 MB).
        timeout_s: How long a connection may stay silent (connect, each read, a Hub metadata request).
        deadline_s: How long one plain-HTTP file may take in all.
        hf_endpoint: The Hub or a mirror (``HF_ENDPOINT``); None: huggingface_hub's default.
        hf_token: A Hub token (``HF_TOKEN``); None: huggingface_hub's stored login, if any.
    """

    max_bytes: int = 4 * 1024**3
    timeout_s: float = 30.0
    deadline_s: float = 3600.0
    hf_endpoint: str | None = None
    hf_token: str | None = None

    def __post_init__(self) -> None:
        if self.max_bytes < 1 or self.timeout_s <= 0 or self.deadline_s <= 0:
            raise ValueError(
                f"max_bytes, timeout_s and deadline_s must be positive, got {self.max_bytes}, "
                f"{self.timeout_s}, {self.deadline_s}"
            )


class Outcome(StrEnum):
    """What became of one url."""

    FETCHED = "fetched"
    CACHED = "cached"
    FAILED = "failed"
    PLANNED = "would fetch"


@dataclass(frozen=True)
class FileResult:
    """One url's outcome.

    Attributes:
        job: The url, its target and its tasks.
        outcome: See :class:`Outcome`.
        size: Bytes written (fetched) or announced (would fetch); None when unknown.
        reason: Why it failed, or why its size is unknown.
    """

    job: FileJob
    outcome: Outcome
    size: int | None = None
    reason: str = ""


def _human(size: int) -> str:
    """Bytes in decimal units: ``512 B``, ``1.5 MB``."""
    if size < 1000:
        return f"{size} B"
    value = float(size)
    for unit in ("KB", "MB"):
        value /= 1000
        if value < 1000:
            return f"{value:.1f} {unit}"
    return f"{value / 1000:.1f} GB"


@dataclass
class FetchReport:
    """Every url's outcome, in job order."""

    results: list[FileResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No url failed."""
        return all(r.outcome != Outcome.FAILED for r in self.results)

    def table(self) -> str:
        """Counts and bytes per outcome, then one line per failure (url, reason, tasks)."""
        lines = [f"{'outcome':<14}{'files':>7}{'size':>12}", "-" * 33]
        for outcome in Outcome:
            rows = [r for r in self.results if r.outcome == outcome]
            if not rows and outcome == Outcome.PLANNED:
                continue
            known = [r.size for r in rows if r.size is not None]
            size = _human(sum(known)) if known else "-"
            unknown = len(rows) - len(known)
            note = f"  ({unknown} of unknown size)" if unknown and outcome == Outcome.PLANNED else ""
            lines.append(f"{outcome.value:<14}{len(rows):>7}{size:>12}{note}")
        notes = [r for r in self.results if r.outcome == Outcome.FAILED or (r.reason and r.size is None)]
        if notes:
            lines += ["", "why:"]
            lines += [
                f"  {r.outcome.value}: {r.job.url}\n    {r.reason} (tasks: {', '.join(r.job.task_ids)})"
                for r in notes
            ]
        return "\n".join(lines)


@contextmanager
def cache_lock(root: Path) -> Iterator[None]:
    """Holds the cache's lock file for the block.

    Raises:
        FetchError: Another fetch holds it.
    """
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FetchError(f"another fetch is writing to {root} (it holds {root / LOCK_NAME})") from None
        yield
    finally:
        os.close(fd)


def _hub_local_dir(target: Path, ref: hub.HubFile) -> Path:
    """The folder that huggingface_hub writes ``ref.filename`` under so that it lands on ``target``."""
    return target.parents[len(PurePosixPath(ref.filename).parts) - 1]


def _fetch_one(job: FileJob, target: Path, root: Path, config: FetchConfig, manifest: Manifest) -> int:
    """Fetches one url into ``target``, records it, returns its size."""
    ref = hub.parse_hub_url(job.url)
    if ref is not None:
        meta, size, sha256 = hub.hub_download(
            ref,
            _hub_local_dir(target, ref),
            endpoint=config.hf_endpoint,
            token=config.hf_token,
            timeout_s=config.timeout_s,
        )
        entry = Entry(str(target.relative_to(root)), size, sha256, "hub", meta.etag, meta.commit)
    else:
        got = http.download(
            job.url,
            target,
            max_bytes=config.max_bytes,
            timeout_s=config.timeout_s,
            deadline_s=config.deadline_s,
        )
        size, entry = got.size, Entry(str(target.relative_to(root)), got.size, got.sha256, "http")
    manifest.record(job.url, entry)
    return size


def _announced_size(job: FileJob, config: FetchConfig) -> FileResult:
    """A dry run's row: the size the server announces, or why it is unknown."""
    ref = hub.parse_hub_url(job.url)
    try:
        if ref is not None:
            size = hub.hub_metadata(
                ref, endpoint=config.hf_endpoint, token=config.hf_token, timeout_s=config.timeout_s
            ).size
        else:
            size = http.head_size(job.url, config.timeout_s)
    except FetchError as exc:
        return FileResult(job, Outcome.PLANNED, None, str(exc))
    return FileResult(job, Outcome.PLANNED, size, "" if size is not None else "the server did not say")


def fetch(
    jobs: Sequence[FileJob],
    root: Path,
    config: FetchConfig,
    *,
    dry_run: bool = False,
    on_file: Callable[[FileResult], None] = lambda r: None,
) -> FetchReport:
    """Puts every job's url in the cache at ``root`` (or, with ``dry_run``, says what it would fetch).

    Args:
        jobs: From :func:`~osworld_mcp_env.tasks.fetch.plan.plan_jobs` with the same ``root``.
        root: The cache root (created if needed).
        config: Limits and the Hub's endpoint and token.
        dry_run: Write nothing; ask each server for the size instead.
        on_file: Called after each url (the CLI's progress bar).

    Raises:
        FetchError: The manifest is unreadable or another fetch holds the cache.
    """
    report = FetchReport()
    cache = FileCache((root,))
    with cache_lock(root):
        manifest = Manifest.load(root)
        for job in jobs:
            if job.target is None:
                result = FileResult(job, Outcome.FAILED, reason="the url's path leaves the cache folder (..)")
            elif is_cached(job, cache, manifest):
                result = FileResult(job, Outcome.CACHED)
            elif dry_run:
                result = _announced_size(job, config)
            else:
                try:
                    result = FileResult(
                        job, Outcome.FETCHED, _fetch_one(job, job.target, root, config, manifest)
                    )
                except FetchError as exc:
                    result = FileResult(job, Outcome.FAILED, reason=str(exc))
            report.results.append(result)
            on_file(result)
    return report

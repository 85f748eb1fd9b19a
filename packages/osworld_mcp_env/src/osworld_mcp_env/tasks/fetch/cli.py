"""``osworld-mcp tasks fetch``: the command line of the fetch (task selection, progress, summary, exit code).

Examples::

    osworld-mcp tasks fetch --examples OSWorld/evaluation_examples/examples --cache ~/osworld-cache
    osworld-mcp tasks fetch libreoffice_calc 0bf05a7d-b28b-44d2-955a-50b41e24012a --dry-run
    HF_ENDPOINT=https://hf-mirror.com osworld-mcp tasks fetch vlc

Positional arguments pick domains (``examples/<domain>/``) or task ids; none: every
task. The exit code is 0 when every url is cached or fetched, 1 when one failed (or
a task file did not load), 2 on a usage error. ``HF_ENDPOINT`` and ``HF_TOKEN`` are
read here and passed down.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from osworld_mcp_env.errors import FetchError, TaskError
from osworld_mcp_env.registry import did_you_mean
from osworld_mcp_env.tasks.coverage import task_files
from osworld_mcp_env.tasks.fetch.plan import plan_jobs
from osworld_mcp_env.tasks.fetch.run import FetchConfig, FileResult, Outcome, fetch
from osworld_mcp_env.tasks.loader import read_task_file
from osworld_mcp_env.tasks.model import Task


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Adds ``fetch`` to the ``tasks`` subcommands; ``common`` holds ``--examples`` and ``--cache``."""
    defaults = FetchConfig()
    p = sub.add_parser("fetch", parents=[common], help="Fill the file cache from the tasks' urls.")
    p.add_argument(
        "targets", nargs="*", metavar="DOMAIN_OR_TASK_ID", help="Domains or task ids (default: all)."
    )
    p.add_argument(
        "--dry-run", action="store_true", help="Say what would be fetched and its size; write nothing."
    )
    p.add_argument(
        "--max-bytes", type=int, default=defaults.max_bytes, help="Largest plain-HTTP file accepted."
    )
    p.add_argument(
        "--timeout", type=float, default=defaults.timeout_s, help="Seconds a connection may stay silent."
    )


def select_tasks(examples: Sequence[Path], targets: Sequence[str]) -> tuple[list[Task], list[str]]:
    """The tasks under ``examples`` that ``targets`` name (all when empty), and the files that did not load.

    Raises:
        TaskError: A target is neither a domain nor a task id (the message suggests one).
    """
    files = task_files(examples)
    known = {p.parent.name for p in files} | {p.stem for p in files}
    unknown = [t for t in targets if t not in known]
    if unknown:
        where = ", ".join(map(str, examples))
        raise TaskError(f"No domain or task {unknown[0]!r} under {where}.{did_you_mean(unknown[0], known)}")
    wanted = set(targets)
    tasks, broken = [], []
    for path in files:
        if wanted and path.parent.name not in wanted and path.stem not in wanted:
            continue
        try:
            tasks.append(read_task_file(path, strict=False))
        except (TaskError, json.JSONDecodeError) as exc:
            broken.append(f"{path}: {exc}")
    return tasks, broken


class _Progress:
    """A progress line on stderr: files done of all, fetched and failed so far, the last url's name.

    On a terminal the line is rewritten in place; elsewhere (a log file) each file gets a line.
    """

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total, self.stream = total, stream
        self.done = 0
        self.counts = dict.fromkeys(Outcome, 0)
        self.in_place = stream.isatty()

    def __call__(self, result: FileResult) -> None:
        self.done += 1
        self.counts[result.outcome] += 1
        name = urllib.parse.unquote(result.job.url.rsplit("/", 1)[-1])
        line = (
            f"[{self.done}/{self.total}] {self.counts[Outcome.FETCHED]} fetched, "
            f"{self.counts[Outcome.FAILED]} failed: {result.outcome.value} {name}"
        )
        self.stream.write(f"\r\x1b[K{line}" if self.in_place else f"{line}\n")
        self.stream.flush()

    def close(self) -> None:
        if self.in_place and self.done:
            self.stream.write("\n")


def main(
    args: argparse.Namespace, examples: Sequence[Path], caches: Sequence[Path], environ: Mapping[str, str]
) -> int:
    """Runs ``tasks fetch``; returns the exit code."""
    if not caches:
        print("osworld-mcp: give --cache DIR (or set OSWORLD_CACHE) to fetch into.", file=sys.stderr)
        return 2
    root = caches[0].expanduser()
    try:
        config = FetchConfig(
            max_bytes=args.max_bytes,
            timeout_s=args.timeout,
            hf_endpoint=environ.get("HF_ENDPOINT") or None,
            hf_token=environ.get("HF_TOKEN") or None,
        )
        tasks, broken = select_tasks(examples, args.targets)
    except (ValueError, TaskError) as exc:
        print(f"osworld-mcp: {exc}", file=sys.stderr)
        return 2
    jobs = plan_jobs(tasks, root)
    progress = _Progress(len(jobs), sys.stderr)
    try:
        report = fetch(jobs, root, config, dry_run=args.dry_run, on_file=progress)
    except FetchError as exc:
        print(f"osworld-mcp: {exc}", file=sys.stderr)
        return 1
    finally:
        progress.close()
    print(
        f"{len(tasks)} tasks, {len(jobs)} urls, cache {root}"
        + (" (dry run: nothing written)" if args.dry_run else "")
    )
    print(report.table())
    for line in broken:
        print(f"task file did not load: {line}")
    return 0 if report.ok and not broken else 1

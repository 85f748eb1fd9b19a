"""Which OSWorld tasks run here, and why the others do not: the ``osworld-mcp tasks --coverage`` table.

Every task JSON is loaded leniently, then put in exactly one bucket:

* ``runnable offline``: every name is implemented, nothing needs the internet, and
  each ``download``/``cloud_file`` url is in the file cache (or there is none).
* ``needs file cache``: runnable once the listed cache files are present.
* unsupported, with the first reason that applies, in this order: an app the embedded
  desktop does not ship (VS Code), Google Drive or an online account, a website on the
  internet (``chrome_open_tabs`` of an http(s) url, ``proxy: true``, a url in the
  instruction), a program OSWorld's VM has and this desktop lacks (sudo, PulseAudio,
  systemd, GNOME Shell, found in the task's commands), a metric left out on purpose
  (:data:`UNSUPPORTED_METRICS`), then the first unimplemented name (metric, getter,
  setup step, option).
"""

from __future__ import annotations

import collections
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osworld_mcp_env.errors import TaskError
from osworld_mcp_env.tasks.cache import FileCache
from osworld_mcp_env.tasks.loader import read_task_file
from osworld_mcp_env.tasks.model import Task
from osworld_mcp_env.tasks.setup import HISTORY_EMPTY_URL

RUNNABLE = "runnable offline"
NEEDS_CACHE = "needs file cache"


@dataclass(frozen=True)
class TaskCoverage:
    """The verdict on one task file.

    Attributes:
        path: The task file.
        domain: Its folder (OSWorld's domain).
        loads: The JSON parsed into a task.
        status: ``RUNNABLE``, ``NEEDS_CACHE`` or ``"unsupported"``.
        reason: Why it is unsupported (a short category, e.g. ``"unknown metric 'x'"``).
        detail: The full message (every unknown name, every missing file).
    """

    path: Path
    domain: str
    loads: bool
    status: str
    reason: str = ""
    detail: str = ""


def _internet_reason(task: Task) -> str:
    steps = (*task.config, *task.evaluator.postconfig)
    types = {s.type for s in steps}
    getters = {c.type for check in task.evaluator.checks for c in (check.result, check.expected) if c}
    if task.domain == "vs_code" or "vs_code" in task.related_apps or "vscode_config" in getters:
        return "VS Code is not in the embedded desktop"
    if types & {"googledrive", "login"} or "googledrive_file" in getters:
        return "Google Drive / online account"
    for step in steps:
        if step.type == "chrome_open_tabs":
            urls = step.parameters.get("urls_to_open", [])
            if any(str(u).startswith(("http://", "https://")) for u in urls):
                return "website on the internet (chrome_open_tabs)"
    if task.proxy:
        return "website on the internet (proxy: true)"
    if re.search(r"https?://", task.instruction):
        return "website on the internet (a url in the instruction)"
    return ""


# What OSWorld's Ubuntu VM has and the embedded desktop lacks, found in a task's commands.
# (Ubuntu's Ctrl+Alt+T terminal shortcut is not here: the desktop's openbox binds it, see guest/session.sh.)
MISSING_ON_DESKTOP = (
    (re.compile(r"\bsudo\b"), "sudo (the desktop user has no root)"),
    (re.compile(r"\bpactl\b|\bpulseaudio\b"), "PulseAudio"),
    (re.compile(r"\btimedatectl\b"), "systemd (timedatectl)"),
    (re.compile(r"\borg\.gnome\.shell\b"), "GNOME Shell settings"),
    (re.compile(r"\bgnome-terminal\b"), "gnome-terminal"),
    (re.compile(r"\bnautilus\b"), "Nautilus"),
)


def _desktop_reason(task: Task) -> str:
    """What a feasible task's commands need that the embedded desktop lacks ("" when nothing).

    An infeasible task is scored on the agent's declaration alone, so what its setup
    cannot do here does not matter.
    """
    if task.evaluator.infeasible:
        return ""
    text = json.dumps([task.to_dict()["config"], task.to_dict()["evaluator"]])
    for pattern, what in MISSING_ON_DESKTOP:
        if pattern.search(text):
            return f"the embedded desktop lacks {what}"
    return ""


# Metrics left out on purpose: no faithful offline version (docs/evaluators.md, "Left out").
UNSUPPORTED_METRICS = {
    "compare_image_text": "OCR: OSWorld's easyocr model is downloaded at run time, "
    "and tesseract reads 'ls' differently",
}


def _metric_reason(task: Task) -> str:
    """Why a metric of the task is left out on purpose ("" when none is)."""
    for check in task.evaluator.checks:
        if check.func in UNSUPPORTED_METRICS:
            return f"{check.func}: {UNSUPPORTED_METRICS[check.func]}"
    return ""


def _name_reason(problem: str) -> str:
    """A short category for one problem line of ``Task.unsupported``."""
    text = problem.split(": ", 1)[-1]
    if text.startswith("Unknown "):
        return text.split(".", 1)[0].replace("Unknown ", "unknown ")
    return "unimplemented option: " + text.split(" is not implemented", 1)[0].split(": ")[-1]


def _cache_misses(task: Task, cache: FileCache | None) -> list[str]:
    urls = [
        (str(f["url"]), Path(str(f["path"])).name)
        for step in (*task.config, *task.evaluator.postconfig)
        if step.type == "download"
        for f in step.parameters.get("files", [])
    ]
    if any(s.type == "update_browse_history" for s in (*task.config, *task.evaluator.postconfig)):
        urls.append((HISTORY_EMPTY_URL, "history_empty.sqlite"))
    for check in task.evaluator.checks:
        for spec in (check.result, check.expected):
            if spec is not None and spec.type == "cloud_file":
                paths, dests = spec.config.get("path"), spec.config.get("dest")
                pairs: Iterable[tuple[Any, Any]] = [(paths, dests)]
                if isinstance(paths, list) and isinstance(dests, list):
                    pairs = zip(paths, dests, strict=False)
                urls += [(str(u), Path(str(d)).name) for u, d in pairs]
    if not urls:
        return []
    if cache is None:
        return [u for u, _ in urls]
    missing = []
    for url, dest in urls:
        if not any(p.is_file() for p in cache.candidates(url, task.id, dest)):
            missing.append(f"{url} -> {cache.candidates(url, task.id, dest)[0]}")
    return missing


def assess(path: Path, cache: FileCache | None = None) -> TaskCoverage:
    """Loads one task file leniently and classifies it."""
    domain = path.parent.name
    try:
        task = read_task_file(path, strict=False)
    except (TaskError, json.JSONDecodeError) as exc:
        return TaskCoverage(path, domain, False, "unsupported", "does not load", str(exc))
    reason = _internet_reason(task) or _desktop_reason(task) or _metric_reason(task)
    if reason:
        return TaskCoverage(path, domain, True, "unsupported", reason)
    if task.unsupported:
        return TaskCoverage(
            path, domain, True, "unsupported", _name_reason(task.unsupported[0]), "\n".join(task.unsupported)
        )
    missing = _cache_misses(task, cache)
    if missing:
        return TaskCoverage(path, domain, True, NEEDS_CACHE, detail="\n".join(missing))
    return TaskCoverage(path, domain, True, RUNNABLE)


@dataclass
class CoverageReport:
    """Verdicts over a folder of task files, grouped by domain."""

    items: list[TaskCoverage] = field(default_factory=list)

    def by_domain(self) -> dict[str, list[TaskCoverage]]:
        """The verdicts of each domain, domains sorted."""
        out: dict[str, list[TaskCoverage]] = collections.defaultdict(list)
        for item in self.items:
            out[item.domain].append(item)
        return dict(sorted(out.items()))

    def reasons(self) -> collections.Counter[str]:
        """How many tasks each unsupported reason stops."""
        return collections.Counter(i.reason for i in self.items if i.status == "unsupported")

    def table(self) -> str:
        """The per-domain table, then the unsupported reasons by count."""
        header = f"{'domain':<22}{'tasks':>6}{'loads':>7}{RUNNABLE:>18}{'needs cache':>13}{'unsupported':>13}"
        lines = [header, "-" * len(header)]
        rows = [*self.by_domain().items(), ("total", self.items)]
        for domain, items in rows:
            count = collections.Counter(i.status for i in items)
            lines.append(
                f"{domain:<22}{len(items):>6}{sum(i.loads for i in items):>7}{count[RUNNABLE]:>18}"
                f"{count[NEEDS_CACHE]:>13}{count['unsupported']:>13}"
            )
        lines += ["", "unsupported, by first reason:"]
        lines += [f"{n:>5}  {reason}" for reason, n in self.reasons().most_common()]
        return "\n".join(lines)


def coverage(task_dirs: Sequence[Path], cache_roots: Iterable[Path] = ()) -> CoverageReport:
    """Assesses every ``*.json`` under ``task_dirs`` (OSWorld's ``examples/<domain>/<id>.json``)."""
    roots = tuple(cache_roots)
    cache = FileCache(roots) if roots else None
    files = sorted(p for d in task_dirs for p in Path(d).rglob("*.json") if p.parent.name != "solutions")
    return CoverageReport([assess(p, cache) for p in files])

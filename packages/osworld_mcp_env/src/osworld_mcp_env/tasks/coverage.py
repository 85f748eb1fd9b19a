"""Which OSWorld tasks run here, and why the others do not: the ``osworld-mcp tasks --coverage`` table.

Every task JSON is loaded leniently, then put in exactly one bucket:

* ``runnable offline``: every name is implemented, nothing needs the internet, and
  the task reads no ``download``/``cloud_file`` url.
* ``runnable with a cache``: the same, and every url it reads is in the file cache
  (``osworld-mcp tasks fetch`` fills it).
* ``needs file cache``: runnable once the listed cache files are present.
* unsupported, with the first reason that applies, in this order: what of an app the
  embedded desktop does not ship (VS Code's Marketplace extensions), Google Drive or an
  online account, a website on the internet (``chrome_open_tabs`` of an http(s) url,
  ``proxy: true``, a url in the instruction), a program OSWorld's VM has and this
  desktop lacks (sudo, PulseAudio, wmctrl, systemd, GNOME Shell, found in the task's
  commands), a metric left out on purpose
  (:data:`UNSUPPORTED_METRICS`), then the first unimplemented name (metric, getter,
  setup step, option).

The verdicts are for one desktop (:class:`DesktopKind`): the embedded one of the local
backend (the default), or OSWorld's own ``Ubuntu.qcow2`` on the libvirt backend
(``guest_api="osworld"``), which ships Microsoft's VS Code and the programs the embedded
desktop lacks, so neither reason applies there. The report also states which revision of
OSWorld's task files it read (:mod:`~osworld_mcp_env.tasks.corpus`).

The ``runnable with internet`` column counts the unsupported tasks that a desktop
with ``network="internet"`` (:mod:`osworld_mcp_env.network`) runs: a website is
their only reason and every name is implemented. Like ``needs file cache``, they
count before ``tasks fetch`` has filled the cache (a user with the internet can
fetch it); the files still missing are the verdict's ``detail``.
"""

from __future__ import annotations

import collections
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from osworld_mcp_env.errors import TaskError
from osworld_mcp_env.tasks.cache import FileCache
from osworld_mcp_env.tasks.corpus import CorpusVersion, corpus_version
from osworld_mcp_env.tasks.loader import read_task_file
from osworld_mcp_env.tasks.model import Task
from osworld_mcp_env.tasks.setup import HISTORY_EMPTY_URL

RUNNABLE = "runnable offline"
RUNNABLE_WITH_CACHE = "runnable with a cache"
NEEDS_CACHE = "needs file cache"
RUNNABLE_WITH_INTERNET = "runnable with internet"  # a column, not a status: of the unsupported
UNSUPPORTED = "unsupported"
STATUSES = (RUNNABLE, RUNNABLE_WITH_CACHE, NEEDS_CACHE, UNSUPPORTED)


class DesktopKind(StrEnum):
    """The desktop a coverage verdict is for."""

    EMBEDDED = "embedded"
    OSWORLD_IMAGE = "osworld-image"

    @property
    def description(self) -> str:
        """Where that desktop runs, for the report's header."""
        if self == DesktopKind.EMBEDDED:
            return "the embedded desktop (local backend)"
        return "OSWorld's Ubuntu.qcow2 on the libvirt backend (guest_api='osworld', docs/libvirt.md)"


# The embedded desktop's VS Code is code-server 4.99.4 (VS Code 1.99's workbench, installed by
# tools/install_code_server.sh, run by the guest's ``code``): settings, keybindings and files
# are VS Code's own; its extension gallery is Open VSX, not Microsoft's Marketplace.
VS_CODE_EXTENSIONS_REASON = (
    "VS Code extensions from Microsoft's Marketplace: the embedded desktop's VS Code is "
    "code-server, whose gallery is Open VSX (docs/evaluators.md; runs on --desktop osworld-image)"
)


@dataclass(frozen=True)
class TaskCoverage:
    """The verdict on one task file.

    Attributes:
        path: The task file.
        domain: Its folder (OSWorld's domain).
        loads: The JSON parsed into a task.
        status: One of :data:`STATUSES`.
        reason: Why it is unsupported (a short category, e.g. ``"unknown metric 'x'"``).
        detail: The full message (every unknown name, every missing file).
        with_internet: Unsupported only for a website: runnable on a desktop with
            ``network="internet"`` (names implemented; cache files present or fetchable).
    """

    path: Path
    domain: str
    loads: bool
    status: str
    reason: str = ""
    detail: str = ""
    with_internet: bool = False


def _getters(task: Task) -> set[str]:
    return {c.type for check in task.evaluator.checks for c in (check.result, check.expected) if c}


# ``code --install-extension NAME``; a NAME ending in .vsix is a local file, which code-server installs.
MARKETPLACE_INSTALL = re.compile(r"--install-extension[\\\"', ]+([^\\\"' ]+)")


def _app_reason(task: Task) -> str:
    """What of an app the embedded desktop does not ship ("" when nothing).

    VS Code is there as code-server, which installs no extension from Microsoft's
    Marketplace: tasks that install or check one are left out.
    """
    metrics = {check.func for check in task.evaluator.checks}
    commands = json.dumps([task.to_dict()["config"], task.to_dict()["evaluator"]])
    installed = MARKETPLACE_INSTALL.findall(commands)
    if "is_extension_installed" in metrics or any(not name.endswith(".vsix") for name in installed):
        return VS_CODE_EXTENSIONS_REASON
    return ""


def _internet_reason(task: Task, *, web: bool = False) -> str:
    """What of the internet the task needs ("" when nothing); ``web``: the desktop reaches websites."""
    steps = (*task.config, *task.evaluator.postconfig)
    types = {s.type for s in steps}
    getters = _getters(task)
    if types & {"googledrive", "login"} or "googledrive_file" in getters:
        return "Google Drive / online account"
    if web:
        return ""
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
# (Ubuntu's Ctrl+Alt+T terminal shortcut is not here: the desktop's openbox binds it, see guest/session.sh;
# nor are Nautilus and gnome-terminal: the desktop ships both, tools/setup_debian.sh.)
MISSING_ON_DESKTOP = (
    (re.compile(r"\bsudo\b"), "sudo (the desktop user has no root)"),
    (re.compile(r"\bpactl\b|\bpulseaudio\b"), "PulseAudio"),
    (re.compile(r"\btimedatectl\b"), "systemd (timedatectl)"),
    (re.compile(r"\borg\.gnome\.shell\b"), "GNOME Shell settings"),
    (re.compile(r"\bwmctrl\b"), "wmctrl"),
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


# Metrics left out on purpose (docs/evaluators.md, "Left out"): no faithful offline version,
# or, for compare_epub (implemented, unit-tested), no way to do its one task, 42d25c08, here.
UNSUPPORTED_METRICS = {
    "compare_image_text": "OCR: OSWorld's easyocr model is downloaded at run time, "
    "and tesseract reads 'ls' differently",
    "compare_epub": "its task's book cannot be made here: OSWorld reads only a root toc.ncx, "
    "content.opf and *.html, which LibreOffice's EPUB export (OEBPS/, .xhtml) never writes, "
    "and the txt-to-EPUB converter the task points to must come from GitHub",
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


def cache_urls(task: Task) -> list[tuple[str, str]]:
    """Every ``(url, destination basename)`` the task reads from the file cache, in task order.

    That is each ``download`` file (setup and postconfig), each ``cloud_file`` of a
    check, and OSWorld's empty browser history for ``update_browse_history``.
    """
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
    return urls


def _cache_misses(task: Task, cache: FileCache | None) -> list[str]:
    urls = cache_urls(task)
    if not urls:
        return []
    if cache is None:
        return [u for u, _ in urls]
    missing = []
    for url, dest in urls:
        if not any(p.is_file() for p in cache.candidates(url, task.id, dest)):
            missing.append(f"{url} -> {cache.candidates(url, task.id, dest)[0]}")
    return missing


def _reason(task: Task, desktop: DesktopKind, *, web: bool = False) -> str:
    """The first reason ``task`` cannot run on ``desktop`` ("" when none); ``web``: it has internet."""
    embedded = desktop == DesktopKind.EMBEDDED
    return (
        (embedded and _app_reason(task))
        or _internet_reason(task, web=web)
        or (embedded and _desktop_reason(task))
        or _metric_reason(task)
    )


def assess(
    path: Path, cache: FileCache | None = None, desktop: DesktopKind = DesktopKind.EMBEDDED
) -> TaskCoverage:
    """Loads one task file leniently and classifies it for ``desktop``."""
    domain = path.parent.name
    try:
        task = read_task_file(path, strict=False)
    except (TaskError, json.JSONDecodeError) as exc:
        return TaskCoverage(path, domain, False, UNSUPPORTED, "does not load", str(exc))
    reason = _reason(task, desktop)
    if reason:
        online = not (_reason(task, desktop, web=True) or task.unsupported)
        detail = "\n".join(_cache_misses(task, cache)) if online else ""
        return TaskCoverage(path, domain, True, UNSUPPORTED, reason, detail, with_internet=online)
    if task.unsupported:
        return TaskCoverage(
            path, domain, True, UNSUPPORTED, _name_reason(task.unsupported[0]), "\n".join(task.unsupported)
        )
    if not cache_urls(task):
        return TaskCoverage(path, domain, True, RUNNABLE)
    missing = _cache_misses(task, cache)
    if missing:
        return TaskCoverage(path, domain, True, NEEDS_CACHE, detail="\n".join(missing))
    return TaskCoverage(path, domain, True, RUNNABLE_WITH_CACHE)


@dataclass
class CoverageReport:
    """Verdicts over a folder of task files, grouped by domain.

    Attributes:
        items: One verdict per task file.
        desktop: The desktop the verdicts are for.
        corpus: Which task files these are (None when not computed).
    """

    items: list[TaskCoverage] = field(default_factory=list)
    desktop: DesktopKind = DesktopKind.EMBEDDED
    corpus: CorpusVersion | None = None

    def by_domain(self) -> dict[str, list[TaskCoverage]]:
        """The verdicts of each domain, domains sorted."""
        out: dict[str, list[TaskCoverage]] = collections.defaultdict(list)
        for item in self.items:
            out[item.domain].append(item)
        return dict(sorted(out.items()))

    def reasons(self) -> collections.Counter[str]:
        """How many tasks each unsupported reason stops."""
        return collections.Counter(i.reason for i in self.items if i.status == UNSUPPORTED)

    def table(self) -> str:
        """The corpus and the desktop, the per-domain table, then the unsupported reasons by count."""
        header = (
            f"{'domain':<22}{'tasks':>6}{'loads':>7}{RUNNABLE:>18}{RUNNABLE_WITH_CACHE:>23}"
            f"{'needs cache':>13}{UNSUPPORTED:>13}{RUNNABLE_WITH_INTERNET:>24}"
        )
        lines = [self.corpus.line()] if self.corpus else []
        lines += [f"desktop: {self.desktop.description}", "", header, "-" * len(header)]
        rows = [*self.by_domain().items(), ("total", self.items)]
        for domain, items in rows:
            count = collections.Counter(i.status for i in items)
            lines.append(
                f"{domain:<22}{len(items):>6}{sum(i.loads for i in items):>7}{count[RUNNABLE]:>18}"
                f"{count[RUNNABLE_WITH_CACHE]:>23}{count[NEEDS_CACHE]:>13}{count[UNSUPPORTED]:>13}"
                f"{sum(i.with_internet for i in items):>24}"
            )
        lines += ["", "unsupported, by first reason:"]
        lines += [f"{n:>5}  {reason}" for reason, n in self.reasons().most_common()]
        return "\n".join(lines)


def task_files(task_dirs: Sequence[Path]) -> list[Path]:
    """Every task JSON under ``task_dirs`` (OSWorld's ``examples/<domain>/<id>.json``), sorted."""
    return sorted(p for d in task_dirs for p in Path(d).rglob("*.json") if p.parent.name != "solutions")


def coverage(
    task_dirs: Sequence[Path],
    cache_roots: Iterable[Path] = (),
    desktop: DesktopKind = DesktopKind.EMBEDDED,
) -> CoverageReport:
    """Assesses every task file under ``task_dirs`` (``examples/<domain>/<id>.json``) for ``desktop``."""
    roots = tuple(cache_roots)
    cache = FileCache(roots) if roots else None
    files = task_files(task_dirs)
    return CoverageReport([assess(p, cache, desktop) for p in files], desktop, corpus_version(files))

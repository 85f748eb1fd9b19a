"""Which tasks an evaluation or a training run takes: suites, split files, directories, task ids.

One resolver for ``hybrid-agent eval --suite`` and ``grpo-train``'s ``tasks``: a spec is
``bundled``, ``seeded[:train|test]``, a shipped split by name (``osworld:test_all``,
``osworld-mcp:has_tool``, ``hybrid-routing-agent:test_all_no_internet``), an OSWorld split
file, a directory of task JSONs, or one task id (a bundled id, a seeded ``TEMPLATE@SEED``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from osworld_mcp_env.data_paths import osworld_data
from osworld_mcp_env.errors import TaskError, TaskNotFound
from osworld_mcp_env.tasks import BUNDLED_TASK_IDS, TaskLibrary, load_split, load_task, split_task_ids
from osworld_mcp_env.tasks.bundled import bundled_solution
from osworld_mcp_env.tasks.bundled.export import seeded_root
from osworld_mcp_env.tasks.templates import TEMPLATES, is_instance_id, parse_instance_id

from hybrid_agent.errors import ConfigError


class UnknownSuite(ConfigError):
    """A spec that is no suite and no task id known here (the message suggests close ids)."""


@dataclass(frozen=True)
class SuiteTask:
    """One task of a suite.

    Attributes:
        task_id: The task id (records and reports key on it).
        domain: The OSWorld domain (split key, folder, else snapshot label).
        source: What ``env.reset(options={"task": ...})`` gets: a bundled id or a file path.
        tool_reachable: The task's annotation of whether MCP tools help (OSWorld-MCP's
            ``has_tool.json``, a template's tool oracle); ``None`` where the task has none.
            Written into each episode's header, where the metrics read it.
    """

    task_id: str
    domain: str
    source: str
    tool_reachable: bool | None = None


def load_suite(spec: str, tasks_dir: str | Path | None = None) -> list[SuiteTask]:
    """Resolves a suite spec.

    Args:
        spec: ``bundled``; ``seeded`` (every template's seed-0 instance), ``seeded:train`` or
            ``seeded:test`` (the seeded suite's splits); ``SOURCE:SPLIT``, a split of the public
            data (:meth:`OSWorldData.split_folders` names the sources: ``osworld``,
            ``osworld-mcp``, ``hybrid-routing-agent``), its ids looked up in OSWorld's
            369 task files; a split file (``{domain: [ids]}``,
            OSWorld's ``test_all.json``, where ``TEMPLATE@SEED`` ids are built, not looked
            up); a directory searched for task JSONs at any depth; or one task id.
        tasks_dir: Where a split's ids are looked up (default: ``examples`` beside the
            split file, else the split file's directory).

    Raises:
        UnknownSuite: The spec is none of these.
        ConfigError: A ``seeded:`` split that is not ``train`` or ``test``; a ``SOURCE:SPLIT``
            whose split file does not exist (the message lists the ones that do).
        TaskNotFound: A split names an id that is not in ``tasks_dir``; a bad ``TEMPLATE@SEED``.
    """
    return [replace(task, tool_reachable=tool_annotation(task.task_id)) for task in _resolve(spec, tasks_dir)]


def load_tasks(
    entries: Sequence[str], tasks_dir: str | Path | None = None, *, pass_unknown: bool = False
) -> list[SuiteTask]:
    """Every entry resolved by :func:`load_suite`, concatenated in order (a trainer's ``tasks``).

    Args:
        entries: Suite specs and task ids.
        tasks_dir: As :func:`load_suite`'s.
        pass_unknown: Keep an entry that is no suite and no task here as a task id for the
            env to resolve at reset (an env with its own task names, such as the toy env).

    Raises:
        UnknownSuite: An unknown entry, unless ``pass_unknown``.
    """
    tasks: list[SuiteTask] = []
    for entry in entries:
        try:
            tasks += load_suite(entry, tasks_dir)
        except UnknownSuite:
            if not pass_unknown:
                raise
            tasks.append(SuiteTask(entry, "unknown", entry))
    return tasks


def _resolve(spec: str, tasks_dir: str | Path | None) -> list[SuiteTask]:
    if spec == "bundled":
        return [_entry(task_id) for task_id in BUNDLED_TASK_IDS]
    if spec == "seeded" or spec.startswith("seeded:"):
        split = spec.partition(":")[2]
        if split not in ("", "train", "test"):
            raise ConfigError(f"Seeded suite split {split!r} is not 'train' or 'test'.")
        return _resolve(str(seeded_root() / (f"{split}.json" if split else "examples")), None)
    source, colon, split_name = spec.partition(":")
    data = osworld_data()
    if colon and source in data.split_folders():
        return _resolve(str(_named_split(source, split_name)), tasks_dir or data.examples)
    path = Path(spec)
    if path.is_dir():
        library = TaskLibrary([path])
        return [_entry(str(file)) for _, file in sorted(library.index().items())]
    if path.is_file():
        by_domain = load_split(path)
        root = Path(tasks_dir) if tasks_dir else _default_tasks_dir(path)
        library = TaskLibrary([root])
        domain_of = {tid: domain for domain, ids in by_domain.items() for tid in ids}
        return [
            SuiteTask(tid, domain_of[tid], tid if is_instance_id(tid) else str(library.find(tid)))
            for tid in split_task_ids(by_domain)
        ]
    try:
        return [_entry(spec)]
    except TaskNotFound as exc:
        if is_instance_id(spec):
            raise
        raise UnknownSuite(
            f"Suite {spec!r} is not 'bundled', 'seeded[:train|test]', a named split "
            f"({'|'.join(osworld_data().split_folders())}:NAME), a split file, a directory of "
            f"task JSONs or a task id (cwd: {Path.cwd()}). {exc}"
        ) from None


def _named_split(source: str, name: str) -> Path:
    """The split file ``name`` of ``source`` (``osworld``, ``osworld-mcp``...) in the public data."""
    data = osworld_data()
    folder = data.split_folders()[source]
    path = folder / f"{name}.json"
    if not name or "/" in name or not path.is_file():
        known = sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []
        raise ConfigError(
            f"No split {name!r} from {source}: known are {', '.join(known) or 'none'}. "
            + (data.missing(folder) if not known else "")
        )
    return path


def _default_tasks_dir(split: Path) -> Path:
    examples = split.parent / "examples"
    return examples if examples.is_dir() else split.parent


def _entry(source: str) -> SuiteTask:
    task = load_task(source, strict=False)
    return SuiteTask(task.id, task.domain or "unknown", source)


def tool_annotation(task_id: str) -> bool | None:
    """Whether the task is annotated as tool-beneficial, ``None`` when nothing annotates it.

    Sources, first match wins: a bundled task has a tool route (``bundled_solution(id, "tools")``);
    a seeded template (any of its seeds) has a tool oracle (``Template.tool_reachable``); an
    OSWorld task is in OSWorld-MCP's ``has_tool.json`` (true) or only in its ``test_all.json`` (false).
    """
    if is_instance_id(task_id):
        task_id = parse_instance_id(task_id)[0]
    if task_id in BUNDLED_TASK_IDS:
        try:
            bundled_solution(task_id, "tools")
        except TaskNotFound:
            return False
        return True
    if task_id in TEMPLATES:
        return TEMPLATES.get(task_id).tool_reachable
    beneficial, listed = _osworld_mcp_annotations()
    return (task_id in beneficial) if task_id in listed else None


@functools.cache
def _osworld_mcp_annotations() -> tuple[frozenset[str], frozenset[str]]:
    """OSWorld-MCP's tool-beneficial ids and all its ids (empty where the data is absent)."""
    folder = osworld_data().mcp_tasks
    try:
        beneficial = split_task_ids(load_split(folder / "has_tool.json"))
        listed = split_task_ids(load_split(folder / "test_all.json"))
    except (OSError, ValueError, TaskError):
        return frozenset(), frozenset()
    return frozenset(beneficial), frozenset(listed)

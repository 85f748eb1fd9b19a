"""Loading tasks by id, path or dict; validating their names; reading split files.

Every name a task uses (setup and postconfig step types, getter types, metric
names, ``compare_table`` rule types) is checked against the registries when the
task loads. ``strict=True`` (the default) raises :class:`~osworld_mcp_env.errors.TaskError`
listing every problem ("Unknown metric 'x'. Known: ... Did you mean ...?").
``strict=False`` returns the task with ``Task.unsupported`` filled instead, so a whole
suite can be listed and filtered; running setup or evaluation on such a task raises.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from osworld_mcp_env.errors import TaskError, TaskNotFound
from osworld_mcp_env.registry import did_you_mean
from osworld_mcp_env.tasks.checks import GETTERS, METRICS
from osworld_mcp_env.tasks.model import Task, task_from_dict
from osworld_mcp_env.tasks.setup import SETUP_STEPS
from osworld_mcp_env.tasks.templates import instantiate, is_instance_id, parse_instance_id

BUNDLED_DIR = Path(str(resources.files("osworld_mcp_env.tasks") / "bundled"))


def task_problems(task: Task) -> list[str]:
    """Every name of ``task`` that is not registered here, as readable messages."""
    problems: list[str] = []
    for phase, steps in (("config", task.config), ("evaluator.postconfig", task.evaluator.postconfig)):
        for i, step in enumerate(steps):
            if step.type not in SETUP_STEPS:
                problems.append(f"{phase}[{i}]: {SETUP_STEPS.unknown_message(step.type)}")
    for i, check in enumerate(task.evaluator.checks):
        if check.func not in METRICS:
            problems.append(f"evaluator.func[{i}]: {METRICS.unknown_message(check.func)}")
        else:
            entry = METRICS.get(check.func)
            problems += [f"evaluator.options[{i}] ({check.func}): {p}" for p in entry.problems(check.options)]
        for role, spec in (("result", check.result), ("expected", check.expected)):
            if spec is not None and spec.type not in GETTERS:
                problems.append(f"evaluator.{role}[{i}]: {GETTERS.unknown_message(spec.type)}")
    return problems


def validate_task(task: Task, *, strict: bool = True) -> Task:
    """Checks every name of ``task`` against the registries.

    Args:
        task: A task built by :func:`~osworld_mcp_env.tasks.model.task_from_dict`.
        strict: Raise on problems (True) or return the task marked unsupported (False).

    Returns:
        The task, with ``unsupported`` set when ``strict`` is False and names are unknown.

    Raises:
        TaskError: ``strict`` and some name is unknown; the message lists them all.
    """
    problems = task_problems(task)
    if problems and strict:
        where = f" ({task.origin})" if task.origin else ""
        raise TaskError(
            f"Task {task.id!r}{where} uses names this env does not support:\n  " + "\n  ".join(problems)
        )
    return dataclasses.replace(task, unsupported=tuple(problems))


def _read_json(path: Path, kind: str) -> Any:
    """Parses a JSON file; a missing file is ``TaskNotFound``, bad JSON a ``TaskError``."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TaskNotFound(f"{kind} {str(path)!r} does not exist.") from None
    except json.JSONDecodeError as exc:
        raise TaskError(f"{kind} {str(path)!r} is not valid JSON: {exc}") from exc


def read_task_file(path: str | Path, *, strict: bool = True) -> Task:
    """Reads and validates one task JSON file.

    Raises:
        TaskNotFound: No such file.
        TaskError: Invalid JSON, bad shape, or (``strict``) unknown names.
    """
    path = Path(path)
    raw = _read_json(path, "Task file")
    return validate_task(task_from_dict(raw, origin=path), strict=strict)


@dataclass
class TaskLibrary:
    """Directories of task JSON files, searched by task id (``<id>.json`` at any depth).

    OSWorld's layout ``examples/<domain>/<id>.json`` works as is: register the
    ``examples`` directory or its parent. Where a folder holds an ``examples``
    folder, only that one holds tasks: beside it lie split lists (OSWorld's
    ``test_all.json``, the suite's ``train.json``) and settings.

    Attributes:
        dirs: Directories searched in order; the first match wins.
    """

    dirs: list[Path] = field(default_factory=list)
    _index: dict[str, Path] | None = field(default=None, init=False, repr=False)

    def add_dir(self, path: str | Path) -> None:
        """Adds a directory to search (after the existing ones)."""
        path = Path(path)
        if not path.is_dir():
            raise TaskNotFound(f"Task directory {str(path)!r} does not exist.")
        if path not in self.dirs:
            self.dirs.append(path)
            self._index = None

    def index(self) -> dict[str, Path]:
        """Maps every task id found to its file."""
        if self._index is None:
            index: dict[str, Path] = {}
            for d in self.dirs:
                for p in sorted(d.rglob("*.json")):
                    if p.parent.name != "solutions" and not _beside_examples(p, d):
                        index.setdefault(p.stem, p)
            self._index = index
        return self._index

    def find(self, task_id: str) -> Path:
        """Returns the file of ``task_id``.

        Raises:
            TaskNotFound: No such id; the message suggests close ids.
        """
        index = self.index()
        if task_id in index:
            return index[task_id]
        searched = ", ".join(str(d) for d in self.dirs) or "(no directories)"
        raise TaskNotFound(f"Task {task_id!r} not found in {searched}.{did_you_mean(task_id, index)}")

    def load(self, task_id: str, *, strict: bool = True) -> Task:
        """Loads the task with id ``task_id``."""
        return read_task_file(self.find(task_id), strict=strict)

    def __iter__(self) -> Iterator[str]:
        return iter(self.index())


def _beside_examples(path: Path, top: Path) -> bool:
    """True when ``path`` lies in a folder that has an ``examples`` folder, outside that folder."""
    for folder in path.relative_to(top).parents:
        base = top / folder
        if (base / "examples").is_dir() and not path.is_relative_to(base / "examples"):
            return True
    return False


def default_library() -> TaskLibrary:
    """A library holding the bundled tasks only."""
    return TaskLibrary([BUNDLED_DIR])


def load_task(
    source: str | Path | Mapping[str, Any] | Task,
    *,
    library: TaskLibrary | None = None,
    strict: bool = True,
) -> Task:
    """Loads a task from an id, a JSON file path, a dict or a :class:`Task`.

    Args:
        source: A task id (looked up in ``library``), a seeded template instance
            ``TEMPLATE@SEED`` (built by :func:`~osworld_mcp_env.tasks.templates.instantiate`),
            a path to a ``.json`` file, an OSWorld task dict, or an already built task (re-validated).
        library: Where ids are searched; default: the bundled tasks.
        strict: See the module docstring.

    Raises:
        TaskNotFound: No task with that id or path, no such template, or a bad seed.
        TaskError: The task is malformed or (``strict``) uses unknown names.
    """
    if isinstance(source, Task):
        return validate_task(source, strict=strict)
    if isinstance(source, Mapping):
        return validate_task(task_from_dict(source), strict=strict)
    if isinstance(source, Path) or str(source).endswith(".json"):
        return read_task_file(source, strict=strict)
    if not isinstance(source, str):
        raise TaskError(f"A task source is an id, a path, a dict or a Task, got {type(source).__name__}.")
    if is_instance_id(source):
        return validate_task(task_from_dict(instantiate(*parse_instance_id(source)).task), strict=strict)
    return (library or default_library()).load(source, strict=strict)


def load_split(path: str | Path) -> dict[str, list[str]]:
    """Reads an OSWorld split file (``{domain: [task ids]}``, the ``test_all.json`` shape).

    Raises:
        TaskNotFound: No such file.
        TaskError: The file does not have that shape.
    """
    path = Path(path)
    raw = _read_json(path, "Split file")
    if not isinstance(raw, Mapping) or not all(
        isinstance(k, str) and isinstance(v, list) and all(isinstance(i, str) for i in v)
        for k, v in raw.items()
    ):
        raise TaskError(f"Split file {str(path)!r} must map each domain to a list of task ids.")
    return {k: list(v) for k, v in raw.items()}


def split_task_ids(split: Mapping[str, Sequence[str]], domains: Sequence[str] | None = None) -> list[str]:
    """Flattens a split into task ids, optionally keeping some domains only.

    Raises:
        TaskError: A requested domain is not in the split.
    """
    if domains is not None:
        unknown = [d for d in domains if d not in split]
        if unknown:
            raise TaskError(f"Domains {unknown} are not in the split. Known: {', '.join(split)}.")
    return [tid for d, ids in split.items() if domains is None or d in domains for tid in ids]

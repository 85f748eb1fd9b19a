"""Getters of files, command output, listings and rules (``vm_file``, ``list_directory``, ``rule``, ...).

``vm_file`` returns None when the agent's file does not exist (OSWorld: score 0).
Anything else that stops a getter (a desktop that does not answer, an expected
file missing from the cache) raises :class:`~osworld_mcp_env.errors.EvaluationError`,
which reports keep apart from a 0 score.
"""

from __future__ import annotations

import json
import logging
import shutil
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas

from osworld_mcp_env.backends.base import Desktop, ExecResult
from osworld_mcp_env.errors import DesktopError, EvaluationError, SetupStepError
from osworld_mcp_env.evaluators.registry import register_getter
from osworld_mcp_env.tasks.context import TaskContext

logger = logging.getLogger(__name__)


def _multi(config: Mapping[str, Any]) -> tuple[list[str], list[str], list[int]]:
    multi = bool(config.get("multi", False))
    paths = config["path"] if multi else [config["path"]]
    dests = config["dest"] if multi else [config["dest"]]
    if len(paths) != len(dests):
        raise EvaluationError(f"'path' and 'dest' must have the same length, got {paths!r} and {dests!r}.")
    gives = list(config.get("gives", [0])) if multi else [0]
    return list(paths), list(dests), gives


def work_path(context: TaskContext, dest: str) -> Path:
    """``<work_dir>/<dest>``, parents made; a ``dest`` that leaves the run directory raises."""
    target = (context.work_dir / dest).resolve()
    if not target.is_relative_to(context.work_dir.resolve()):
        raise EvaluationError(f"dest {dest!r} escapes the run directory {context.work_dir}.")
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


def _pick(paths: list[Any], gives: Sequence[int]) -> Any:
    """OSWorld's ``gives``: the chosen paths, or the one path when a single index is given."""
    picked = [paths[i] for i in gives]
    return picked[0] if len(picked) == 1 else picked


@register_getter("vm_file")
def vm_file(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> Any:
    """Copies ``path`` from the desktop to ``<work_dir>/<dest>`` and returns that path.

    Returns None for a file that does not exist. With ``multi``, ``path``/``dest`` are
    lists and ``gives`` picks which paths to return (a list, or one path when ``gives``
    has one index).
    """
    paths, dests, gives = _multi(config)
    out: list[str | None] = []
    for path, dest in zip(paths, dests, strict=True):
        try:
            data = desktop.read_file(path)
        except DesktopError as exc:
            raise EvaluationError(f"vm_file: cannot read {path!r} from the desktop: {exc}") from exc
        if data is None:
            out.append(None)
            continue
        out.append(save_result(context, dest, data))
    return _pick(out, gives)


@register_getter("cloud_file")
def cloud_file(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> Any:
    """Resolves the url ``path`` from the local file cache, copies it to ``<work_dir>/<dest>``.

    Raises:
        EvaluationError: The file is not cached (an evaluator that cannot run, not a 0).
    """
    paths, dests, gives = _multi(config)
    out: list[str] = []
    for url, dest in zip(paths, dests, strict=True):
        try:
            local = context.cache.resolve(url, context.task_id, Path(dest).name)
        except SetupStepError as exc:
            raise EvaluationError(f"cloud_file: {exc}") from exc
        target = work_path(context, dest)
        if local.resolve() != target:
            shutil.copyfile(local, target)
        out.append(str(target))
    return _pick(out, gives)


@register_getter("cache_file")
def cache_file(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> str:
    """Returns ``<work_dir>/<path>``, a file an earlier step wrote (``execute``'s ``stdout``).

    Raises:
        EvaluationError: No such file.
    """
    path = context.work_dir / config["path"]
    if not path.is_file():
        raise EvaluationError(
            f"cache_file: {path} does not exist; an execute step with stdout={config['path']!r} "
            "should have written it."
        )
    return str(path)


def save_result(context: TaskContext, dest: str, data: bytes) -> str:
    """Writes what a getter fetched to ``<work_dir>/<dest>`` (OSWorld's ``cache_dir``); returns the path."""
    target = work_path(context, dest)
    target.write_bytes(data)
    return str(target)


def user_path(desktop: Desktop, path: str) -> str:
    """``path`` with a leading ``~`` expanded by the desktop user's shell (OSWorld's ``expanduser``)."""
    if not path.startswith("~"):
        return path
    try:
        done = desktop.execute(["sh", "-c", 'printf %s "$HOME"'])
    except DesktopError as exc:
        raise EvaluationError(f"cannot ask the desktop for the user's home: {exc}") from exc
    if done.returncode != 0 or not done.output.startswith("/"):
        raise EvaluationError(f"the desktop did not say where the user's home is: {done.error!r}")
    return done.output.rstrip("/") + path[1:]


def run_command(desktop: Desktop, config: Mapping[str, Any], getter: str) -> ExecResult:
    """Runs ``config["command"]`` (``shell`` as OSWorld spells it) in the desktop as the user."""
    shell = config.get("shell", False)
    shell = shell.strip().lower() == "true" if isinstance(shell, str) else bool(shell)
    try:
        return desktop.execute(config["command"], shell=shell)
    except DesktopError as exc:
        raise EvaluationError(f"{getter}: the desktop did not run {config['command']!r}: {exc}") from exc


@register_getter("vm_command_line")
def vm_command_line(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> str | None:
    """Runs ``command`` in the desktop and returns its stdout (whatever its exit code).

    None when the command could not start (no such program) or ran past its timeout:
    OSWorld's server answers 500 then and its getter returns None, which scores 0 even
    against rules that only ``exclude`` text.
    """
    done = run_command(desktop, config, "vm_command_line")
    return done.output if done.status == "success" else None


@register_getter("vm_command_error")
def vm_command_error(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> str | None:
    """Runs ``command`` in the desktop and returns its stderr; None as :func:`vm_command_line`."""
    done = run_command(desktop, config, "vm_command_error")
    return done.error if done.status == "success" else None


@register_getter("rule")
def rule(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> Any:
    """Returns the literal ``rules`` of the config."""
    return config["rules"]


# OSWorld's /list_directory, run as the desktop user: {"type", "name", "children"} per folder.
_LIST_DIRECTORY = """
import json, os, sys
def tree(d):
    out = {"type": "directory", "name": os.path.basename(d), "children": []}
    try:
        for entry in os.listdir(d):
            full = os.path.join(d, entry)
            out["children"].append(tree(full) if os.path.isdir(full) else {"type": "file", "name": entry})
    except OSError as e:
        out = {"error": str(e)}
    return out
print(json.dumps(tree(sys.argv[1])) if os.path.isdir(sys.argv[1]) else "null")
"""


@register_getter("list_directory")
def list_directory(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> Any:
    """The tree of folder ``path`` as OSWorld's server lists it; None when it is not a folder."""
    try:
        done = desktop.execute(["python3", "-c", _LIST_DIRECTORY, config["path"]])
    except DesktopError as exc:
        raise EvaluationError(f"list_directory: the desktop did not answer: {exc}") from exc
    if done.returncode != 0:
        raise EvaluationError(f"list_directory: listing {config['path']!r} failed: {done.error[-500:]}")
    return json.loads(done.output)


@register_getter("content_from_vm_file")
def content_from_vm_file(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> Any:
    """The last row of the xlsx at ``path`` (``file_type: xlsx``, ``file_content: last_row``), as text.

    pandas reads the first sheet with its first row as the header, as OSWorld's; each
    value of the last row is ``str()``-ed (``nan`` for an empty cell). None when the
    file is missing; a sheet with no data row or a file pandas cannot read scores 0
    (OSWorld raises).
    """
    if config.get("file_type") != "xlsx" or config.get("file_content") != "last_row":
        raise EvaluationError(
            f"content_from_vm_file: only xlsx last_row is implemented (as in OSWorld), got {dict(config)!r}"
        )
    data = desktop.read_file(config["path"])
    if data is None:
        return None
    path = save_result(context, Path(str(config["path"])).name, data)
    try:
        frame = pandas.read_excel(path)
        return frame.iloc[-1].astype(str).tolist()
    except (ValueError, IndexError, OSError, KeyError, zipfile.BadZipFile) as exc:
        logger.warning("content_from_vm_file: no last row in %r (OSWorld raises): %s", config["path"], exc)
        return None

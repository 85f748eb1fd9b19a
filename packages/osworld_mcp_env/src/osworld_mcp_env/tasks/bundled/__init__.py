"""The bundled offline suites: three fixed tasks and the seeded templates, files made here.

``bundled`` (:data:`BUNDLED_TASK_IDS`) is the original three-task suite;
``seeded`` is every registered template of :mod:`osworld_mcp_env.tasks.templates`
(modules ``calc``, ``writer``, ``os``, ``multi_apps``, ... beside this one), whose
seed-0 instances also lie here as JSON (``seeded/<domain>/<id>.json``).

The task JSONs lie beside this module (``<id>.json``); their scripted solutions in
``solutions/<id>.json`` (``"oracle"`` scores 1, ``"wrong"`` scores 0). Input and
gold files are generated in code (openpyxl, python-docx) and written into a local
cache with :func:`materialize_bundled_files`, so every ``download`` and
``cloud_file`` of these tasks resolves with nothing downloaded.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from osworld_mcp_env.errors import TaskNotFound
from osworld_mcp_env.tasks.bundled import calc, chrome, impress, multi_apps, os, vlc, writer  # noqa: F401 - register templates
from osworld_mcp_env.tasks.bundled.files import docx_bytes, xlsx
from osworld_mcp_env.tasks.cache import FileCache
from osworld_mcp_env.tasks.templates import instantiate, parse_instance_id

BUNDLED_TASK_IDS = ("calc-sum-column", "writer-replace-word", "os-create-file")
BUNDLED_URL = "https://bundled.osworld-mcp-env.invalid"

CALC_NUMBERS = (12, 7, 30, 5, 46)
WRITER_PARAGRAPHS = (
    "Quarterly Report",
    "The pilot project was a failure in the first quarter.",
    "Revenue grew by 12 percent while costs fell.",
)

SolutionVariant = Literal["oracle", "wrong", "tools", "ax"]


def calc_sum_column_files() -> dict[str, bytes]:
    """numbers.xlsx (A1:A5) and its gold copy with the sum in B1."""
    gold = [[CALC_NUMBERS[0], sum(CALC_NUMBERS)], *[[n] for n in CALC_NUMBERS[1:]]]
    return {
        f"{BUNDLED_URL}/calc-sum-column/numbers.xlsx": xlsx([n] for n in CALC_NUMBERS),
        f"{BUNDLED_URL}/calc-sum-column/numbers_gold.xlsx": xlsx(gold),
    }


def writer_replace_word_files() -> dict[str, bytes]:
    """report.docx and its gold copy with "failure" replaced by "success"."""
    gold = [p.replace("failure", "success") for p in WRITER_PARAGRAPHS]
    return {
        f"{BUNDLED_URL}/writer-replace-word/report.docx": docx_bytes(WRITER_PARAGRAPHS),
        f"{BUNDLED_URL}/writer-replace-word/report_gold.docx": docx_bytes(gold),
    }


GENERATORS: dict[str, Callable[[], dict[str, bytes]]] = {
    "calc-sum-column": calc_sum_column_files,
    "writer-replace-word": writer_replace_word_files,
    "os-create-file": dict,
}


def materialize_bundled_files(
    cache_root: str | Path, task_ids: Iterable[str] = BUNDLED_TASK_IDS
) -> list[Path]:
    """Writes the bundled tasks' files into ``cache_root`` (OSWorld's cache layout).

    Existing files are overwritten, so the cache always matches this code.

    Returns:
        The paths written.
    """
    cache = FileCache((Path(cache_root),))
    written = []
    for task_id in task_ids:
        if task_id not in GENERATORS:
            raise TaskNotFound(f"No bundled task {task_id!r}. Known: {', '.join(BUNDLED_TASK_IDS)}.")
        for url, data in GENERATORS[task_id]().items():
            target = cache.store_path(url, task_id)
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(target.suffix + ".tmp")
            tmp.write_bytes(data)
            tmp.replace(target)
            written.append(target)
    return written


def bundled_solution(task_id: str, variant: SolutionVariant = "oracle") -> list[dict[str, Any]]:
    """The scripted action list of a bundled task or template instance (``<template>@<seed>``).

    ``"oracle"``: GUI actions only (scores 1); ``"wrong"``: a near miss (scores < 1);
    ``"tools"``: the MCP-tool oracle (scores 1); ``"ax"``: the oracle through the ``ax`` tools
    alone (the env needs ``ax_tools=True``; the bundled Calc and Writer tasks and the Calc and
    Writer templates; a template's ``ax.find`` calls bind refs that its ``ax.act`` cites as
    ``$name``, resolved at run time by :class:`~osworld_mcp_env.tasks.ax_script.RefBindings`).
    GUI calls are in pixels of a 1920x1080 screen.

    Raises:
        TaskNotFound: No bundled task, no such variant, or no tool route for this task.
    """
    if variant not in ("oracle", "wrong", "tools", "ax"):
        raise TaskNotFound(f"Unknown solution variant {variant!r}; use 'oracle', 'wrong', 'tools', 'ax'.")
    if task_id not in GENERATORS:
        template_id, seed = parse_instance_id(task_id)
        instance = instantiate(template_id, seed)
        scripts = {
            "oracle": instance.gui,
            "wrong": instance.near_miss,
            "tools": instance.tools,
            "ax": instance.ax,
        }
        script = scripts[variant]
        if script is None:
            why = "is not tool-reachable" if variant == "tools" else "is not reached by the ax channel alone"
            raise TaskNotFound(f"Task {task_id!r} {why}: it has no {variant!r} solution.")
        return script
    path = resources.files(__name__) / "solutions" / f"{task_id}.json"
    if not path.is_file():
        raise TaskNotFound(f"No bundled solution for {task_id!r}. Known: {', '.join(BUNDLED_TASK_IDS)}.")
    data = json.loads(path.read_text(encoding="utf-8"))
    if variant not in data:
        raise TaskNotFound(f"Task {task_id!r} has no {variant!r} solution.")
    return data[variant]

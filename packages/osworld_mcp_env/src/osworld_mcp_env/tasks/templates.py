"""Seeded task templates: one function per task kind, many instances per seed.

A template turns ``random.Random(seed)`` into an :class:`Instance`: an OSWorld task
dict, the input files the desktop gets, the gold files the evaluator compares
against, and scripted solutions (GUI-only oracle, MCP-tool oracle where the task is
tool-reachable, an ``ax`` oracle where the accessibility channel reaches it, and a
plausible near miss). Data, wording and file names vary with
the seed; the same seed gives byte-identical files, so RL can draw fresh instances
while evaluation pins one.

The files are made on the host at setup by the ``bundled_template`` setup step
(``{"template": id, "seed": n}``): inputs are uploaded into the desktop, gold files
are written to the run's work dir, where the ``cache_file`` getter reads them. A
task dict therefore runs in any env, with no file cache to prepare.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from osworld_mcp_env.backends.base import Desktop
from osworld_mcp_env.errors import SetupStepError, TaskNotFound
from osworld_mcp_env.registry import Registry
from osworld_mcp_env.tasks.context import TaskContext
from osworld_mcp_env.tasks.setup import register_setup_step

Call = dict[str, Any]
DOMAINS: tuple[str, ...] = ("calc", "writer", "impress", "os", "vlc", "chrome", "multi_apps")
SETUP_STEP = "bundled_template"
SOURCE = "osworld-mcp-env seeded templates"
HOME = "/home/user"
SEED_SEPARATOR = "@"
HELD_OUT_SEEDS = range(0, 1000)
"""Seeds evaluation and probes run (seed 0 is the suite's JSON); training never draws them."""
TRAIN_SEEDS = range(1000, 2**31)
"""Seeds training draws fresh instances from (``grpo_trainer.rollouts.tasks.train_seed``)."""


@dataclass(frozen=True)
class Instance:
    """One seeded task and everything needed to run and check it.

    Attributes:
        task: The OSWorld task dict (``id``, ``instruction``, ``config``, ``evaluator``, ...).
        inputs: Guest path -> bytes uploaded before the task's other setup steps.
        gold: Work-dir file name -> bytes read by ``cache_file`` getters.
        gui: The GUI-only oracle (``computer_use`` calls, pixels of 1920x1080).
        tools: The MCP-tool oracle, or None when the task is not tool-reachable.
        near_miss: A plausible wrong answer (must score < 1).
        gui_note: How the GUI oracle works where it is not plain keyboard/mouse input.
        ax: The oracle through the semantic channel alone (``ax.find`` binds refs, ``ax.act``
            acts on them; :mod:`osworld_mcp_env.tasks.ax_script`), or None where the
            accessibility interface does not reach the task.
    """

    task: dict[str, Any]
    inputs: Mapping[str, bytes]
    gold: Mapping[str, bytes]
    gui: list[Call]
    tools: list[Call] | None
    near_miss: list[Call]
    gui_note: str = ""
    ax: list[Call] | None = None


@dataclass(frozen=True)
class Template:
    """A task kind: its id, domain, and the builder of its instances.

    Attributes:
        id: Template id; the seed-0 instance has this task id.
        domain: OSWorld domain (``calc``, ``writer``, ...).
        build: ``(rng, task_id) -> Instance``.
        tool_reachable: Whether an MCP-tool oracle solves it (``Instance.tools`` is set).
    """

    id: str
    domain: str
    build: Callable[[random.Random, str], Instance] = field(repr=False)
    tool_reachable: bool

    @property
    def preferred_interface(self) -> str:
        """The GUI+CLI study's (HybridCUA's) task label: ``"cli"`` or ``"gui"``.

        ``"cli"`` when a non-GUI (tool/CLI) oracle solves it, ``"gui"`` when only the GUI
        oracle does: the label says a non-GUI route exists, derived from ``tool_reachable``
        so the two cannot disagree. A trainer's interface-preference reward reads it.
        """
        return "cli" if self.tool_reachable else "gui"


TEMPLATES: Registry[Template] = Registry("task template")


def register_template(
    template_id: str, domain: str, *, tools: bool
) -> Callable[[Callable[[random.Random, str], Instance]], Callable[[random.Random, str], Instance]]:
    """Registers a builder: ``@register_template("calc-column-sum", "calc", tools=True)``."""
    if domain not in DOMAINS:
        raise ValueError(f"Unknown domain {domain!r}; use one of {', '.join(DOMAINS)}.")

    def wrap(build: Callable[[random.Random, str], Instance]) -> Callable[[random.Random, str], Instance]:
        TEMPLATES.add(template_id, Template(template_id, domain, build, tools))
        return build

    return wrap


def instance_id(template_id: str, seed: int) -> str:
    """Task id of an instance: the template id for seed 0, ``<id>@<seed>`` otherwise."""
    return template_id if seed == 0 else f"{template_id}{SEED_SEPARATOR}{seed}"


def is_instance_id(task_id: str) -> bool:
    """Whether ``task_id`` names a seed (``TEMPLATE@SEED``); OSWorld's and the bundled ids never do."""
    return SEED_SEPARATOR in task_id


def task_labels(task: Any) -> dict[str, str]:
    """The labels a trainer's reward terms read for ``task``: ``{"preferred_interface": ...}``.

    Empty for anything no template makes (an OSWorld or bundled task id, a task dict):
    those tasks carry no interface label.
    """
    if not isinstance(task, str):
        return {}
    try:
        template_id, _ = parse_instance_id(task)
    except TaskNotFound:
        return {}
    return {"preferred_interface": TEMPLATES.get(template_id).preferred_interface}


def parse_instance_id(task_id: str) -> tuple[str, int]:
    """Inverse of :func:`instance_id`.

    Raises:
        TaskNotFound: Not an instance of a registered template (the message suggests the
            closest template) or a seed that is not a non-negative integer.
    """
    template_id, _, seed = task_id.partition(SEED_SEPARATOR)
    if template_id not in TEMPLATES:
        raise TaskNotFound(f"Task {task_id!r}: {TEMPLATES.unknown_message(template_id)}")
    if seed and not seed.isdigit():
        raise TaskNotFound(
            f"Task {task_id!r}: the seed {seed!r} is not an integer >= 0; write TEMPLATE@SEED, "
            f"e.g. {instance_id(template_id, 7)!r}."
        )
    return template_id, int(seed or 0)


def instantiate(template_id: str, seed: int = 0) -> Instance:
    """Builds the instance of ``template_id`` for ``seed`` (deterministic).

    Raises:
        TaskNotFound: No such template.
        ValueError: A negative seed.
    """
    if seed < 0:
        raise ValueError(f"A seed is >= 0, got {seed}.")
    if template_id not in TEMPLATES:
        raise TaskNotFound(TEMPLATES.unknown_message(template_id))
    template = TEMPLATES.get(template_id)
    # zlib.crc32, not hash(): str hashes change between interpreter runs.
    rng = random.Random(zlib.crc32(template_id.encode()) * 1_000_003 + seed)
    instance = template.build(rng, instance_id(template_id, seed))
    if (instance.tools is not None) != template.tool_reachable:
        raise ValueError(f"Template {template_id!r}: tool oracle present = tool_reachable, by definition.")
    return instance


@register_setup_step(SETUP_STEP)
def upload_template_files(desktop: Desktop, context: TaskContext, /, template: str, seed: int = 0) -> None:
    """Generates an instance's files: inputs into the desktop, gold files into the work dir."""
    try:
        instance = instantiate(template, int(seed))
    except (TaskNotFound, ValueError) as exc:
        raise SetupStepError(str(exc)) from exc
    for path, data in instance.inputs.items():
        desktop.upload_file(path, data)
    context.work_dir.mkdir(parents=True, exist_ok=True)
    for name, data in instance.gold.items():
        (context.work_dir / name).write_bytes(data)


# --- helpers shared by the template modules ------------------------------------


def task_dict(
    task_id: str,
    domain: str,
    instruction: str,
    config: list[dict[str, Any]],
    evaluator: dict[str, Any],
    related_apps: list[str],
) -> dict[str, Any]:
    """An OSWorld task dict whose first setup step generates the instance's files."""
    template, seed = parse_instance_id(task_id)
    return {
        "id": task_id,
        "snapshot": domain,
        "instruction": instruction,
        "source": SOURCE,
        "config": [{"type": SETUP_STEP, "parameters": {"template": template, "seed": seed}}, *config],
        "trajectory": "trajectories/",
        "related_apps": related_apps,
        "evaluator": evaluator,
        "proxy": False,
        "fixed_ip": False,
        "possibility_of_env_change": "low",
    }


def gui(action: str, **arguments: Any) -> Call:
    """One ``computer_use`` call."""
    return {"name": "computer_use", "arguments": {"action": action, **arguments}}


def tool(name: str, **arguments: Any) -> Call:
    """One MCP tool call ``<namespace>.<tool>``."""
    return {"name": name, "arguments": arguments}


def key(*keys: str) -> Call:
    """Presses ``keys`` together."""
    return gui("key", keys=list(keys))


def type_text(text: str) -> Call:
    """Types ``text`` (a newline is Return, a tab is Tab)."""
    return gui("type", text=text)


def wait(seconds: float) -> Call:
    """Lets a save or a command finish before the next input."""
    return gui("wait", time=seconds)


DONE = gui("terminate", status="success")
# ctrl+s keeps xlsx/docx/pptx with no dialog: the desktop's LibreOffice profile sets
# WarnAlienFormat=false. No wait follows: the office tasks' evaluator postconfig waits until
# the office has handled the keys (``bundled_office_idle``), so the file is written.
SAVE = [key("ctrl", "s")]

WORDS = (
    "amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "harbor", "island", "juniper",
    "kestrel", "lagoon", "meadow", "nectar", "orchid", "prairie", "quartz", "raven", "summit", "tundra",
    "umber", "valley", "willow", "yonder", "zephyr",
)  # fmt: skip
NAMES = ("Alice", "Bruno", "Chen", "Dana", "Emil", "Farah", "Goran", "Hana", "Ivan", "Julia", "Kofi", "Lena")


def pick(rng: random.Random, options: tuple[str, ...], k: int = 1) -> list[str]:
    """``k`` distinct items of ``options``."""
    return rng.sample(list(options), k)


def file_stem(rng: random.Random) -> str:
    """A seeded file name stem such as ``cedar_report``."""
    return f"{rng.choice(WORDS)}_{rng.choice(('report', 'data', 'notes', 'summary', 'budget', 'log'))}"

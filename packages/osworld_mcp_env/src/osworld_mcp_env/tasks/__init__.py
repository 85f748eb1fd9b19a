"""OSWorld tasks: the typed model, loading and validation, splits, setup steps, the bundled suite.

Typical use by the env::

    task = load_task("calc-sum-column")                 # or a path, a dict, an id in a TaskLibrary
    ctx = TaskContext(task.id, work_dir, TaskRunConfig(cache_roots=(cache,)))
    run_setup(task, desktop, ctx)
    ...  # the episode
    verdict = evaluate(task, desktop, ctx, declared_infeasible=False)   # from osworld_mcp_env.evaluators
"""

from osworld_mcp_env.backends.base import Desktop
from osworld_mcp_env.errors import TaskError
from osworld_mcp_env.tasks.bundled import (
    BUNDLED_TASK_IDS,
    bundled_solution,
    materialize_bundled_files,
)
from osworld_mcp_env.tasks.cache import CacheMiss, FileCache
from osworld_mcp_env.tasks.context import TaskContext, TaskRunConfig
from osworld_mcp_env.tasks.loader import (
    BUNDLED_DIR,
    TaskLibrary,
    default_library,
    load_split,
    load_task,
    read_task_file,
    split_task_ids,
    task_problems,
    validate_task,
)
from osworld_mcp_env.tasks.model import Check, Conj, Evaluator, GetterSpec, SetupStep, Task, task_from_dict
from osworld_mcp_env.tasks.setup import SETUP_STEPS, register_setup_step, run_steps


def run_setup(task: Task, desktop: Desktop, context: TaskContext) -> None:
    """Runs the task's ``config`` steps on ``desktop``.

    Raises:
        TaskError: The task was loaded leniently and is not supported here.
        SetupStepError: A step failed (the message names it).
        DesktopError: The desktop failed.
    """
    if not task.supported:
        raise TaskError(f"Task {task.id!r} is not supported here: {'; '.join(task.unsupported)}")
    context.work_dir.mkdir(parents=True, exist_ok=True)
    run_steps(task.config, desktop, context, phase="setup")


__all__ = [
    "BUNDLED_DIR",
    "BUNDLED_TASK_IDS",
    "SETUP_STEPS",
    "CacheMiss",
    "Check",
    "Conj",
    "Evaluator",
    "FileCache",
    "GetterSpec",
    "SetupStep",
    "Task",
    "TaskContext",
    "TaskLibrary",
    "TaskRunConfig",
    "bundled_solution",
    "default_library",
    "load_split",
    "load_task",
    "materialize_bundled_files",
    "read_task_file",
    "register_setup_step",
    "run_setup",
    "run_steps",
    "split_task_ids",
    "task_from_dict",
    "task_problems",
    "validate_task",
]

"""Which task each group trains on: the config's ``tasks`` resolved once, a fresh template seed per group.

``tasks`` entries are what ``hybrid-agent eval --suite`` takes (``bundled``,
``seeded:train``, a split file, a directory, a task id such as ``calc-column-sum@7``),
resolved by :func:`hybrid_agent.suite.load_tasks`, so training and evaluation read
a spec the same way. Groups cycle through the resolved list by their global index
(:func:`grpo_trainer.training.trainer.group_index`). A seeded template's seed-0 task (a bare
template id, as ``seeded:train`` lists them) is never trained on as is: each group
gets a fresh instance ``TEMPLATE@SEED`` whose seed lies in
:data:`~osworld_mcp_env.tasks.templates.TRAIN_SEEDS` and follows from the engine seed
and the group index alone, so a resumed run draws the same seeds; held-out seeds
(:data:`~osworld_mcp_env.tasks.templates.HELD_OUT_SEEDS`, seed 0 included) stay for
evaluation and probes. An explicit ``TEMPLATE@SEED`` entry is pinned to its seed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from hybrid_agent.suite import SuiteTask, load_tasks
from osworld_mcp_env.tasks.templates import TEMPLATES, TRAIN_SEEDS, instance_id

OSWORLD_ENVS = "osworld_mcp_env:"
"""The env ids whose tasks the OSWorld loader knows; other envs (the toy env) name their own."""


def resolve_tasks(entries: Sequence[str], env_id: str) -> list[SuiteTask]:
    """The tasks a run cycles through.

    Raises:
        UnknownSuite: On an OSWorld env, an entry that is no suite and no task id.
        TaskNotFound: A bad ``TEMPLATE@SEED`` or a split naming a missing task.
    """
    return load_tasks(entries, pass_unknown=not env_id.startswith(OSWORLD_ENVS))


def train_seed(seed: int, index: int) -> int:
    """The template seed of group ``index`` in a run seeded ``seed``: one of ``TRAIN_SEEDS``.

    A string seeds :class:`random.Random` through SHA-512, the same in every process.
    """
    return random.Random(f"grpo-task/{seed}/{index}").choice(TRAIN_SEEDS)


def group_task(tasks: Sequence[SuiteTask], index: int, seed: int) -> str:
    """What group ``index`` resets to: its task's source, or a fresh instance of its template."""
    task = tasks[index % len(tasks)]
    if task.task_id in TEMPLATES:
        return instance_id(task.task_id, train_seed(seed, index))
    return task.source

"""What a task run needs besides the desktop: the cache, a scratch dir, and limits."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from osworld_mcp_env.tasks.cache import FileCache


@dataclass(frozen=True)
class TaskRunConfig:
    """Knobs of setup and evaluation, passed down from the env's config.

    Attributes:
        cache_roots: Local directories that stand in for the internet (see ``FileCache``).
        max_sleep_s: Upper bound of one ``sleep`` step; the task's own value is kept when lower.
            OSWorld's sleeps wait for a slow VM; a local desktop settles faster.
        until_attempts: Most runs of an ``execute`` step whose ``until`` is not met (OSWorld: 5).
        until_interval_s: Pause between those runs.
        client_password: Replaces ``{CLIENT_PASSWORD}`` in commands.
        open_timeout_s: How long an ``open`` step waits for its window.
    """

    cache_roots: tuple[Path, ...] = ()
    max_sleep_s: float = field(default=5.0, metadata={"help": "Cap of one sleep step, seconds; >= 0."})
    until_attempts: int = field(default=5, metadata={"help": "Runs of an execute step until its `until`."})
    until_interval_s: float = field(default=0.5, metadata={"help": "Pause between `until` runs, seconds."})
    client_password: str = "password"
    open_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        if self.max_sleep_s < 0:
            raise ValueError(f"max_sleep_s must be >= 0, got {self.max_sleep_s}.")
        if self.until_attempts < 1:
            raise ValueError(f"until_attempts must be >= 1, got {self.until_attempts}.")
        object.__setattr__(self, "cache_roots", tuple(Path(p) for p in self.cache_roots))


@dataclass(frozen=True)
class TaskContext:
    """One task run: its id, the file cache, a scratch directory and the limits.

    Attributes:
        task_id: The running task (cache lookups are per task).
        work_dir: Host directory of this run: ``execute`` steps write their
            ``stdout``/``stderr`` files here, getters copy files here
            (OSWorld's per-task ``cache_dir``).
        config: The limits.
        task_dir: Directory of the task file, for ``upload_file`` relative paths.
        sleep: The sleep function (injectable so tests can count sleeps).
    """

    task_id: str
    work_dir: Path
    config: TaskRunConfig = field(default_factory=TaskRunConfig)
    task_dir: Path | None = None
    sleep: Callable[[float], None] = time.sleep

    @property
    def cache(self) -> FileCache:
        """The read-only file cache over ``config.cache_roots``."""
        return FileCache(self.config.cache_roots)

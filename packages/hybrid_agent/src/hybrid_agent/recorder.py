"""Episode records on disk: one JSONL per episode plus its screenshots, written so a kill never tears one.

Layout of a run directory::

    run.json                          the run's config (a resumed run must match it)
    suite.json                        every (task, domain) of the suite and the runs per task
    stop.json                         why the last call stopped before the suite was done (budget)
    episodes/<task>__run<r>.jsonl      finished episodes: header line, one line per step, end line
    episodes/<task>__run<r>.jsonl.partial   an episode being written (discarded on resume)
    episodes/<task>__run<r>/step_000.png    the frame the model saw at each step
    episodes/errored/<task>__run<r>.try<n>.jsonl   an errored try set aside for a rerun
    episodes/errored/<task>__run<r>.try<n>/        its screenshots

A record becomes ``.jsonl`` by an atomic rename after its end line is flushed
and synced, so a finished record is complete by construction. A resumed run
(:func:`plan_resume`) skips the finished episodes except those whose error a
rerun can cure: such a record is moved under ``errored/`` first, so the new try
is written under the normal name and no try is lost. Screenshots are
PNG-encoded on a background thread (encoding a 1080p frame costs tens of
milliseconds); the rename waits for them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from hybrid_agent.errors import ConfigError

EPISODES = "episodes"
ERRORED = "errored"
RUN_FILE = "run.json"
SUITE_FILE = "suite.json"
STOP_FILE = "stop.json"
PARTIAL = ".partial"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_TRY = re.compile(r"^(?P<key>.+)\.try(?P<attempt>\d+)\.jsonl$")

# Error types a rerun can cure: the model server, the desktop or the env failed, not the task.
# ``eval_error`` is not among them: an evaluator that cannot run on a task fails the same way
# on every try, so a rerun spends a whole episode to learn nothing; it stays recorded and
# reports count it as errored.
RETRYABLE_ERRORS = frozenset({"policy_error", "reset_error", "env_error", "desktop_error"})
# Policy error codes that are not transient: the same context overflows the same window again.
FINAL_POLICY_CODES = frozenset({"context_length"})


def episode_key(task_id: str, run: int) -> str:
    """File stem of an episode: the task id made path-safe, and the run index."""
    return f"{_UNSAFE.sub('_', task_id)}__run{run}"


def _write_png(path: Path, pixels: np.ndarray) -> None:
    tmp = path.with_suffix(".png.tmp")
    Image.fromarray(pixels).save(tmp, format="PNG", compress_level=1)
    tmp.replace(path)


class EpisodeWriter:
    """Writes one episode's record; :meth:`finish` publishes it atomically."""

    def __init__(
        self, run_dir: Path, task_id: str, run: int, header: Mapping[str, Any], pool: ThreadPoolExecutor
    ):
        """Starts the partial record (replacing any stale one) and writes the header line."""
        self.key = episode_key(task_id, run)
        folder = run_dir / EPISODES
        folder.mkdir(parents=True, exist_ok=True)
        self.final = folder / f"{self.key}.jsonl"
        self.partial = folder / f"{self.key}.jsonl{PARTIAL}"
        self.frames = folder / self.key
        shutil.rmtree(self.frames, ignore_errors=True)
        self._pool = pool
        self._pending: list[Future[None]] = []
        self._file = self.partial.open("w", encoding="utf-8")
        self._line({"type": "episode", **header})

    def _line(self, record: Mapping[str, Any]) -> None:
        self._file.write(json.dumps(record, ensure_ascii=False, default=_jsonable) + "\n")
        self._file.flush()

    def step(self, record: dict[str, Any], frame: np.ndarray | None) -> None:
        """Appends one step line; ``frame`` (the model's view) goes to ``step_NNN.png``.

        The line gets ``time`` (Unix seconds when it was written): exports that name
        steps by wall clock (OSWorld's ``step_<n>_<timestamp>.png``) read it.
        """
        record = {**record, "time": time.time()}
        if frame is not None:
            self.frames.mkdir(exist_ok=True)
            name = f"step_{record['step']:03d}.png"
            record = {**record, "screenshot": f"{self.key}/{name}"}
            self._pending.append(self._pool.submit(_write_png, self.frames / name, frame))
        self._line({"type": "step", **record})

    def finish(self, end: Mapping[str, Any]) -> Path:
        """Writes the end line, waits for the screenshots, syncs and renames to ``.jsonl``."""
        for future in self._pending:
            future.result()
        self._line({"type": "end", **end})
        os.fsync(self._file.fileno())
        self._file.close()
        os.replace(self.partial, self.final)
        return self.final

    def abandon(self) -> None:
        """Closes the partial record without publishing it (the run was interrupted)."""
        for future in self._pending:
            future.cancel()
        self._file.close()


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


@dataclass(frozen=True)
class EpisodeRecord:
    """A finished episode read back: header, step lines, end line, and where it lies."""

    header: dict[str, Any]
    steps: list[dict[str, Any]]
    end: dict[str, Any]
    path: Path

    @property
    def task_id(self) -> str:
        """The episode's task id."""
        return self.header["task_id"]

    @property
    def run(self) -> int:
        """The episode's run index."""
        return int(self.header["run"])


def read_episode(path: str | Path) -> EpisodeRecord:
    """Reads one finished ``.jsonl`` record.

    Raises:
        ConfigError: The file lacks a header or an end line (not a finished record).
    """
    path = Path(path)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not lines or lines[0].get("type") != "episode" or lines[-1].get("type") != "end":
        raise ConfigError(f"{path} is not a finished episode record (header ... end).")
    return EpisodeRecord(lines[0], [r for r in lines[1:-1] if r.get("type") == "step"], lines[-1], path)


def iter_episodes(run_dir: str | Path) -> Iterator[EpisodeRecord]:
    """Every current finished episode of a run directory, in file-name order.

    Partials and the errored tries set aside for a rerun (:func:`iter_archived_tries`) are not listed.
    """
    for path in sorted((Path(run_dir) / EPISODES).glob("*.jsonl")):
        yield read_episode(path)


def discard_partials(run_dir: Path) -> int:
    """Removes unfinished records and their screenshots (left by a killed run); returns how many."""
    count = 0
    for partial in (run_dir / EPISODES).glob(f"*.jsonl{PARTIAL}"):
        key = partial.name.removesuffix(f".jsonl{PARTIAL}")
        shutil.rmtree(partial.parent / key, ignore_errors=True)
        partial.unlink()
        count += 1
    return count


def worth_retrying(error: Mapping[str, Any] | None) -> bool:
    """Whether a rerun can cure the error an episode ended in (``None``: scored, nothing to cure).

    A policy error is transient (a dropped connection, an overloaded server, a key
    fixed before the resume) unless its ``code`` says the context outgrew the
    model's window, which the same configuration reproduces.
    """
    if not error:
        return False
    if error.get("type") == "policy_error" and error.get("code") in FINAL_POLICY_CODES:
        return False
    return error.get("type") in RETRYABLE_ERRORS


@dataclass(frozen=True)
class ArchivedTry:
    """An errored try set aside under ``episodes/errored/`` so the pair could be rerun.

    Attributes:
        record: The try's record. Its steps' ``screenshot`` paths name the frames as
            they were written (``<key>/step_000.png``); the files now lie in ``frames``.
        attempt: 1 for the pair's first try, 2 for the second ...
        frames: The folder holding the try's screenshots.
    """

    record: EpisodeRecord
    attempt: int
    frames: Path


def iter_archived_tries(run_dir: str | Path) -> Iterator[ArchivedTry]:
    """Every errored try set aside by :func:`plan_resume`, by key then attempt."""
    folder = Path(run_dir) / EPISODES / ERRORED
    found = [(m["key"], int(m["attempt"]), p) for p in folder.glob("*.jsonl") if (m := _TRY.match(p.name))]
    for key, attempt, path in sorted(found):
        yield ArchivedTry(read_episode(path), attempt, folder / f"{key}.try{attempt}")


def _archive(run_dir: Path, key: str, attempt: int) -> None:
    """Moves a finished record and its screenshots to ``errored/<key>.try<attempt>``.

    The frames move first and the record's rename commits: a kill in between
    leaves the record in place, the next resume moves it under the same name,
    and no try is counted twice.
    """
    folder = run_dir / EPISODES
    target = folder / ERRORED / f"{key}.try{attempt}"
    target.parent.mkdir(exist_ok=True)
    frames = folder / key
    if frames.is_dir():
        shutil.rmtree(target, ignore_errors=True)
        os.replace(frames, target)
    os.replace(folder / f"{key}.jsonl", target.with_name(f"{target.name}.jsonl"))


@dataclass(frozen=True)
class ResumePlan:
    """What a (resumed) run does with each (task_id, run) pair it was asked for.

    Attributes:
        pending: Pairs to run now, in the order asked: no finished record, or an
            errored one that was set aside for a rerun.
        retrying: The pairs of ``pending`` whose errored record was set aside.
        exhausted: Errored pairs kept as they are: they were tried ``max_tries`` times.
        kept: How many pairs keep their finished record (scored, a final error, or exhausted).
        discarded_partials: Unfinished records of a killed run that were removed.
    """

    pending: tuple[tuple[str, int], ...]
    retrying: tuple[tuple[str, int], ...]
    exhausted: tuple[tuple[str, int], ...]
    kept: int
    discarded_partials: int


def plan_resume(run_dir: Path, todo: Sequence[tuple[str, int]], max_tries: int) -> ResumePlan:
    """Decides which (task_id, run) pairs a run executes, and sets aside the errored ones it reruns.

    Called once at the start of a run, before any episode is written: it removes
    the partial records of a killed run, keeps every finished record that is
    scored or ended in an error no rerun can cure (:func:`worth_retrying`), and
    moves an errored record a rerun can cure to ``errored/`` while the pair has
    been tried fewer than ``max_tries`` times.

    Raises:
        ConfigError: ``max_tries`` is below 1.
    """
    if max_tries < 1:
        raise ConfigError(f"max_tries must be >= 1 (1: never rerun an errored episode), got {max_tries}.")
    discarded = discard_partials(run_dir)
    earlier: dict[str, int] = {}
    for archived in iter_archived_tries(run_dir):
        key = episode_key(archived.record.task_id, archived.record.run)
        earlier[key] = max(earlier.get(key, 0), archived.attempt)
    pending: list[tuple[str, int]] = []
    retrying: list[tuple[str, int]] = []
    exhausted: list[tuple[str, int]] = []
    for task_id, run in todo:
        key = episode_key(task_id, run)
        path = run_dir / EPISODES / f"{key}.jsonl"
        if not path.exists():
            pending.append((task_id, run))
        elif worth_retrying(read_episode(path).end.get("error")):
            attempt = earlier.get(key, 0) + 1
            if attempt >= max_tries:
                exhausted.append((task_id, run))
                continue
            _archive(run_dir, key, attempt)
            pending.append((task_id, run))
            retrying.append((task_id, run))
    kept = len(todo) - len(pending)
    return ResumePlan(tuple(pending), tuple(retrying), tuple(exhausted), kept, discarded)


@dataclass(frozen=True)
class RunSuite:
    """The suite a run directory was asked to cover (``suite.json``).

    Attributes:
        tasks: ``(task_id, domain)`` of every task, in suite order.
        runs: Runs per task.
    """

    tasks: tuple[tuple[str, str], ...]
    runs: int

    def pairs(self) -> list[tuple[str, int]]:
        """Every (task_id, run) the suite asks for, run-major as the runner schedules them."""
        return [(task_id, run) for run in range(self.runs) for task_id, _ in self.tasks]


def write_suite(run_dir: Path, tasks: Sequence[tuple[str, str]], runs: int) -> RunSuite:
    """Records the suite in ``suite.json`` (temp file + rename) so reports count every task of it.

    A resumed run adds to what is stored rather than replacing it: records of
    earlier tasks and runs exist, so they stay in the suite (runs: the larger of
    the two; tasks: the stored ones, then the new ones).

    Returns:
        The suite as stored.

    Raises:
        ConfigError: A task id is given two domains (this call's or the stored one).
    """
    stored = read_suite(run_dir)
    domains: dict[str, str] = dict(stored.tasks) if stored else {}
    for task_id, domain in tasks:
        if domains.setdefault(task_id, domain) != domain:
            raise ConfigError(
                f"Task {task_id!r} has domain {domain!r} here and {domains[task_id]!r} in "
                f"{run_dir / SUITE_FILE}; one task id names one task (use another --out directory)."
            )
    suite = RunSuite(tuple(domains.items()), max(runs, stored.runs if stored else 0))
    run_dir.mkdir(parents=True, exist_ok=True)
    document = {"runs": suite.runs, "tasks": [{"task_id": t, "domain": d} for t, d in suite.tasks]}
    tmp = run_dir / f"{SUITE_FILE}.tmp"
    tmp.write_text(json.dumps(document, indent=1), encoding="utf-8")
    tmp.replace(run_dir / SUITE_FILE)
    return suite


def read_suite(run_dir: str | Path) -> RunSuite | None:
    """The run directory's ``suite.json``; ``None`` when absent (a run recorded before it existed)."""
    path = Path(run_dir) / SUITE_FILE
    if not path.exists():
        return None
    document = json.loads(path.read_text(encoding="utf-8"))
    return RunSuite(tuple((t["task_id"], t["domain"]) for t in document["tasks"]), int(document["runs"]))


def check_run_config(run_dir: Path, config: Mapping[str, Any]) -> None:
    """Writes ``run.json``, or checks that a resumed run has the same config.

    Raises:
        ConfigError: The directory holds a run with another config (a resumed run
            must not mix settings); the message names the differing keys.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / RUN_FILE
    config = json.loads(json.dumps(config, default=_jsonable))
    if path.exists():
        stored = json.loads(path.read_text(encoding="utf-8"))
        differing = sorted(
            k for k in set(stored) | set(config) if stored.get(k) != config.get(k) and k != "runs"
        )
        if differing:
            raise ConfigError(
                f"{run_dir} holds a run with other settings ({', '.join(differing)}); "
                "resume with the same settings or use another --out directory."
            )
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(config, indent=2), encoding="utf-8")
    tmp.replace(path)


def read_run_config(run_dir: str | Path) -> dict[str, Any]:
    """The ``run.json`` of a run directory ({} when absent)."""
    path = Path(run_dir) / RUN_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def write_stop(run_dir: Path, stop: Mapping[str, Any]) -> None:
    """Records why a run stopped early (``stop.json``, temp file + rename); a resumed run clears it."""
    tmp = run_dir / f"{STOP_FILE}.tmp"
    tmp.write_text(json.dumps(stop, indent=1, default=_jsonable), encoding="utf-8")
    tmp.replace(run_dir / STOP_FILE)


def clear_stop(run_dir: Path) -> None:
    """Forgets an earlier early stop: the run continues."""
    (run_dir / STOP_FILE).unlink(missing_ok=True)


def read_stop(run_dir: str | Path) -> dict[str, Any] | None:
    """The run directory's ``stop.json``; ``None`` when its last call did not stop early."""
    path = Path(run_dir) / STOP_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None

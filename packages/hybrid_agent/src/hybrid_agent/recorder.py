"""Episode records on disk: one JSONL per episode plus its screenshots, written so a kill never tears one.

Layout of a run directory::

    run.json                          the run's config (a resumed run must match it)
    episodes/<task>__run<r>.jsonl      finished episodes: header line, one line per step, end line
    episodes/<task>__run<r>.jsonl.partial   an episode being written (discarded on resume)
    episodes/<task>__run<r>/step_000.png    the frame the model saw at each step

A record becomes ``.jsonl`` by an atomic rename after its end line is flushed
and synced, so a finished record is complete by construction and a resumed run
skips exactly the finished episodes. Screenshots are PNG-encoded on a
background thread (encoding a 1080p frame costs tens of milliseconds); the
rename waits for them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from hybrid_agent.errors import ConfigError

EPISODES = "episodes"
RUN_FILE = "run.json"
PARTIAL = ".partial"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


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
        """Appends one step line; ``frame`` (the model's view) goes to ``step_NNN.png``."""
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
    """Every finished episode of a run directory, in file-name order (partials are ignored)."""
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

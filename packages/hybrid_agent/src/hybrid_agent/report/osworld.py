"""Run directories in OSWorld's results layout, and OSWorld's per-domain summary over such a tree.

OSWorld's runner (``lib_run_single.py``) leaves one folder per task::

    <result_dir>/<action_space>/<observation_type>/<model>/<domain>/<task_id>/
        result.txt                  the evaluator's score, one number and a newline
        traj.jsonl                  one line per step: step_num, action_timestamp, action,
                                    response, reward, done, info, screenshot_file
        step_<n>_<timestamp>.png    the screen after step n's action (timestamp %Y%m%d@%H%M%S%f)

and its ``show_result.py`` reads only ``result.txt``: per domain the mean of the
scores found, overall the mean over every task found. OSWorld has one trial per
result tree, so :func:`export_osworld` writes run index ``r`` of a run directory to
``<out>/run<r>/``, each an OSWorld ``result_dir`` of its own.

What maps how:

- ``result.txt`` only for a scored episode. An errored one (no score) gets its
  ``traj.jsonl`` and an ``error.json`` but no ``result.txt``, as OSWorld leaves a task
  that crashed: its readers skip it, as Table 2 leaves errors out of the mean.
- ``action`` is the call sent to the env (``None`` when the reply executed nothing),
  ``response`` the raw model output, ``reward`` 0 until the last step, which carries the
  score (OSWorld's env gives none per step either), ``info`` the step's parse result,
  evidence and env error.
- The screenshot after step n is the frame the model saw at step n + 1 (recorded as
  ``step_<n+1>.png``); the last step has none recorded, so its ``screenshot_file`` is
  ``None``. ``action_timestamp`` is when the step was recorded (the record's ``time``;
  an older record without one uses the file's modification time).

What OSWorld's layout has no place for, and training data needs (:func:`read_exported`
reads it back): ``step_0_<timestamp>.png``, the frame the model saw at step 1 (OSWorld
writes after-frames only); ``info`` also holds the call as the model wrote it, its
further calls (``then``), the tool result relayed to the model and the tools it was
shown; ``episode.json`` holds the record's header and end line (instruction, adapter,
coordinate space). OSWorld's readers ignore them.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from hybrid_agent import metrics
from hybrid_agent.cost import model_name
from hybrid_agent.errors import ConfigError
from hybrid_agent.metrics import EpisodeStats, Estimate
from hybrid_agent.recorder import EPISODES, EpisodeRecord, iter_episodes, read_run_config

RESULT = "result.txt"
TRAJECTORY = "traj.jsonl"
EPISODE = "episode.json"
TIMESTAMP = "%Y%m%d@%H%M%S%f"
OBSERVATION_TYPE = "screenshot"


def _safe(name: str) -> str:
    """One path component (a model like ``Qwen/Qwen3-VL-8B`` must not nest)."""
    return name.replace("/", "_").replace(os.sep, "_") or "_"


def default_action_space(config: dict[str, Any]) -> str:
    """``computer_use`` for a GUI-only run, ``computer_use_mcp`` for the hybrid action space."""
    agent = config.get("agent") or config
    return "computer_use" if agent.get("gui_only") else "computer_use_mcp"


def _link_or_copy(source: Path, target: Path) -> None:
    # A hard link costs no disk (a study exports tens of thousands of PNGs); across file systems, copy.
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _stamp(step: dict[str, Any], fallback: float) -> str:
    return datetime.fromtimestamp(step.get("time", fallback)).strftime(TIMESTAMP)


def _trajectory(run_dir: Path, record: EpisodeRecord, folder: Path) -> list[dict[str, Any]]:
    """The traj.jsonl lines of one episode; links each step's after-frame into ``folder``."""
    fallback = record.path.stat().st_mtime
    score = record.end.get("score")
    lines = []
    for index, step in enumerate(record.steps):
        n = index + 1
        stamp = _stamp(step, fallback)
        after = record.steps[n].get("screenshot") if n < len(record.steps) else None
        screenshot = None
        if after and (run_dir / EPISODES / after).exists():
            screenshot = f"step_{n}_{stamp}.png"
            _link_or_copy(run_dir / EPISODES / after, folder / screenshot)
        last = n == len(record.steps)
        parse = step.get("parse") or {}
        lines.append(
            {
                "step_num": n,
                "action_timestamp": stamp,
                "action": step.get("action"),
                "response": step.get("model_output", ""),
                "reward": float(score or 0.0) if last else 0.0,
                "done": last,
                "info": {
                    "parse_ok": bool(parse.get("ok")),
                    "parse_code": parse.get("code"),
                    "evidence": step.get("evidence"),
                    "env_error": step.get("env_error"),
                    "call": parse.get("call"),
                    "then": step.get("then"),
                    "tool_result_shown": step.get("tool_result_shown", ""),
                    "tool_result_parts": step.get("tool_result_parts"),
                    "frame_id": step.get("frame_id"),
                    "zoom_scale": step.get("zoom_scale"),
                    "shown_tools": step.get("shown_tools"),
                },
                "screenshot_file": screenshot,
            }
        )
    return lines


def _write_task(run_dir: Path, record: EpisodeRecord, folder: Path) -> None:
    if folder.exists():
        shutil.rmtree(folder)  # a re-export replaces, never mixes, a task's files
    folder.mkdir(parents=True)
    lines = _trajectory(run_dir, record, folder)
    first = record.steps[0].get("screenshot") if record.steps else None
    initial = None
    if first and (run_dir / EPISODES / first).exists():
        initial = f"step_0_{_stamp(record.steps[0], record.path.stat().st_mtime)}.png"
        _link_or_copy(run_dir / EPISODES / first, folder / initial)
    episode = {"header": record.header, "end": record.end, "initial_screenshot": initial}
    (folder / EPISODE).write_text(json.dumps(episode, ensure_ascii=False), encoding="utf-8")
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    (folder / TRAJECTORY).write_text(text, encoding="utf-8")
    score = record.end.get("score")
    if score is None:
        error = record.end.get("error") or {"type": "unknown", "message": "no score recorded"}
        (folder / "error.json").write_text(json.dumps(error, ensure_ascii=False), encoding="utf-8")
    else:
        (folder / RESULT).write_text(f"{float(score)}\n", encoding="utf-8")


@dataclass(frozen=True)
class Export:
    """What :func:`export_osworld` wrote.

    Attributes:
        result_dirs: One OSWorld ``result_dir`` per run index (``<out>/run<r>``).
        target: ``<action_space>/<observation_type>/<model>``, the same under each.
        tasks: Task folders written.
        scored: Of those, with a ``result.txt``.
    """

    result_dirs: tuple[Path, ...]
    target: str
    tasks: int
    scored: int


def export_osworld(
    run_dir: str | Path,
    out: str | Path,
    *,
    action_space: str | None = None,
    observation_type: str = OBSERVATION_TYPE,
    model: str | None = None,
) -> Export:
    """Writes a run directory's current episodes as OSWorld result trees, one per run index.

    Args:
        run_dir: The run directory (``hybrid-agent eval --out``).
        out: Where ``run<r>/<action_space>/<observation_type>/<model>/...`` goes.
        action_space: Default :func:`default_action_space` of the run's config.
        observation_type: OSWorld's observation type name (``screenshot``).
        model: Default: the model the policy spec names (:func:`hybrid_agent.cost.model_name`).
    """
    run_dir, out = Path(run_dir), Path(out)
    config = read_run_config(run_dir)
    action_space = action_space or default_action_space(config)
    model = model or model_name(str(config.get("policy", "unknown")))
    target = Path(_safe(action_space), _safe(observation_type), _safe(model))
    roots: set[Path] = set()
    tasks = scored = 0
    for record in iter_episodes(run_dir):
        root = out / f"run{record.run}"
        roots.add(root)
        domain = _safe(str(record.header.get("domain") or "unknown"))
        _write_task(run_dir, record, root / target / domain / _safe(record.task_id))
        tasks += 1
        scored += record.end.get("score") is not None
    return Export(tuple(sorted(roots)), target.as_posix(), tasks, scored)


# --------------------------------------------------------------------------- reading episodes back


@dataclass(frozen=True)
class ExportedEpisode:
    """One exported task folder read back as the episode record it was written from.

    Attributes:
        record: Header, step lines and end line as the recorder wrote them, for the fields
            the export keeps; each step's ``screenshot`` names a file of ``frames``.
        frames: The task folder (the screenshots' directory).
    """

    record: EpisodeRecord
    frames: Path


def _step_line(index: int, line: dict[str, Any], seen: str | None) -> dict[str, Any]:
    """The recorder's step line of traj.jsonl's ``line``; ``seen``: the frame shown before it."""
    info = line.get("info") or {}
    step: dict[str, Any] = {
        "step": index,
        "model_output": line.get("response", ""),
        "parse": {"ok": info.get("parse_ok"), "code": info.get("parse_code"), "call": info.get("call")},
        "action": line.get("action"),
        "evidence": info.get("evidence"),
        "env_error": info.get("env_error"),
        "tool_result_shown": info.get("tool_result_shown", ""),
        "shown_tools": info.get("shown_tools"),
        "screenshot": seen,
    }
    for key in ("then", "tool_result_parts", "frame_id", "zoom_scale"):
        if info.get(key) is not None:
            step[key] = info[key]
    return step


def read_exported(result_dir: str | Path) -> Iterator[ExportedEpisode]:
    """Every task folder under an :func:`export_osworld` tree, as records, in path order.

    The frame the model saw at step n is the after-frame of step n - 1 (``step_0_*``, the
    initial one, for the first step).

    Raises:
        ConfigError: A folder with a ``traj.jsonl`` lacks ``episode.json`` (not written by
            this export: OSWorld's own trajectories keep neither the instruction nor the
            tool results and tools a context shows).
    """
    for trajectory in sorted(Path(result_dir).rglob(TRAJECTORY)):
        folder = trajectory.parent
        if not (folder / EPISODE).is_file():
            raise ConfigError(
                f"{folder} has no {EPISODE}: only hybrid-agent export-osworld writes the instruction, "
                "tool results and tools shown that rebuild an episode's contexts."
            )
        episode = json.loads((folder / EPISODE).read_text(encoding="utf-8"))
        lines = [json.loads(text) for text in trajectory.read_text(encoding="utf-8").splitlines() if text]
        seen = [episode.get("initial_screenshot")] + [line.get("screenshot_file") for line in lines]
        steps = [_step_line(i, line, seen[i]) for i, line in enumerate(lines)]
        record = EpisodeRecord(episode["header"], steps, episode["end"], trajectory)
        yield ExportedEpisode(record, folder)


# --------------------------------------------------------------------------- reading a result tree


@dataclass(frozen=True)
class TreeResult:
    """The scores of one OSWorld result tree (``<result_dir>/<action_space>/<obs>/<model>``).

    Attributes:
        target: ``<action_space>/<observation_type>/<model>``.
        run: The run index of an exported tree (``run<r>/``); ``None`` for a plain result_dir.
        scores: ``{domain: {task_id: score}}`` from every ``result.txt``.
    """

    target: str
    run: int | None
    scores: dict[str, dict[str, float]]

    @property
    def name(self) -> str:
        """``run<r>/<target>`` or ``<target>``."""
        return self.target if self.run is None else f"run{self.run}/{self.target}"

    def domain_rate(self, domain: str) -> float:
        """OSWorld's per-domain success rate: the mean score of the domain's tasks found."""
        values = list(self.scores[domain].values())
        return sum(values) / len(values)

    @property
    def total(self) -> int:
        """Tasks with a ``result.txt``."""
        return sum(len(tasks) for tasks in self.scores.values())

    @property
    def rate(self) -> float | None:
        """OSWorld's overall rate: the mean over every task found; ``None`` when none was."""
        values = [score for tasks in self.scores.values() for score in tasks.values()]
        return sum(values) / len(values) if values else None


def _read_score(path: Path) -> float | None:
    """``result.txt``'s number; ``None`` (skipped, and said so) when it holds none."""
    try:
        return float(path.read_text(encoding="utf-8").strip())
    except ValueError:
        return None


def read_tree(model_dir: Path, target: str, run: int | None = None) -> TreeResult:
    """The scores under ``<action_space>/<observation_type>/<model>``, as ``show_result.py`` reads them."""
    scores: dict[str, dict[str, float]] = {}
    for domain in sorted(p for p in model_dir.iterdir() if p.is_dir()):
        for task in sorted(p for p in domain.iterdir() if p.is_dir()):
            result = task / RESULT
            value = _read_score(result) if result.is_file() else None
            if value is not None:
                scores.setdefault(domain.name, {})[task.name] = value
    return TreeResult(target, run, scores)


def find_trees(result_dir: str | Path) -> list[TreeResult]:
    """Every ``<action_space>/<observation_type>/<model>`` tree of an OSWorld ``result_dir``.

    A folder of exported runs (``run<r>/`` children, :func:`export_osworld`) gives the trees of
    each run, named ``run<r>/<action_space>/<obs>/<model>``.
    """
    result_dir = Path(result_dir)
    runs = sorted(
        (int(p.name[3:]), p) for p in result_dir.glob("run*") if p.is_dir() and p.name[3:].isdigit()
    )
    roots: list[tuple[int | None, Path]] = [*runs] if runs else [(None, result_dir)]
    trees = []
    for run, root in roots:
        for model_dir in sorted(p for p in root.glob("*/*/*") if p.is_dir()):
            trees.append(read_tree(model_dir, model_dir.relative_to(root).as_posix(), run))
    return trees


def trees_from_run(run_dir: str | Path, target: str = "records") -> list[TreeResult]:
    """A run directory's scored episodes as trees, one per run index: the same numbers, no export."""
    by_run: dict[int, dict[str, dict[str, float]]] = {}
    for record in iter_episodes(run_dir):
        score = record.end.get("score")
        if score is not None:
            domain = str(record.header.get("domain") or "unknown")
            by_run.setdefault(record.run, {}).setdefault(domain, {})[record.task_id] = float(score)
    return [TreeResult(target, run, scores) for run, scores in sorted(by_run.items())]


def mean_over_runs(trees: Sequence[TreeResult]) -> Estimate | None:
    """Mean ± SE over the runs of one target (per-run mean first, as Table 2's accuracy)."""
    episodes = [
        EpisodeStats(task, domain, run, score)
        for run, tree in enumerate(trees)
        for domain, tasks in tree.scores.items()
        for task, score in tasks.items()
    ]
    return metrics.accuracy(episodes)


def format_summary(trees: Sequence[TreeResult]) -> str:
    """One screen: per tree, ``show_result.py``'s lines (per domain Runned and Success Rate, then overall)."""
    lines = []
    for tree in trees:
        lines.append(f"== {tree.name}")
        for domain in sorted(tree.scores):
            rate = 100 * tree.domain_rate(domain)
            lines.append(f"Domain: {domain}  Runned: {len(tree.scores[domain])}  Success Rate: {rate:.2f} %")
        if tree.rate is None:
            lines.append("no result yet")
            continue
        found = sum(s for tasks in tree.scores.values() for s in tasks.values())
        lines.append(
            f"Runned: {tree.total}  Current Success Rate: {100 * tree.rate:.2f} %  {found:.2f} / {tree.total}"
        )
    targets: dict[str, list[TreeResult]] = {}
    for tree in trees:
        if tree.run is not None:
            targets.setdefault(tree.target, []).append(tree)
    for target, runs in targets.items():
        estimate = mean_over_runs(runs)
        if estimate is not None and len(runs) > 1:
            mean, se = 100 * estimate.mean, 100 * estimate.se
            lines.append(f"{target}: mean over {estimate.runs} runs {mean:.2f} ± {se:.2f} % (SE)")
    return "\n".join(lines) + "\n"

"""``osworld-mcp validate``: prove that each bundled task's checker discriminates.

Per task instance, on a real desktop: the GUI oracle and (where tool-reachable) the
MCP-tool oracle must score 1.0, a no-op episode (``terminate`` at once) 0.0, the
near miss < 1, and the GUI oracle repeated ``repeats`` times (the first run
included) must give identical scores. Each failed expectation is a line of
:attr:`TaskReport.problems`; the CLI exits non-zero when any task has one.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from osworld_mcp_env.errors import SetupStepError
from osworld_mcp_env.info import step_info
from osworld_mcp_env.tasks.bundled import BUNDLED_TASK_IDS, bundled_solution
from osworld_mcp_env.tasks.loader import load_task
from osworld_mcp_env.tasks.templates import DONE, TEMPLATES, instance_id, instantiate

SUITES = ("seeded", "bundled")


@dataclass(frozen=True)
class SuiteEntry:
    """One task instance to validate: its id, domain, task source and whether tools reach it."""

    task_id: str
    domain: str
    task: Any
    tool_reachable: bool


def suite_entries(suite: str, seeds: int = 1, task_ids: Sequence[str] = ()) -> list[SuiteEntry]:
    """The instances of ``suite`` (``seeded``: every template x seeds 0..seeds-1; ``bundled``).

    Args:
        suite: ``seeded`` or ``bundled``.
        seeds: Seeds per template (``seeded`` only).
        task_ids: Keep these template or task ids only (empty: all).

    Raises:
        ValueError: Unknown suite, ``seeds`` < 1, or an id not in the suite.
    """
    if suite not in SUITES:
        raise ValueError(f"Unknown suite {suite!r}. Known: {', '.join(SUITES)}.")
    if seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {seeds}.")
    if suite == "bundled":
        ids = list(BUNDLED_TASK_IDS)
        entries = [SuiteEntry(t, load_task(t).domain or "", t, t == "calc-sum-column") for t in ids]
    else:
        ids = TEMPLATES.names()
        entries = [
            SuiteEntry(
                instance_id(tid, seed), TEMPLATES.get(tid).domain, None, TEMPLATES.get(tid).tool_reachable
            )
            for tid in ids
            for seed in range(seeds)
        ]
    unknown = [t for t in task_ids if t not in ids]
    if unknown:
        raise ValueError(f"Not in suite {suite!r}: {', '.join(unknown)}. Known: {', '.join(ids)}.")
    keep = set(task_ids)
    return [e for e in entries if not keep or e.task_id.partition("@")[0] in keep]


def task_source(entry: SuiteEntry) -> Any:
    """What ``env.reset(options={"task": ...})`` gets for ``entry``."""
    if entry.task is not None:
        return entry.task
    template_id, _, seed = entry.task_id.partition("@")
    return instantiate(template_id, int(seed or 0)).task


@dataclass
class TaskReport:
    """The scores of one instance; ``None`` where the route does not apply."""

    task_id: str
    domain: str
    gui: float | None = None
    tools: float | None = None
    noop: float | None = None
    near_miss: float | None = None
    repeats: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Every expectation held."""
        return not self.problems


def run_episode(env: gym.Env, task: Any, actions: Iterable[dict[str, Any]]) -> tuple[float, str]:
    """Plays ``actions``; returns the final reward and the first error or evaluator failure ("" if none).

    A setup step that fails is this episode's problem, not the end of the whole validation.
    """
    try:
        env.reset(options={"task": task})
    except SetupStepError as exc:
        return 0.0, f"setup failed: {str(exc)[:200]}"
    for action in actions:
        _obs, reward, terminated, truncated, raw_info = env.step(action)
        info = step_info(raw_info)
        error = info.get("error")
        if error is not None:
            return float(reward), f"step error {error.get('code')}: {error.get('message', '')[:120]}"
        if terminated or truncated:
            eval_error = info.get("eval_error")
            problem = eval_error["message"] if eval_error is not None else ""
            return float(reward), f"eval error: {problem[:160]}" if problem else ""
    return 0.0, "the actions did not end the episode"


def validate_entry(env: gym.Env, entry: SuiteEntry, repeats: int = 3) -> TaskReport:
    """Runs every check of one instance (see the module docstring)."""
    started = time.perf_counter()
    report = TaskReport(entry.task_id, entry.domain)
    task = task_source(entry)

    def play(label: str, variant: str | None) -> float:
        actions = [DONE] if variant is None else bundled_solution(entry.task_id, variant)  # type: ignore[arg-type]
        score, problem = run_episode(env, task, actions)
        if problem:
            report.problems.append(f"{label}: {problem}")
        return score

    report.gui = play("gui", "oracle")
    report.repeats = [report.gui] + [play("repeat", "oracle") for _ in range(repeats - 1)]
    if entry.tool_reachable:
        report.tools = play("tools", "tools")
    report.noop = play("noop", None)
    report.near_miss = play("near_miss", "wrong")
    checks: list[tuple[bool, str]] = [
        (report.gui == 1.0, f"GUI oracle scored {report.gui}"),
        (not entry.tool_reachable or report.tools == 1.0, f"tool oracle scored {report.tools}"),
        (report.noop == 0.0, f"no-op scored {report.noop}"),
        (report.near_miss is not None and report.near_miss < 1.0, f"near miss scored {report.near_miss}"),
        (len(set(report.repeats)) == 1, f"repeats differ: {report.repeats}"),
    ]
    report.problems += [message for held, message in checks if not held]
    report.seconds = time.perf_counter() - started
    return report


def validate(
    entries: Sequence[SuiteEntry],
    env_factory: Callable[[], gym.Env],
    repeats: int = 3,
    on_report: Callable[[TaskReport], None] = lambda r: None,
) -> list[TaskReport]:
    """Validates ``entries`` one after another on one env (built by ``env_factory``, closed after)."""
    env = env_factory()
    reports = []
    try:
        for entry in entries:
            report = validate_entry(env, entry, repeats)
            on_report(report)
            reports.append(report)
    finally:
        env.close()
    return reports


def _fmt(score: float | None) -> str:
    return "-" if score is None else f"{score:.2f}"


def table_row(r: TaskReport) -> str:
    """One Markdown table row."""
    repeats = "/".join(_fmt(s) for s in r.repeats)
    status = "ok" if r.ok else "FAIL: " + "; ".join(r.problems)
    cells = [r.task_id, r.domain, _fmt(r.gui), _fmt(r.tools), _fmt(r.noop), _fmt(r.near_miss), repeats]
    return "| " + " | ".join([*cells, f"{r.seconds:.0f}", status]) + " |"


TABLE_HEADER = (
    "| task | domain | gui | tools | no-op | near miss | repeats | s | status |\n"
    "|---|---|---:|---:|---:|---:|---|---:|---|"
)


def summary(reports: Sequence[TaskReport], wall_s: float) -> str:
    """The closing line: passed, failed, wall time."""
    failed = sum(not r.ok for r in reports)
    return (
        f"{len(reports) - failed}/{len(reports)} instances passed, {failed} failed, wall time {wall_s:.0f} s"
    )


def add_parser(sub: Any) -> None:
    """Adds the ``validate`` subcommand to the CLI's subparsers."""
    p = sub.add_parser("validate", help="Run each bundled task's oracles, no-op and near miss on a desktop.")
    p.add_argument("--suite", choices=SUITES, default="seeded", help="Which bundled suite.")
    p.add_argument("--seeds", type=int, default=1, help="Seeds per template (0..N-1).")
    p.add_argument("--tasks", nargs="*", default=(), help="Template ids to keep (default: all).")
    p.add_argument("--repeats", type=int, default=3, help="GUI oracle runs whose scores must agree.")


def main(args: argparse.Namespace) -> int:
    """Runs the validation and prints the table; 1 when any instance fails, 2 on bad arguments."""
    try:
        entries = suite_entries(args.suite, args.seeds, args.tasks)
    except ValueError as exc:
        print(f"osworld-mcp validate: {exc}")
        return 2
    started = time.perf_counter()
    print(TABLE_HEADER, flush=True)
    reports = validate(
        entries,
        lambda: gym.make("osworld_mcp_env:OSWorldMCP-v0", record_timings=False),
        args.repeats,
        lambda r: print(table_row(r), flush=True),
    )
    print(summary(reports, time.perf_counter() - started))
    return 0 if all(r.ok for r in reports) else 1

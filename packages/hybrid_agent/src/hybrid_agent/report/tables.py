"""The study's Table 2 (accuracy and tokens per configuration) and Table 3 (behaviour), as Markdown and CSV.

Rows are configurations (run directories), so several runs read side by side.
Accuracy cells are ``mean ± SE`` in percent over runs; a configuration whose
overall accuracy differs significantly (|delta| > 2 SE) from the first row is
marked ``*``. Accuracy leaves errored episodes out, so Table 2 says what it
covers: ``tasks scored`` and ``episodes scored`` out of the suite's, and a
domain cell adds ``(scored/tasks)`` when some of its tasks have no scored
episode; :func:`headline` names those tasks. Token counts marked ``~`` are
estimates (scripted policy).

The USD columns price the run's model (:mod:`hybrid_agent.cost`): ``n/a`` when the
price table has no entry for it (never a made-up 0), ``≥`` when some steps had no
token counts (a lower bound), ``~`` when the counts were estimates.

Table 3 reports false success twice: ``false success (all) %`` is the study's
(over every scored episode), ``false success (claims) %`` is over voluntary
terminations. ``ACS (successful)`` is OSWorld-MCP's, over successful episodes
only; ``avg steps (all tasks)``, ``CLI step share %`` and ``CLI error %`` are the
GUI+CLI study's (HybridCUA), over every scored episode. ``reachable by`` says
which definition of tool-reachable the reachable adoption used; where a task
annotation and the shown tools disagree in any row, ``adoption (tools shown) %``
gives the other one.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from hybrid_agent import metrics
from hybrid_agent.cost import RunCost
from hybrid_agent.metrics import Channel, Coverage, Estimate
from hybrid_agent.report.summary import RunSummary, channel_behaviour

Row = dict[str, str]
# The channels of the channel table, in its column order (an unattributed reply counts in none).
CHANNEL_COLUMNS = (Channel.GUI, Channel.AX, Channel.MCP, Channel.BASH)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _estimate(value: Estimate | None) -> str:
    return "-" if value is None else f"{100 * value.mean:.1f} ± {100 * value.se:.1f}"


def _k(value: float | None, estimated: bool) -> str:
    return "-" if value is None else f"{'~' * estimated}{value / 1000:.1f}"


def _usd(value: float | None, cost: RunCost | None) -> str:
    if value is None or cost is None:
        return "n/a"
    mark = "≥" if cost.uncounted else "~" if cost.estimated else ""
    return f"{mark}{value:.4f}"


def _domain_cell(value: Estimate | None, cover: Coverage | None) -> str:
    if cover is None or cover.scored_tasks == cover.tasks:
        return _estimate(value)
    return f"{_estimate(value)} ({cover.scored_tasks}/{cover.tasks})"


def _unscored(cover: Coverage, limit: int = 10) -> str:
    names = []
    for task in cover.unscored[:limit]:
        why = sorted(set(task.errors)) + (["no record"] if task.missing else [])
        names.append(f"{task.task_id} ({', '.join(why)})")
    more = len(cover.unscored) - limit
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def headline(run: RunSummary) -> str:
    """One line saying what the accuracy covers.

    ``accuracy 41.2 ± 3.0 % over 17 of 20 tasks (85 of 100 episodes); 3 not scored: a (env_error),
    b (no record), ...``: a task is not scored when every run errored or was never run; the
    first ten are named.
    """
    cover = run.coverage
    acc = "-" if run.accuracy is None else f"{_estimate(run.accuracy)} %"
    text = f"{run.label}: accuracy {acc} over {cover.scored_tasks} of {cover.tasks} tasks"
    text += f" ({cover.scored_episodes} of {cover.episodes} episodes)"
    if cover.unscored:
        text += f"; {len(cover.unscored)} not scored: {_unscored(cover)}"
    if run.rerun_errors:
        text += f"; tries rerun after an error: {sum(run.rerun_errors.values())}"
    if run.stop:
        text += (
            f"; stopped early ({run.stop.get('reason')}: {run.stop.get('spent_usd', 0):.4f} of "
            f"{run.stop.get('budget_usd')} USD spent, {run.stop.get('not_run')} episodes not run)"
        )
    return text if run.has_suite else text + "; no suite.json, tasks never run are not counted"


def table2(runs: Sequence[RunSummary]) -> list[Row]:
    """Per-domain accuracy and the token block, one row per configuration."""
    domains = sorted({d for run in runs for d in run.by_domain})
    base = runs[0].accuracy if runs else None
    rows = []
    for run in runs:
        tokens = run.tokens
        est = run.tokens_estimated
        mark = (
            " *"
            if base and run.accuracy and run is not runs[0] and metrics.significant(base, run.accuracy)
            else ""
        )
        cover = run.coverage
        row: Row = {"config": run.label}
        row.update(
            {f"{d} acc %": _domain_cell(run.by_domain.get(d), run.domain_coverage.get(d)) for d in domains}
        )
        row["overall acc %"] = _estimate(run.accuracy) + mark
        row["runs"] = str(run.accuracy.runs if run.accuracy else 0)
        row["tasks scored"] = f"{cover.scored_tasks}/{cover.tasks}"
        row["episodes scored"] = f"{cover.scored_episodes}/{cover.episodes}"
        row["input/task K"] = _k(tokens.input_per_task if tokens else None, est)
        row["peak p95 K"] = _k(tokens.peak_p95 if tokens else None, est)
        row["output/task K"] = _k(tokens.output_per_task if tokens else None, est)
        per_point = metrics.tokens_per_accuracy_point(tokens.input_per_task, run.accuracy) if tokens else None
        row["input per 1% acc K"] = _k(per_point, est)
        cost = run.cost
        row["USD/episode"] = _usd(cost.per_episode if cost else None, cost)
        row["USD/run"] = _usd(cost.per_run if cost else None, cost)
        row["USD total"] = _usd(cost.total if cost else None, cost)
        row["errors"] = str(sum(run.errors.values()))
        rows.append(row)
    return rows


def table3(runs: Sequence[RunSummary]) -> list[Row]:
    """Behavioural diagnostics, one row per configuration."""
    both = any(run.behaviour.reachability_disagreements for run in runs)
    rows = []
    for run in runs:
        b = run.behaviour
        row: Row = {
            "config": run.label,
            "episodes": str(b.episodes),
            "adoption %": _pct(b.adoption),
            "adoption (reachable) %": _pct(b.adoption_reachable),
            "reachable by": b.reachable_by,
        }
        if both:
            row["adoption (tools shown) %"] = _pct(b.adoption_reachable_shown)
        row.update(
            {
                "TIR_real %": _pct(b.tir_real),
                "TIR_any %": _pct(b.tir_any),
                "OSWorld-MCP TIR %": _pct(b.osworld_mcp_tir),
                "ACS (successful)": "-" if b.acs is None else f"{b.acs:.1f}",
                "false success (all) %": _pct(b.false_success_all),
                "false success (claims) %": _pct(b.false_success_claims),
                "hallucinated names": str(b.hallucinated_calls),
                "hallucinated names %": _pct(b.hallucinated_rate),
                "malformed %": _pct(b.malformed_rate),
                "hit cap %": _pct(b.hit_cap_rate),
            }
        )
        row.update(interface_columns(run))
        row["errors"] = ", ".join(f"{k}: {v}" for k, v in run.errors.items()) or "0"
        rows.append(row)
    return rows


def interface_columns(run: RunSummary) -> Row:
    """The GUI+CLI study's (HybridCUA's) Table 3 columns: steps over all tasks, CLI share and errors.

    Per-domain values follow in ``domain: value`` form where the run has more than one domain.
    """
    use = run.interfaces
    if use is None:
        return {}

    def steps(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    row: Row = {
        "avg steps (all tasks)": steps(use.average_steps),
        "CLI step share %": _pct(use.cli_step_share),
        "CLI error %": _pct(use.cli_error_rate),
    }
    if len(use.by_domain) > 1:
        for key, name, show in (
            ("average_steps", "avg steps by domain", steps),
            ("cli_step_share", "CLI step share by domain %", _pct),
            ("cli_error_rate", "CLI error by domain %", _pct),
        ):
            row[name] = "; ".join(f"{d}: {show(v[key])}" for d, v in use.by_domain.items())
    return row


def table3_channels(runs: Sequence[RunSummary]) -> list[Row]:
    """Hybrid Computer Use's Table 3 rows, one row per configuration.

    Malformed calls and calls per channel, repeated schema failures, ``ax.act`` batch
    length and separate observations (:class:`~hybrid_agent.report.summary.ChannelBehaviour`).
    """
    rows = []
    for run in runs:
        c = channel_behaviour(run.episodes)
        row: Row = {"config": run.label, "episodes": str(len(run.episodes))}
        for channel in CHANNEL_COLUMNS:
            rate, calls = c.malformed_by_channel.get(channel), c.calls_per_channel.get(channel)
            row[f"malformed {channel} %"] = _pct(rate)
            row[f"{channel} calls / episode"] = "-" if calls is None else f"{calls:.1f}"
        row["2+ consecutive schema failures %"] = _pct(c.consecutive_schema_failures)
        row["ax.act batch length"] = "-" if c.mean_batch_length is None else f"{c.mean_batch_length:.1f}"
        row["observations / call %"] = _pct(c.observations_per_step)
        row["GUI calls changing windows %"] = _pct(c.gui_window_changes)
        rows.append(row)
    return rows


def to_markdown(rows: Sequence[Row]) -> str:
    """A GitHub Markdown table (text columns left, numbers right)."""
    if not rows:
        return "(no runs)\n"
    headers = list(rows[0])
    align = ["---" if h in ("config", "errors", "reachable by") else "---:" for h in headers]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(row.get(h, "") for h in headers) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def write_csv(rows: Sequence[Row], path: str | Path) -> None:
    """Writes the rows as CSV (header from the first row)."""
    with Path(path).open("w", newline="", encoding="utf-8") as f:
        if rows:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)

"""The study's Table 2 (accuracy and tokens per configuration) and Table 3 (behaviour), as Markdown and CSV.

Rows are configurations (run directories), so several runs read side by side.
Accuracy cells are ``mean ± SE`` in percent over runs; a configuration whose
overall accuracy differs significantly (|delta| > 2 SE) from the first row is
marked ``*``. Token counts marked ``~`` are estimates (scripted policy).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from hybrid_agent import metrics
from hybrid_agent.metrics import Estimate
from hybrid_agent.report.summary import RunSummary

Row = dict[str, str]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _estimate(value: Estimate | None) -> str:
    return "-" if value is None else f"{100 * value.mean:.1f} ± {100 * value.se:.1f}"


def _k(value: float | None, estimated: bool) -> str:
    return "-" if value is None else f"{'~' * estimated}{value / 1000:.1f}"


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
        row: Row = {"config": run.label}
        row.update({f"{d} acc %": _estimate(run.by_domain.get(d)) for d in domains})
        row["overall acc %"] = _estimate(run.accuracy) + mark
        row["runs"] = str(run.accuracy.runs if run.accuracy else 0)
        row["input/task K"] = _k(tokens.input_per_task if tokens else None, est)
        row["peak p95 K"] = _k(tokens.peak_p95 if tokens else None, est)
        row["output/task K"] = _k(tokens.output_per_task if tokens else None, est)
        per_point = metrics.tokens_per_accuracy_point(tokens.input_per_task, run.accuracy) if tokens else None
        row["input per 1% acc K"] = _k(per_point, est)
        row["errors"] = str(sum(run.errors.values()))
        rows.append(row)
    return rows


def table3(runs: Sequence[RunSummary]) -> list[Row]:
    """Behavioural diagnostics, one row per configuration."""
    rows = []
    for run in runs:
        eps = run.episodes
        acs = metrics.acs(eps)
        rows.append(
            {
                "config": run.label,
                "episodes": str(len(eps)),
                "adoption %": _pct(metrics.adoption(eps)),
                "adoption (reachable) %": _pct(metrics.adoption(eps, reachable_only=True)),
                "TIR_real %": _pct(metrics.tir_real(eps)),
                "TIR_any %": _pct(metrics.tir_any(eps)),
                "OSWorld-MCP TIR %": _pct(metrics.osworld_mcp_tir(eps)),
                "ACS": "-" if acs is None else f"{acs:.1f}",
                "false success %": _pct(metrics.false_success_rate(eps)),
                "hallucinated names %": _pct(metrics.hallucinated_tool_rate(eps)),
                "malformed %": _pct(metrics.malformed_rate(eps)),
                "hit cap %": _pct(metrics.hit_cap_rate(eps)),
                "errors": ", ".join(f"{k}: {v}" for k, v in sorted(run.errors.items())) or "0",
            }
        )
    return rows


def to_markdown(rows: Sequence[Row]) -> str:
    """A GitHub Markdown table (text columns left, numbers right)."""
    if not rows:
        return "(no runs)\n"
    headers = list(rows[0])
    align = ["---" if h in ("config", "errors") else "---:" for h in headers]
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

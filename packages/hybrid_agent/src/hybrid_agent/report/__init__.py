"""Reports over run directories: Tables 2 and 3 (Markdown + CSV), ``summary.json``, the plot, the viewer."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hybrid_agent.cost import PriceTable
from hybrid_agent.errors import ConfigError
from hybrid_agent.report.plot import plot_accuracy_vs_tokens
from hybrid_agent.report.summary import Behaviour, RunSummary, summarize_run, summary_json
from hybrid_agent.report.tables import headline, table2, table3, table3_channels, to_markdown, write_csv
from hybrid_agent.report.viewer import render_viewer, write_viewer


@dataclass(frozen=True)
class Report:
    """What :func:`write_report` produced: the two Markdown tables, the headlines and the files written.

    Attributes:
        headlines: One line per run directory saying what its accuracy covers
            (:func:`headline`); print it beside Table 2.
    """

    table2: str
    table3: str
    headlines: tuple[str, ...]
    files: tuple[Path, ...]


def write_report(run_dirs: Sequence[str | Path], out: str | Path, prices: PriceTable | None = None) -> Report:
    """Summarises run directories side by side into ``out``.

    Writes ``table2.md/.csv``, ``table3.md/.csv``, ``table3_channels.md/.csv`` (Hybrid
    Computer Use's rows: malformed calls per channel, batches, observations),
    ``summary.json`` (every number of each run directory, coverage and headline included),
    ``accuracy_vs_tokens.png`` (when matplotlib is installed) and a ``viewer.html`` in each run directory.
    ``prices`` (default: the bundled table) prices each run's model for Table 2's USD columns.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    runs = [summarize_run(d, prices) for d in run_dirs]
    rows2, rows3 = table2(runs), table3(runs)
    md2, md3 = to_markdown(rows2), to_markdown(rows3)
    files = []
    rows_channels = table3_channels(runs)
    tables = [("table2", rows2, md2), ("table3", rows3, md3)]
    tables.append(("table3_channels", rows_channels, to_markdown(rows_channels)))
    for name, rows, md in tables:
        (out / f"{name}.md").write_text(md, encoding="utf-8")
        write_csv(rows, out / f"{name}.csv")
        files += [out / f"{name}.md", out / f"{name}.csv"]
    headlines = tuple(headline(run) for run in runs)
    document = {
        "runs": [{**summary_json(run), "headline": line} for run, line in zip(runs, headlines, strict=True)]
    }
    (out / "summary.json").write_text(json.dumps(document, indent=1, ensure_ascii=False), encoding="utf-8")
    files.append(out / "summary.json")
    with contextlib.suppress(ConfigError):  # matplotlib is an optional extra; the tables stand alone
        files.append(plot_accuracy_vs_tokens(runs, out / "accuracy_vs_tokens.png"))
    files += [write_viewer(d) for d in run_dirs]
    return Report(md2, md3, headlines, tuple(files))


__all__ = [
    "Behaviour",
    "Report",
    "RunSummary",
    "headline",
    "plot_accuracy_vs_tokens",
    "render_viewer",
    "summarize_run",
    "summary_json",
    "table2",
    "table3",
    "table3_channels",
    "to_markdown",
    "write_csv",
    "write_report",
    "write_viewer",
]

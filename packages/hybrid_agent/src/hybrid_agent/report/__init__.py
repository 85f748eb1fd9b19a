"""Reports over run directories: Tables 2 and 3 (Markdown + CSV), the accuracy/tokens plot, the viewer."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hybrid_agent.errors import ConfigError
from hybrid_agent.report.plot import plot_accuracy_vs_tokens
from hybrid_agent.report.summary import RunSummary, summarize_run
from hybrid_agent.report.tables import table2, table3, to_markdown, write_csv
from hybrid_agent.report.viewer import render_viewer, write_viewer


@dataclass(frozen=True)
class Report:
    """What :func:`write_report` produced: the two Markdown tables and the files written."""

    table2: str
    table3: str
    files: tuple[Path, ...]


def write_report(run_dirs: Sequence[str | Path], out: str | Path) -> Report:
    """Summarises run directories side by side into ``out``.

    Writes ``table2.md/.csv``, ``table3.md/.csv``, ``accuracy_vs_tokens.png`` (when
    matplotlib is installed) and a ``viewer.html`` in each run directory.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    runs = [summarize_run(d) for d in run_dirs]
    rows2, rows3 = table2(runs), table3(runs)
    md2, md3 = to_markdown(rows2), to_markdown(rows3)
    files = []
    for name, rows, md in (("table2", rows2, md2), ("table3", rows3, md3)):
        (out / f"{name}.md").write_text(md, encoding="utf-8")
        write_csv(rows, out / f"{name}.csv")
        files += [out / f"{name}.md", out / f"{name}.csv"]
    with contextlib.suppress(ConfigError):  # matplotlib is an optional extra; the tables stand alone
        files.append(plot_accuracy_vs_tokens(runs, out / "accuracy_vs_tokens.png"))
    files += [write_viewer(d) for d in run_dirs]
    return Report(md2, md3, tuple(files))


__all__ = [
    "Report",
    "RunSummary",
    "plot_accuracy_vs_tokens",
    "render_viewer",
    "summarize_run",
    "table2",
    "table3",
    "to_markdown",
    "write_csv",
    "write_report",
    "write_viewer",
]

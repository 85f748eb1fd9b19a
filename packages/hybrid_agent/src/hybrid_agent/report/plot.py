"""Accuracy against input tokens per task, one point per configuration (matplotlib, optional extra)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hybrid_agent.errors import ConfigError
from hybrid_agent.report.summary import RunSummary


def plot_accuracy_vs_tokens(runs: Sequence[RunSummary], path: str | Path) -> Path:
    """Draws accuracy (%, ± 1 SE) against mean input tokens per task (K) and saves a PNG.

    Raises:
        ConfigError: matplotlib is not installed (``pip install hybrid-agent[report]``).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ConfigError("The plot needs matplotlib: pip install 'hybrid-agent[report]'.") from exc
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    for run in runs:
        if run.accuracy is None or run.tokens is None:
            continue
        x, y, err = run.tokens.input_per_task / 1000, 100 * run.accuracy.mean, 100 * run.accuracy.se
        ax.errorbar([x], [y], yerr=[err], fmt="o", capsize=3)
        ax.annotate(run.label, (x, y), textcoords="offset points", xytext=(5, 5), fontsize=7)
    estimated = any(run.tokens_estimated for run in runs)
    ax.set_xlabel("input tokens per task (K)" + (", estimated" if estimated else ""))
    ax.set_ylabel("accuracy (%) ± SE")
    ax.set_title("Accuracy vs input tokens")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path

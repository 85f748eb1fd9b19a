"""How getters and metrics register: ``@register_getter("vm_file")``, ``@register_metric(...)``.

The registries themselves (:data:`GETTERS`, :data:`METRICS`) and the entry
signatures live in :mod:`osworld_mcp_env.tasks.checks`, beside the task model
whose names they check; this module is the evaluators' side of them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from osworld_mcp_env.tasks.checks import GETTERS, METRICS, GetterFn, MetricEntry, MetricFn, OptionsCheck


class ZeroScore(Exception):
    """Raised by a metric whose OSWorld counterpart crashes on this input (or returns 0 by accident).

    OSWorld's evaluation then stops or scores 0; here the check scores 0 and the
    message becomes the check's ``reason``, so a report can tell it from a plain miss.
    """


def register_getter(name: str) -> Callable[[GetterFn], GetterFn]:
    """Registers a getter type: ``@register_getter("vm_file")``."""
    return GETTERS.register(name)


def register_metric(
    name: str, *, options: Collection[str] | None = (), check_options: OptionsCheck | None = None
) -> Callable[[MetricFn], MetricFn]:
    """Registers a metric: ``@register_metric("compare_docx_files", options=("ignore_case", ...))``.

    Args:
        name: The OSWorld metric name.
        options: The option names the metric implements (default: none); None accepts
            any name, for metrics whose ``check_options`` validates them.
        check_options: Optional validator of the check's options, run when a task loads.
    """
    if callable(name):
        METRICS.register(name)  # raises the "needs a name" error

    def wrap(fn: MetricFn) -> MetricFn:
        METRICS.add(name, MetricEntry(fn, None if options is None else frozenset(options), check_options))
        return fn

    return wrap


__all__ = [
    "GETTERS",
    "METRICS",
    "GetterFn",
    "MetricEntry",
    "MetricFn",
    "OptionsCheck",
    "ZeroScore",
    "register_getter",
    "register_metric",
]

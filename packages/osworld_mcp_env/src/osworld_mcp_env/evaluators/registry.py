"""Registries of getters and metrics, keyed by OSWorld's names.

A getter is ``fn(desktop, context, config) -> value`` where ``config`` is the
getter's JSON minus ``type``. A metric is ``fn(result, expected, **options) -> float``
(``expected`` is None when the check has no expected getter). Every entry of a
family shares that one signature, so :func:`~osworld_mcp_env.evaluators.evaluate.evaluate`
never branches on a name.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from osworld_mcp_env.backends.base import Desktop
from osworld_mcp_env.tasks.context import TaskContext
from osworld_mcp_env.tasks.registry import Registry


class GetterFn(Protocol):
    """Fetches a value (usually a host file path, or text) for a metric."""

    def __call__(self, desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> Any:
        """Returns the value; None means "the agent's artefact does not exist" (scores 0)."""
        ...


MetricFn = Callable[..., float]
"""``fn(result, expected, **options) -> float`` in [0, 1]; a None result scores 0."""

OptionsCheck = Callable[[Mapping[str, Any]], list[str]]
"""Returns the problems of a check's ``options`` (empty when fine); run at task load."""


class ZeroScore(Exception):
    """Raised by a metric whose OSWorld counterpart crashes on this input (or returns 0 by accident).

    OSWorld's evaluation then stops or scores 0; here the check scores 0 and the
    message becomes the check's ``reason``, so a report can tell it from a plain miss.
    """


@dataclass(frozen=True)
class MetricEntry:
    """A registered metric, the option names it implements and its load-time options check.

    Attributes:
        fn: The metric.
        options: Option names the metric implements; None when it takes any (checked by
            ``check_options`` instead). A task that passes another name fails at load.
        check_options: Optional deeper validator of the options.
    """

    fn: MetricFn
    options: frozenset[str] | None = None
    check_options: OptionsCheck | None = None

    def problems(self, options: Mapping[str, Any]) -> list[str]:
        """Why ``options`` cannot run as OSWorld means them (empty when they can)."""
        out = []
        if self.options is not None:
            out += [
                f"option {k!r} is not implemented (known: {sorted(self.options) or 'none'})."
                for k in options
                if k not in self.options
            ]
        if self.check_options is not None:
            out += self.check_options(options)
        return out


GETTERS: Registry[GetterFn] = Registry("getter")
METRICS: Registry[MetricEntry] = Registry("metric")


def register_getter(name: str) -> Callable[[GetterFn], GetterFn]:
    """Registers a getter type: ``@register_getter("vm_file")``."""
    return GETTERS.decorator(name)


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

    def wrap(fn: MetricFn) -> MetricFn:
        METRICS.add(name, MetricEntry(fn, None if options is None else frozenset(options), check_options))
        return fn

    if callable(name):
        return METRICS.decorator(name)  # raises the "needs a name" error
    return wrap

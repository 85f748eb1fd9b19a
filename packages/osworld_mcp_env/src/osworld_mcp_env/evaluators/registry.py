"""Registries of getters and metrics, keyed by OSWorld's names.

A getter is ``fn(desktop, context, config) -> value`` where ``config`` is the
getter's JSON minus ``type``. A metric is ``fn(result, expected, **options) -> float``
(``expected`` is None when the check has no expected getter). Every entry of a
family shares that one signature, so :func:`~osworld_mcp_env.evaluators.evaluate.evaluate`
never branches on a name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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


@dataclass(frozen=True)
class MetricEntry:
    """A registered metric and its load-time options check."""

    fn: MetricFn
    check_options: OptionsCheck | None = None


GETTERS: Registry[GetterFn] = Registry("getter")
METRICS: Registry[MetricEntry] = Registry("metric")


def register_getter(name: str) -> Callable[[GetterFn], GetterFn]:
    """Registers a getter type: ``@register_getter("vm_file")``."""
    return GETTERS.decorator(name)


def register_metric(
    name: str, *, check_options: OptionsCheck | None = None
) -> Callable[[MetricFn], MetricFn]:
    """Registers a metric: ``@register_metric("compare_table", check_options=...)``.

    Args:
        name: The OSWorld metric name.
        check_options: Optional validator of the check's options, run when a task loads.
    """

    def wrap(fn: MetricFn) -> MetricFn:
        METRICS.add(name, MetricEntry(fn, check_options))
        return fn

    if callable(name):
        return METRICS.decorator(name)  # raises the "needs a name" error
    return wrap

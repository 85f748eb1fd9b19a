"""The names a task's evaluator may use: getter types and metric names, with their signatures.

The task model declares these families and the loader checks a task's names
against them; :mod:`osworld_mcp_env.evaluators` implements and registers the
entries. The registries name that package as their provider, imported on the
first lookup, so the loader never imports the evaluators (which import the task
types): the dependency runs one way, from evaluators to tasks.

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
from osworld_mcp_env.registry import Registry
from osworld_mcp_env.tasks.context import TaskContext

_PROVIDER = "osworld_mcp_env.evaluators"


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


GETTERS: Registry[GetterFn] = Registry("getter", providers=(_PROVIDER,))
METRICS: Registry[MetricEntry] = Registry("metric", providers=(_PROVIDER,))

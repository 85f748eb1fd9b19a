"""Getters and metrics with OSWorld's names, and the evaluator that runs them.

Importing this package registers every built-in getter and metric.
"""

from osworld_mcp_env.evaluators import getters, metrics
from osworld_mcp_env.evaluators.evaluate import CheckOutcome, Evaluation, evaluate
from osworld_mcp_env.evaluators.registry import (
    GETTERS,
    METRICS,
    GetterFn,
    MetricEntry,
    MetricFn,
    ZeroScore,
    register_getter,
    register_metric,
)

__all__ = [
    "GETTERS",
    "METRICS",
    "CheckOutcome",
    "Evaluation",
    "GetterFn",
    "MetricEntry",
    "MetricFn",
    "ZeroScore",
    "evaluate",
    "getters",
    "metrics",
    "register_getter",
    "register_metric",
]

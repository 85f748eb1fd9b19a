"""Reading a check's ``rules`` option, shared by the metrics that take one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from osworld_mcp_env.errors import EvaluationError


def rule_value(rules: Any, key: str, metric: str) -> Any:
    """The task's rule ``key``; a task without it is broken (OSWorld raises), not a zero.

    Raises:
        EvaluationError: ``rules`` is not a mapping or has no ``key``.
    """
    if not isinstance(rules, Mapping) or key not in rules:
        raise EvaluationError(f"{metric}: the rules have no {key!r}, got {rules!r:.200}.")
    return rules[key]

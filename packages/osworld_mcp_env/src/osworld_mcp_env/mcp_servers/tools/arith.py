"""Arithmetic on untrusted expressions in bounded time (the evaluator of ``os.calculator``).

Python's integers are unbounded, so ``((10**1000)**1000)**1000`` is a valid
expression that would hold a core (and the GIL: every other tool and the host's
pings wait) for hours. Every way an expression can grow its cost is bounded
before any work is done:

- its text (``calculator_max_chars``) and nesting (``calculator_max_depth``), so
  parsing and the recursive walk stay small;
- the size of each integer result, estimated from the operands *before* a
  multiplication or a power is computed (``calculator_max_digits``), so no single
  operation is large; a float that overflows is refused too;
- a wall-clock guard between operations (``calculator_timeout_s``) for anything
  these bounds miss.
"""

from __future__ import annotations

import ast
import math
import operator
import time
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from osworld_mcp_env.mcp_host.limits import ToolLimits

Number = int | float

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}


def evaluate(expression: str, limits: ToolLimits) -> Number:
    """Evaluates ``+ - * / // % **`` over numbers, within ``limits``.

    Raises:
        ToolError: For anything but arithmetic on numbers, for an expression or a
            result over the limits, for division by zero and for results that are
            not finite real numbers; the message names the limit.
    """
    if len(expression) > limits.calculator_max_chars:
        raise ToolError(
            f"The expression has {len(expression)} characters; the limit is {limits.calculator_max_chars}."
        )
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        raise ToolError(f"Not an arithmetic expression: {expression!r}") from exc
    _check_depth(tree.body, limits.calculator_max_depth)
    walker = _Walker(limits)
    try:
        value = walker.eval(tree.body)
    except ZeroDivisionError as exc:
        raise ToolError("Division by zero") from exc
    except OverflowError as exc:
        raise ToolError(f"The result is too large for a floating-point number ({exc})") from exc
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError(f"The result is not a finite number ({value})")
    return value


def _check_depth(root: ast.AST, max_depth: int) -> None:
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            raise ToolError(f"The expression nests deeper than {max_depth} levels.")
        stack += [(child, depth + 1) for child in ast.iter_child_nodes(node)]


class _Walker:
    """Evaluates an expression tree, refusing any operation whose result would be too big."""

    def __init__(self, limits: ToolLimits) -> None:
        self.max_digits = limits.calculator_max_digits
        self.max_bits = math.ceil(limits.calculator_max_digits * math.log2(10))
        self.deadline = time.monotonic() + limits.calculator_timeout_s

    def eval(self, node: ast.AST) -> Number:
        if time.monotonic() > self.deadline:
            raise ToolError("The expression took too long to evaluate.")
        value = node.value if isinstance(node, ast.Constant) else None
        if isinstance(value, int | float) and not isinstance(value, bool):  # True is no number here
            return self._checked(value)
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](self.eval(node.operand))
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = self.eval(node.left), self.eval(node.right)
            self._check_cost(node.op, left, right)
            result = _BINARY[type(node.op)](left, right)
            if isinstance(result, complex):
                raise ToolError("The result is not a real number (a negative number to a fractional power).")
            return self._checked(result)
        raise ToolError(f"Only numbers and + - * / // % ** are allowed, found {type(node).__name__}")

    def _check_cost(self, op: ast.operator, left: Number, right: Number) -> None:
        """Refuses an integer product or power whose result would exceed the digit limit."""
        if not (isinstance(left, int) and isinstance(right, int)):
            return  # float arithmetic is constant-time; overflow raises or gives inf
        if isinstance(op, ast.Mult):
            bits = left.bit_length() + right.bit_length() - 1
        elif isinstance(op, ast.Pow) and right > 0 and abs(left) > 1:
            bits = (abs(left).bit_length() - 1) * right + 1  # a lower bound of the result's size
        else:
            return
        if bits > self.max_bits:
            raise ToolError(f"The result would have more than {self.max_digits} digits.")

    def _checked(self, value: Number) -> Number:
        if isinstance(value, int) and value.bit_length() > self.max_bits:
            raise ToolError(f"The result would have more than {self.max_digits} digits.")
        return value

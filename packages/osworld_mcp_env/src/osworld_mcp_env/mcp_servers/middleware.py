"""The middleware of every namespace's server: bounded arguments in, bounded results out.

It wraps each request after the transport parsed it (stdio and streamable HTTP
alike), so one place enforces :class:`~osworld_mcp_env.mcp_host.limits.ToolLimits`
for every tool, including the SDK's own replies (``Unknown tool: <name>`` echoes
the name, a validation error its input):

- ``tools/call`` arguments larger than ``max_argument_bytes``, or not encodable as
  UTF-8 (a lone surrogate from an in-process client), are a tool error; the tool
  does not run.
- Every ``tools/call`` result (text and ``structuredContent``) and every JSON-RPC
  error message is cut to ``max_result_bytes`` by :func:`~.bounds.fit_json`, and
  scrubbed of what would fail the response's encoding.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError

from osworld_mcp_env.mcp_host.limits import ToolLimits
from osworld_mcp_env.mcp_servers.bounds import clip_text, encoded_size, fit_json

logger = logging.getLogger(__name__)

TOOLS_CALL = "tools/call"


class BoundedCalls:
    """``ServerMiddleware`` that enforces the argument and result bounds of ``limits``."""

    def __init__(self, limits: ToolLimits) -> None:
        self.limits = limits

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Refuses oversized arguments, then bounds the result or the error."""
        if ctx.method == TOOLS_CALL:
            refusal = self._refuse_arguments(ctx.params)
            if refusal is not None:
                return refusal
        try:
            result = await call_next(ctx)
        except MCPError as exc:
            raise self._bounded_error(exc) from None
        if ctx.method == TOOLS_CALL and isinstance(result, dict):
            return self._bounded_result(result)
        return result

    def _refuse_arguments(self, params: Mapping[str, Any] | None) -> dict[str, Any] | None:
        arguments = (params or {}).get("arguments")
        if arguments is None:
            return None
        try:
            size = encoded_size(arguments)
        except (UnicodeEncodeError, ValueError) as exc:
            return _tool_error(f"The arguments are not valid JSON text ({type(exc).__name__}: {exc}).")
        if size > self.limits.max_argument_bytes:
            logger.info("refused %d bytes of arguments", size)
            return _tool_error(
                f"The arguments are {size} bytes of JSON; the limit is {self.limits.max_argument_bytes}. "
                "Pass a path or a shorter value."
            )
        return None

    def _bounded_result(self, result: dict[str, Any]) -> dict[str, Any]:
        fitted, cut = fit_json(result, self.limits.max_result_bytes)
        if not isinstance(fitted, dict):  # not even the smallest cut fits: say so
            return _tool_error(fitted)
        if cut:
            logger.info("cut a tool result to %d bytes", self.limits.max_result_bytes)
        return fitted

    def _bounded_error(self, exc: MCPError) -> MCPError:
        budget = self.limits.max_result_bytes // 2
        data, _ = fit_json(exc.data, budget)
        message, _ = fit_json(clip_text(exc.message, budget), budget)
        return MCPError(code=exc.code, message=str(message), data=data)


def _tool_error(text: str) -> dict[str, Any]:
    """A ``CallToolResult`` in wire form that the model reads as a failed call."""
    return {"content": [{"type": "text", "text": text}], "isError": True}

"""One registry per namespace: typed tool functions in, an ``MCPServer`` out.

A namespace module writes each tool once, as a plain function whose first
argument is the namespace's app context (the lifespan resource) and whose other
arguments match OSWorld-MCP's parameter names::

    calc = ToolRegistry(LIBREOFFICE_CALC, CalcApp.lifespan)   # an entry of mcp_host.namespaces

    @calc.tool()
    def set_cell_value(app: CalcApp, cell: str, value: str) -> ToolOutput:
        ...

:meth:`ToolRegistry.build` turns every function into an MCP tool named
``libreoffice_calc.set_cell_value`` whose description and input schema are
OSWorld-MCP's (``catalog.py``; a namespace with no OSWorld-MCP groups, such as ``ax``, gets
the function's own docstring and type hints instead), whose arguments pydantic validates from the type
hints, and whose result is :meth:`ToolOutput.to_call_result`. The function stays a
plain function, so it is unit-testable without MCP.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import typing
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp_types import CallToolResult, ToolAnnotations

from osworld_mcp_env.mcp_host.namespaces import Namespace
from osworld_mcp_env.mcp_servers.catalog import schema_for
from osworld_mcp_env.mcp_servers.config import ServerConfig
from osworld_mcp_env.mcp_servers.effects import ToolOutput
from osworld_mcp_env.mcp_servers.middleware import BoundedCalls

logger = logging.getLogger(__name__)

AppT = TypeVar("AppT")

Lifespan = Callable[[ServerConfig], AbstractAsyncContextManager[Any]]
"""Builds a namespace's app context from the config; entered once per server run."""


@dataclass(frozen=True)
class ToolImpl:
    """One registered tool function.

    Attributes:
        method: The method name (the function's name).
        fn: The function ``(app, **arguments) -> ToolOutput``.
        read_only: Whether the tool never changes state (MCP ``readOnlyHint``).
    """

    method: str
    fn: Callable[..., ToolOutput]
    read_only: bool


class ToolRegistry(Generic[AppT]):
    """The tools of one namespace and the lifespan that provides their app context.

    Args:
        entry: The namespace's entry in :data:`~osworld_mcp_env.mcp_host.namespaces.NAMESPACE_TABLE`
            (its name is never retyped here).
        lifespan: Builds the app context the tools receive.
    """

    def __init__(self, entry: Namespace, lifespan: Lifespan) -> None:
        self.entry = entry
        self.namespace = entry.name
        self.lifespan = lifespan
        self._tools: dict[str, ToolImpl] = {}

    def tool(
        self, *, read_only: bool = False
    ) -> Callable[[Callable[..., ToolOutput]], Callable[..., ToolOutput]]:
        """Registers a tool function; returns it unchanged.

        Args:
            read_only: Whether the tool never changes state.

        Raises:
            ValueError: On a duplicate name, or when the function's arguments differ
                from OSWorld-MCP's schema (so a drift fails at import, not at call).
        """
        if callable(read_only):
            raise TypeError("Use @registry.tool() instead of @registry.tool")

        def decorator(fn: Callable[..., ToolOutput]) -> Callable[..., ToolOutput]:
            method = fn.__name__
            if method in self._tools:
                raise ValueError(f"Duplicate tool {self.namespace}.{method}")
            if self.entry.osworld_groups:
                _check_signature(self.namespace, fn)
            self._tools[method] = ToolImpl(method=method, fn=fn, read_only=read_only)
            return fn

        return decorator

    @property
    def tools(self) -> dict[str, ToolImpl]:
        """The registered tools by method name."""
        return dict(self._tools)

    def build(self, config: ServerConfig) -> MCPServer[Any]:
        """Returns an ``MCPServer`` that serves every registered tool of this namespace.

        Its middleware bounds every call's arguments and result (``config.limits``).
        """
        tools = [self._to_mcp_tool(impl) for impl in self._tools.values()]
        lifespan = self.lifespan

        def server_lifespan(_server: MCPServer[Any]) -> AbstractAsyncContextManager[Any]:
            return lifespan(config)

        return MCPServer(
            f"osworld-{self.namespace}",
            instructions=(
                f"OSWorld-MCP compatible tools for {self.namespace} ({self.entry.description}); "
                "results carry an `effect`."
            ),
            tools=tools,
            lifespan=server_lifespan,
            middleware=[BoundedCalls(config.limits)],
        )

    def _to_mcp_tool(self, impl: ToolImpl) -> Tool:
        if not self.entry.osworld_groups:
            # A namespace of our own (``ax``): the function's type hints are the schema and its
            # docstring the description, written once.
            return Tool.from_function(
                _bind(impl),
                name=f"{self.namespace}.{impl.method}",
                description=inspect.cleandoc(impl.fn.__doc__ or ""),
                context_kwarg="ctx",
                annotations=ToolAnnotations(read_only_hint=impl.read_only, open_world_hint=False),
            )
        schema = schema_for(self.namespace, impl.method)
        tool = Tool.from_function(
            _bind(impl),
            name=schema.name,
            description=schema.description,
            context_kwarg="ctx",
            annotations=ToolAnnotations(read_only_hint=impl.read_only, open_world_hint=False),
        )
        # Advertise OSWorld-MCP's schema verbatim; pydantic still validates the arguments
        # against the function's type hints when the call arrives.
        tool.parameters = schema.parameters
        return tool


def _check_signature(namespace: str, fn: Callable[..., Any]) -> None:
    schema = schema_for(namespace, fn.__name__).parameters
    params = list(inspect.signature(fn).parameters.values())[1:]
    ours = {p.name for p in params}
    theirs = set(schema.get("properties", {}))
    if ours != theirs:
        raise ValueError(
            f"{namespace}.{fn.__name__}: arguments {sorted(ours)} differ from OSWorld-MCP's {sorted(theirs)}"
        )
    required = {p.name for p in params if p.default is inspect.Parameter.empty}
    if not required <= set(schema.get("required", [])):
        raise ValueError(
            f"{namespace}.{fn.__name__}: {sorted(required)} have no default but OSWorld-MCP requires only "
            f"{sorted(schema.get('required', []))}"
        )


def _bind(impl: ToolImpl) -> Callable[..., CallToolResult]:
    """Wraps ``fn(app, **args)`` as ``wrapper(**args, ctx)`` with the signature the SDK inspects."""
    fn = impl.fn
    hints = typing.get_type_hints(fn, include_extras=True)
    params = list(inspect.signature(fn).parameters.values())[1:]
    params = [p.replace(annotation=hints.get(p.name, Any)) for p in params]
    ctx_param = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)
    returns = Annotated[CallToolResult, ToolOutput]

    def wrapper(*, ctx: Context, **arguments: Any) -> CallToolResult:
        app = ctx.request_context.lifespan_context
        guard = getattr(app, "call_guard", None) or contextlib.nullcontext()
        try:
            with guard:
                output = fn(app, **arguments)
        except ToolError:
            raise
        except Exception as exc:
            # UNO and OS errors carry the information the model needs to recover
            # (wrong sheet name, missing file); the SDK would replace the text of an
            # unexpected exception with a generic message.
            logger.info("%s.%s failed: %r", "tool", impl.method, exc)
            on_error = getattr(app, "on_error", None)
            if on_error is not None:
                on_error(exc)
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc
        return output.to_call_result()

    wrapper.__name__ = impl.method
    wrapper.__doc__ = fn.__doc__
    wrapper.__signature__ = inspect.Signature([*params, ctx_param], return_annotation=returns)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {**{p.name: p.annotation for p in params}, "ctx": Context, "return": returns}
    return wrapper

"""Model adapters: one object per model family owns its prompt, reply format, coordinates and screenshots.

Importing this package registers the built-in families (see :func:`adapter_names`);
:mod:`hybrid_agent.adapters.base` holds the protocol and the registry.
"""

from hybrid_agent.adapters import cogagent, functions, hybridcua, opencua, provider_cu, qwen, tagged, uitars
from hybrid_agent.adapters.base import (
    DEFAULT_ADAPTER,
    AdapterOptions,
    ModelAdapter,
    adapter_names,
    get_adapter,
    register_adapter,
    reply_text,
)

__all__ = [
    "DEFAULT_ADAPTER",
    "AdapterOptions",
    "ModelAdapter",
    "adapter_names",
    "cogagent",
    "functions",
    "get_adapter",
    "hybridcua",
    "opencua",
    "provider_cu",
    "qwen",
    "register_adapter",
    "reply_text",
    "tagged",
    "uitars",
]

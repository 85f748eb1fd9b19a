"""Every exception ``hybrid_agent`` raises, under one base class.

Agent mistakes (malformed model output) are never raised: the parser returns
them as :class:`hybrid_agent.parse.ParseError` values that the runner feeds back
to the model. The classes below are *wiring* mistakes: a config that names an
unknown retention rule, a tool file in an unknown format, a context that
cannot be built from the inputs given. Their messages say what was expected
and how to fix it.
"""

from __future__ import annotations

import osworld_mcp_env.errors
from osworld_mcp_env.registry import unknown_name_message


class HybridAgentError(Exception):
    """Base class of every error raised by ``hybrid_agent``."""


class ConfigError(HybridAgentError, ValueError):
    """A config value is out of range or two values contradict each other."""


class RegistryError(HybridAgentError, osworld_mcp_env.errors.RegistryError, KeyError):
    """A registry lookup or registration failed (unknown or duplicate name).

    A subclass of the stack's one :class:`osworld_mcp_env.errors.RegistryError`, so one
    ``except`` catches a registry error of any package; the message comes from the
    stack's one formatter (:func:`unknown_name_message`, re-exported here).
    """

    def __str__(self) -> str:
        # KeyError.__str__ quotes its argument; a readable message matters more here.
        return str(self.args[0]) if self.args else ""


class ContextError(HybridAgentError, ValueError):
    """The inputs of the context builder are inconsistent (e.g. a replayed plan for another step)."""


class ToolCatalogError(HybridAgentError, ValueError):
    """A tool schema file is missing or not in a known format."""


__all__ = [
    "ConfigError",
    "ContextError",
    "HybridAgentError",
    "RegistryError",
    "ToolCatalogError",
    "unknown_name_message",
]

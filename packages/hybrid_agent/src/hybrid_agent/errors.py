"""Every exception ``hybrid_agent`` raises, under one base class.

Agent mistakes (malformed model output) are never raised: the parser returns
them as :class:`hybrid_agent.parse.ParseError` values that the runner feeds back
to the model. The classes below are *wiring* mistakes: a config that names an
unknown retention rule, a tool file in an unknown format, a context that
cannot be built from the inputs given. Their messages say what was expected
and how to fix it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class HybridAgentError(Exception):
    """Base class of every error raised by ``hybrid_agent``."""


class ConfigError(HybridAgentError, ValueError):
    """A config value is out of range or two values contradict each other."""


class RegistryError(HybridAgentError, KeyError):
    """A registry lookup or registration failed (unknown or duplicate name)."""

    def __str__(self) -> str:
        # KeyError.__str__ quotes its argument; a readable message matters more here.
        return str(self.args[0]) if self.args else ""


class ContextError(HybridAgentError, ValueError):
    """The inputs of the context builder are inconsistent (e.g. a replayed plan for another step)."""


class ToolCatalogError(HybridAgentError, ValueError):
    """A tool schema file is missing or not in a known format."""


def unknown_name_message(kind: str, name: str, known: Iterable[str]) -> str:
    """Builds the message for an unknown registry name: the known names and a close match.

    Args:
        kind: What was looked up, e.g. ``"retention rule"``.
        name: The name that was not found.
        known: Every registered name.

    Returns:
        ``"Unknown retention rule 'drop_on_sucess'. Did you mean 'drop_on_success'? Known: ..."``.
    """
    known_sorted = sorted(known)
    close = difflib.get_close_matches(name, known_sorted, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return f"Unknown {kind} {name!r}.{hint} Known: {', '.join(known_sorted)}."

"""Every exception ``grpo_trainer`` raises, under one base class.

Agent mistakes and crashed episodes are never raised: a crash is recorded on the
episode and the episode leaves the gradient. The classes below are wiring
mistakes (a bad config, an unknown registry name, a checkpoint that does not
match the run) and say how to fix them.
"""

from __future__ import annotations

import osworld_mcp_env.errors
from osworld_mcp_env.registry import unknown_name_message


class GRPOError(Exception):
    """Base class of every error raised by ``grpo_trainer``."""


class ConfigError(GRPOError, ValueError):
    """A config value is out of range, unknown, or contradicts another."""


class RegistryError(GRPOError, osworld_mcp_env.errors.RegistryError, KeyError):
    """A registry lookup or registration failed (unknown or duplicate name).

    A subclass of the stack's one :class:`osworld_mcp_env.errors.RegistryError`, so one
    ``except`` catches a registry error of any package.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class CheckpointError(GRPOError, RuntimeError):
    """A checkpoint is missing, partial, or was written by a different configuration."""


__all__ = ["CheckpointError", "ConfigError", "GRPOError", "RegistryError", "unknown_name_message"]

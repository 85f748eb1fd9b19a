"""A small named registry, one per pluggable family (reward terms, step terms).

Every entry of one registry shares one signature, so callers look a name up and
call it without branching on the name. Duplicates raise; unknown names list the
known ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from grpo_trainer.errors import RegistryError, unknown_name_message

F = TypeVar("F", bound=Callable)


class Registry(Generic[F]):
    """Name -> function for one family."""

    def __init__(self, kind: str) -> None:
        """``kind`` names the family in error messages (``"reward term"``)."""
        self.kind = kind
        self._entries: dict[str, F] = {}

    def register(self, name: str) -> Callable[[F], F]:
        """Decorator adding ``fn`` under ``name``; returns ``fn`` unchanged.

        Raises:
            RegistryError: ``name`` is taken by a different function.
        """

        def decorator(fn: F) -> F:
            existing = self._entries.get(name)
            if existing is not None and existing is not fn:
                raise RegistryError(f"{self.kind} {name!r} is already registered ({existing.__qualname__}).")
            self._entries[name] = fn
            return fn

        return decorator

    def get(self, name: str) -> F:
        """The function registered as ``name``.

        Raises:
            RegistryError: Unknown name (the message lists the known ones).
        """
        try:
            return self._entries[name]
        except KeyError:
            raise RegistryError(unknown_name_message(self.kind, name, self._entries)) from None

    def names(self) -> tuple[str, ...]:
        """Registered names, in registration order."""
        return tuple(self._entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

"""A small named registry shared by setup steps, getters and metrics.

Every pluggable family (setup step types, getter types, metric names) is a
:class:`Registry`: names are registered once, duplicates raise, and unknown names
raise a :class:`~osworld_mcp_env.errors.RegistryError` that lists the known names
and suggests the closest ones. Task loading asks :meth:`Registry.unknown_message`
so that a misspelled name fails when the task loads, not mid-episode.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from osworld_mcp_env.errors import RegistryError

T = TypeVar("T")


class Registry(Generic[T]):
    """Named entries of one kind (for example ``metric``)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}

    def add(self, name: str, entry: T) -> T:
        """Registers ``entry`` under ``name``; a second registration of a name raises.

        Raises:
            RegistryError: ``name`` is empty or already registered.
        """
        if not isinstance(name, str) or not name:
            raise RegistryError(f"A {self.kind} name must be a non-empty string, got {name!r}.")
        if name in self._entries:
            raise RegistryError(
                f"Duplicate {self.kind} {name!r}: it is already registered to {self._entries[name]!r}. "
                "Pick another name."
            )
        self._entries[name] = entry
        return entry

    def decorator(self, name: str) -> Callable[[T], T]:
        """Returns a decorator that registers the function under ``name`` and returns it unchanged."""
        if callable(name):
            fn = "register_" + self.kind.replace(" ", "_")
            raise RegistryError(f"{fn} needs a name: use @{fn}('name'), not @{fn}.")

        def wrap(entry: T) -> T:
            return self.add(name, entry)

        return wrap

    def get(self, name: str) -> T:
        """Returns the entry registered under ``name``.

        Raises:
            RegistryError: No such name; the message lists the known names.
        """
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            raise RegistryError(self.unknown_message(name)) from None

    def unknown_message(self, name: object) -> str:
        """The error text for an unknown ``name``: the known names and the closest matches."""
        known = sorted(self._entries)
        msg = f"Unknown {self.kind} {name!r}. Known: {', '.join(known)}."
        close = difflib.get_close_matches(str(name), known, n=3, cutoff=0.6)
        if close:
            msg += " Did you mean " + " or ".join(repr(c) for c in close) + "?"
        return msg

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)

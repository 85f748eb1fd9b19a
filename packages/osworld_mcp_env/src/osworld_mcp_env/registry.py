"""The one named registry of the stack, and the one "unknown name" message.

Every pluggable family (setup steps, getters, metrics, ``compare_table`` rules,
backends, MCP namespaces, guest routes, retention rules, policy kinds, reward
terms) is a :class:`Registry`: names are registered once, a second entry under a
taken name raises, and an unknown name raises a
:class:`~osworld_mcp_env.errors.RegistryError` (or the subclass a package passes as
``error``) whose message lists the known names and suggests the closest ones.
Callers look a name up and call the entry; they never branch on a name.

Standard library only (plus :mod:`osworld_mcp_env.errors`), so the guest server,
which runs this package inside the sandbox, can import it.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

from osworld_mcp_env.errors import RegistryError

T = TypeVar("T")


def unknown_name_message(kind: str, name: object, known: Iterable[str]) -> str:
    """The error text for an unknown ``name``: the closest known name, then all of them.

    Args:
        kind: What was looked up (``"retention rule"``).
        name: The name that was not found.
        known: Every valid name.

    Returns:
        ``"Unknown retention rule 'drop_on_sucess'. Did you mean 'drop_on_success'? Known: a, b."``
    """
    known_sorted = sorted(known)
    listed = ", ".join(known_sorted) or "none"
    return f"Unknown {kind} {name!r}.{did_you_mean(name, known_sorted)} Known: {listed}."


def did_you_mean(name: object, known: Iterable[str]) -> str:
    """``" Did you mean 'a'?"`` naming the closest known name, or ``""`` when none is close."""
    close = difflib.get_close_matches(str(name), list(known), n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


class Registry(Generic[T]):
    """Named entries of one kind (for example ``metric``).

    Args:
        kind: Names the family in messages (``"setup step"``).
        error: The error class raised; a package passes its own subclass of
            :class:`~osworld_mcp_env.errors.RegistryError` so its base class catches it too.
        providers: Modules whose import registers the built-in entries, imported on the
            first lookup. A consumer (the task loader) can then check names against a
            family without importing its implementations (the evaluators, which import
            the task types): the dependency stays one-way.
    """

    def __init__(
        self, kind: str, *, error: type[RegistryError] = RegistryError, providers: tuple[str, ...] = ()
    ) -> None:
        self.kind = kind
        self.error = error
        self._providers = providers
        self._entries: dict[str, T] = {}

    def add(self, name: str, entry: T) -> T:
        """Registers ``entry`` under ``name`` and returns it.

        Registering the same object again under its name is a no-op (a module imported
        under two names registers twice); another object under a taken name raises.

        Raises:
            RegistryError: ``name`` is empty or taken by another entry.
        """
        if not isinstance(name, str) or not name:
            raise self.error(f"A {self.kind} name must be a non-empty string, got {name!r}.")
        existing = self._entries.get(name, entry)
        if existing is not entry:
            held = getattr(existing, "__qualname__", None) or repr(existing)
            raise self.error(
                f"Duplicate {self.kind} {name!r}: already registered to {held}. Pick another name."
            )
        self._entries[name] = entry
        return entry

    def register(self, name: str) -> Callable[[T], T]:
        """A decorator that registers its target under ``name`` and returns it unchanged.

        Raises:
            RegistryError: Used bare (``@register`` without a name), or as :meth:`add`.
        """
        if callable(name):
            fn = "register_" + self.kind.replace(" ", "_")
            raise self.error(f"{fn} needs a name: use @{fn}('name'), not @{fn}.")

        def wrap(entry: T) -> T:
            return self.add(name, entry)

        return wrap

    def get(self, name: str) -> T:
        """Returns the entry registered under ``name``.

        Raises:
            RegistryError: No such name; the message lists the known names.
        """
        entries = self._loaded()
        try:
            return entries[name]
        except (KeyError, TypeError):  # TypeError: an unhashable name from a task file
            raise self.error(self.unknown_message(name)) from None

    def unknown_message(self, name: object) -> str:
        """The error text for an unknown ``name`` (see :func:`unknown_name_message`)."""
        return unknown_name_message(self.kind, name, self._loaded())

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self._loaded())

    def __contains__(self, name: object) -> bool:
        try:
            return name in self._loaded()
        except TypeError:
            return False

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._loaded())

    def _loaded(self) -> dict[str, T]:
        providers, self._providers = self._providers, ()  # cleared first: a provider may look names up
        for module in providers:
            importlib.import_module(module)
        return self._entries

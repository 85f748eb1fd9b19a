"""Old import paths of modules that moved, kept as aliases that warn: one mechanism for every package.

A package laid out anew (this env's by role, the trainer's by role) hands its table of
``old path -> new path`` to :func:`alias_moved_modules` when it is imported. Then ``import
pkg.old_name`` (or ``from pkg import old_name``) still works: a finder on ``sys.meta_path``
answers each old name with the module at its new path, so both names are one module object
(one set of globals, one registry), and warns once per name with a :class:`DeprecationWarning`
that names the new path.

The finder stands first on ``sys.meta_path``: an old name under a package that itself moved
(``pkg.engines.hf`` once ``pkg.engines`` is ``pkg.model.engines``) would otherwise be found
by the path finder in the moved package's folder and run a second time as a second module.
It answers only the names of the tables, so every other import goes on to the usual finders.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Mapping
from types import ModuleType


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves an old import path to the module at its new one.

    Attributes:
        moved: Every aliased old path -> where the module lives now (all packages' tables).
    """

    def __init__(self) -> None:
        self.moved: dict[str, str] = {}

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        """A spec loaded by this finder for an aliased old path; None lets the other finders look."""
        if fullname not in self.moved:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        """The module at the new path (imported if need be), after the warning that names it."""
        new_name = self.moved[spec.name]
        warnings.warn(
            f"{spec.name} moved to {new_name}; the old path is an alias and will be removed.",
            DeprecationWarning,
            stacklevel=2,
        )
        # The module at its new path, not a copy: its own __name__ and __spec__ are kept.
        return importlib.import_module(new_name)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module already ran under its new name."""


def alias_moved_modules(moved: Mapping[str, str]) -> None:
    """Answers each old path of ``moved`` with its new module (a package's ``__init__`` calls it once).

    One finder serves every table: it is put first on ``sys.meta_path`` the first time.
    """
    finder = next((f for f in sys.meta_path if isinstance(f, MovedModuleFinder)), None)
    if finder is None:
        finder = MovedModuleFinder()
        sys.meta_path.insert(0, finder)
    finder.moved.update(moved)

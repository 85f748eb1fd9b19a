"""Import paths of modules that moved when the package was laid out by role, kept as aliases.

``import osworld_mcp_env.mcp_client`` (or ``from osworld_mcp_env import fuzz``) still works: a
finder on ``sys.meta_path`` answers each old name with the module at its new path, so both
names are one module object (one set of globals, one registry), and warns once per name with
a :class:`DeprecationWarning` that names the new path. Nothing in this repository imports an
old name; the table below is the whole list, and the package README's "Layout" section says
which role each new place has.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType

# Old import path -> where the module lives now.
MOVED_MODULES: dict[str, str] = {
    "osworld_mcp_env.env_tools": "osworld_mcp_env.env.tools",
    "osworld_mcp_env.prepared_reset": "osworld_mcp_env.env.prepared_reset",
    "osworld_mcp_env.step_limit": "osworld_mcp_env.env.step_limit",
    "osworld_mcp_env.mcp_client": "osworld_mcp_env.mcp_host.client",
    "osworld_mcp_env.namespaces": "osworld_mcp_env.mcp_host.namespaces",
    "osworld_mcp_env.apps": "osworld_mcp_env.mcp_host.apps",
    "osworld_mcp_env.fuzz": "osworld_mcp_env.devkit.fuzz",
    "osworld_mcp_env.validate": "osworld_mcp_env.devkit.validate",
    "osworld_mcp_env.libvirt_hosts": "osworld_mcp_env.backends.libvirt.hosts",
    "osworld_mcp_env.backends.sandbox": "osworld_mcp_env.backends.local.sandbox",
    "osworld_mcp_env.backends.userns": "osworld_mcp_env.backends.local.userns",
    "osworld_mcp_env.backends.cgroups": "osworld_mcp_env.backends.local.cgroups",
    "osworld_mcp_env.backends.home": "osworld_mcp_env.backends.local.home",
    "osworld_mcp_env.backends.lo_profile": "osworld_mcp_env.backends.local.lo_profile",
    "osworld_mcp_env.backends.framebuffer": "osworld_mcp_env.backends.local.framebuffer",
    "osworld_mcp_env.backends.vm_domain": "osworld_mcp_env.backends.libvirt.vm_domain",
    "osworld_mcp_env.backends.vm_owner": "osworld_mcp_env.backends.libvirt.vm_owner",
    "osworld_mcp_env.backends.ssh_tunnel": "osworld_mcp_env.backends.libvirt.ssh_tunnel",
    **{
        f"osworld_mcp_env.mcp_servers.{name}": f"osworld_mcp_env.mcp_servers.tools.{name}"
        for name in (
            "arith", "calc", "calc_extra", "chrome", "code", "impress",
            "office_common", "os_tools", "uno_conn", "vlc", "walk", "writer",
        )
    },
}  # fmt: skip


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves an old import path to the module at its new one (after the regular finders failed)."""

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new_name = MOVED_MODULES[spec.name]
        warnings.warn(
            f"{spec.name} moved to {new_name}; the old path is an alias and will be removed.",
            DeprecationWarning,
            stacklevel=2,
        )
        # The module at its new path, not a copy: its own __name__ and __spec__ are kept.
        return importlib.import_module(new_name)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module already ran under its new name."""


def install_moved_modules() -> None:
    """Puts the finder on ``sys.meta_path`` once (``import osworld_mcp_env`` does it)."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())

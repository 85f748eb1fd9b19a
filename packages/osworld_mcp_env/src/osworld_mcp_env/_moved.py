"""Import paths of modules that moved when the package was laid out by role, kept as aliases.

``import osworld_mcp_env.mcp_client`` (or ``from osworld_mcp_env import fuzz``) still works:
``import osworld_mcp_env`` hands this table to :func:`osworld_mcp_env.module_aliases.alias_moved_modules`,
which answers each old name with the module at its new path (one module object) and warns once
per name with a :class:`DeprecationWarning` that names the new path. Nothing in this repository imports an
old name; the table below is the whole list, and the package README's "Layout" section says
which role each new place has.
"""

from __future__ import annotations

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

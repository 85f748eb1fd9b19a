"""The libvirt backend: each desktop a QEMU VM from the image ``tools/build-image`` makes.

- :mod:`~osworld_mcp_env.backends.libvirt.desktop`: :class:`LibvirtDesktop` and its config.
- :mod:`~osworld_mcp_env.backends.libvirt.vm_domain`, :mod:`~osworld_mcp_env.backends.libvirt.vm_owner`:
  a VM's domain XML, and who owns it (and the sweep of orphans).
- :mod:`~osworld_mcp_env.backends.libvirt.ssh_tunnel`: a remote libvirt host's ports through SSH.
- :mod:`~osworld_mcp_env.backends.libvirt.hosts`: vector envs whose members run on several hosts.
"""

from osworld_mcp_env.backends.libvirt.desktop import LibvirtDesktop, LibvirtDesktopConfig

__all__ = ["LibvirtDesktop", "LibvirtDesktopConfig"]

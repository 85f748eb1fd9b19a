"""Desktop backends behind one protocol, created by name.

``local`` is the embedded sandboxed Xvfb desktop (the default; no VM image);
``libvirt`` a QEMU VM from the image ``tools/build-image`` makes.
A backend is a callable ``(screen_width, screen_height, **options) -> Desktop``
registered under a name; the env never branches on the name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from osworld_mcp_env.backends.base import Desktop, ExecResult, GuiResult, ScreenCapture, WindowInfo
from osworld_mcp_env.errors import DesktopStartError
from osworld_mcp_env.registry import Registry

BackendFactory = Callable[..., Desktop]
BACKENDS: Registry[BackendFactory] = Registry("backend")
"""Desktop factories by backend name (``OSWorldMCPEnv(backend=...)``)."""


def register_backend(name: str, factory: BackendFactory) -> None:
    """Registers a backend factory; a duplicate name raises."""
    BACKENDS.add(name, factory)


def make_desktop(name: str, *, screen_width: int, screen_height: int, **options: Any) -> Desktop:
    """Creates and starts a desktop of the named backend.

    Raises:
        RegistryError: An unknown backend name (the message lists the known ones).
    """
    return BACKENDS.get(name)(screen_width=screen_width, screen_height=screen_height, **options)


def _local(*, screen_width: int, screen_height: int, **options: Any) -> Desktop:
    from osworld_mcp_env.backends.local.desktop import LocalDesktop, LocalDesktopConfig

    return LocalDesktop(LocalDesktopConfig(screen_width=screen_width, screen_height=screen_height, **options))


def _libvirt(*, screen_width: int, screen_height: int, network: Any = None, **options: Any) -> Desktop:
    if network is not None:  # the env passes one only for internet mode
        raise DesktopStartError(
            "network='internet' is the local backend's (a host proxy for its sandbox); a libvirt "
            "VM's network is its domain's (docs/libvirt.md). Use backend='local' or drop network."
        )
    from osworld_mcp_env.backends.libvirt.desktop import LibvirtDesktop, LibvirtDesktopConfig

    return LibvirtDesktop(
        LibvirtDesktopConfig(screen_width=screen_width, screen_height=screen_height, **options)
    )


register_backend("local", _local)
register_backend("libvirt", _libvirt)

__all__ = [
    "BACKENDS",
    "Desktop",
    "ExecResult",
    "GuiResult",
    "ScreenCapture",
    "WindowInfo",
    "make_desktop",
    "register_backend",
]

"""The part of the ``Desktop`` protocol every backend with a guest server shares.

The local sandbox and a libvirt VM run the same guest server and differ only in
how it is reached (a Unix socket, a forwarded TCP port) and in their lifecycle.
Their requests are therefore one forward each to the
:class:`~osworld_mcp_env.backends.guest_client.GuestClient`, written once here; a
backend overrides the few it does differently (the local backend reads frames
from Xvfb's screen file, the VM stretches window waits).
"""

from __future__ import annotations

from typing import Any, Protocol

from osworld_mcp_env.backends.base import ExecResult, GuiResult, ScreenCapture, WindowInfo
from osworld_mcp_env.backends.guest_client import GuestClient


class ScreenConfig(Protocol):
    """What this base reads of a backend's config: the screen it asked the guest for."""

    @property
    def screen_width(self) -> int:
        """Screen width in pixels."""
        ...

    @property
    def screen_height(self) -> int:
        """Screen height in pixels."""
        ...


class GuestBackedDesktop:
    """Forwards the protocol's desktop requests to ``self.client``; subclasses own the lifecycle.

    A subclass sets ``config`` and ``client`` in its constructor and replaces ``client``
    whenever the guest it talks to is replaced.
    """

    config: ScreenConfig
    client: GuestClient

    @property
    def screen_size(self) -> tuple[int, int]:
        """(width, height)."""
        return (self.config.screen_width, self.config.screen_height)

    def execute(self, command: list[str] | str, *, shell: bool = False, timeout: float = 120.0) -> ExecResult:
        """Runs a command to completion as ``user`` inside the desktop."""
        return self.client.execute(command, shell=shell, timeout=timeout)

    def launch(self, command: list[str] | str, *, shell: bool = False) -> None:
        """Starts a command inside the desktop."""
        self.client.launch(command, shell=shell)

    def open_file(self, path: str, *, timeout: float = 30.0) -> None:
        """Opens a file with its default app and waits for its window."""
        self.client.open_file(path, timeout=timeout)

    def activate_window(self, window_name: str, *, strict: bool = False, by_class: bool = False) -> None:
        """Focuses a window."""
        self.client.activate_window(window_name, strict=strict, by_class=by_class)

    def close_window(self, window_name: str, *, strict: bool = False, by_class: bool = False) -> None:
        """Closes a window."""
        self.client.close_window(window_name, strict=strict, by_class=by_class)

    def upload_file(self, path: str, data: bytes) -> None:
        """Writes a file inside the desktop, as ``user``."""
        self.client.upload_file(path, data)

    def read_file(self, path: str) -> bytes | None:
        """Reads a file inside the desktop as ``user`` (through the guest, size-capped there)."""
        return self.client.read_file(path)

    def screenshot(self, *, with_layout: bool = False) -> ScreenCapture:
        """The guest's raw frame (``GET /frame``), with the focused window (and layout hash)."""
        return self.client.screenshot(with_layout=with_layout)

    def windows(self) -> list[WindowInfo]:
        """Managed windows, bottom to top."""
        return self.client.windows()

    def active_window(self) -> WindowInfo | None:
        """The focused window."""
        return self.client.active_window()

    def accessibility_tree(self, *, max_nodes: int = 5000) -> str:
        """The AT-SPI tree as XML."""
        return self.client.accessibility_tree(max_nodes=max_nodes)

    def settle(
        self,
        *,
        first_change_ms: float | None = None,
        quiet_ms: float | None = None,
        max_ms: float | None = None,
        prior_change_ms: float | None = None,
        work_ms: float | None = None,
    ) -> float:
        """Waits until the desktop is still (None: the guest's default threshold)."""
        return self.client.settle(
            first_change_ms=first_change_ms,
            quiet_ms=quiet_ms,
            max_ms=max_ms,
            prior_change_ms=prior_change_ms,
            work_ms=work_ms,
        )

    def gui(
        self,
        action: dict[str, Any],
        *,
        expected_layout: str | None = None,
        timeout: float | None = None,
        capture: bool = False,
        with_layout: bool = False,
    ) -> GuiResult:
        """One input action plus the settle wait, within ``timeout`` s (with ``capture``, the frame too)."""
        return self.client.gui(
            action, expected_layout=expected_layout, timeout=timeout, capture=capture, with_layout=with_layout
        )

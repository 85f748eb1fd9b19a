"""The embedded desktop: Xvfb, openbox and real apps in a bubblewrap sandbox (the default backend).

- :mod:`~osworld_mcp_env.backends.local.desktop`: :class:`LocalDesktop` and its config.
- :mod:`~osworld_mcp_env.backends.local.sandbox`, :mod:`~osworld_mcp_env.backends.local.userns`
  (and ``userns_child``, run as a script), :mod:`~osworld_mcp_env.backends.local.cgroups`: the sandbox's
  processes, its two host uids and its resource bounds.
- :mod:`~osworld_mcp_env.backends.local.home`, :mod:`~osworld_mcp_env.backends.local.lo_profile`: the
  user's home and the warmed LibreOffice profile of every episode.
- :mod:`~osworld_mcp_env.backends.local.framebuffer`: frames read from Xvfb's screen file.
"""

from osworld_mcp_env.backends.local.desktop import LocalDesktop, LocalDesktopConfig

__all__ = ["LocalDesktop", "LocalDesktopConfig"]

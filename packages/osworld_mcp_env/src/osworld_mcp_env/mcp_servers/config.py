"""Configuration of the in-desktop MCP servers (one dataclass, read once by the CLI)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from osworld_mcp_env.mcp_host.limits import ToolLimits

DEFAULT_UNO_URL = "uno:socket,host=127.0.0.1,port=2002;urp;StarOffice.ComponentContext"


@dataclass(frozen=True)
class ServerConfig:
    """Where the servers find the desktop's apps.

    Environment variables are read only by ``cli.py`` (``OSWORLD_UNO_URL``); library
    code receives this dataclass.
    """

    uno_url: str = field(
        default=DEFAULT_UNO_URL,
        metadata={
            "help": "UNO connection URL of the running LibreOffice (the desktop's soffice wrapper "
            "adds --accept=socket,host=127.0.0.1,port=2002;urp;StarOffice.ComponentContext)."
        },
    )
    uno_timeout_s: float = field(
        default=30.0,
        metadata={"help": "How long to wait for a running LibreOffice to accept the UNO connection."},
    )
    vlc_url: str = field(default="http://127.0.0.1:8080", metadata={"help": "VLC's HTTP interface."})
    vlc_password: str = field(default="password", metadata={"help": "VLC HTTP password (user is empty)."})
    cdp_url: str = field(
        default="http://127.0.0.1:1337", metadata={"help": "Chromium's --remote-debugging-port endpoint."}
    )
    home: Path = field(default_factory=Path.home, metadata={"help": "The desktop user's home directory."})
    editor_command: tuple[str, ...] = field(
        default=("mousepad",), metadata={"help": "The desktop's text editor (the `code` namespace)."}
    )
    terminal_command: tuple[str, ...] = field(
        default=("xfce4-terminal",), metadata={"help": "The desktop's terminal emulator."}
    )
    command_timeout_s: float = field(
        default=20.0, metadata={"help": "Deadline of a subprocess a tool runs (git, gsettings, ...)."}
    )
    limits: ToolLimits = field(
        default_factory=ToolLimits, metadata={"help": "Bounds on what a message or a tool call may cost."}
    )

    def __post_init__(self) -> None:
        if not self.uno_url.startswith("uno:"):
            raise ValueError(
                f"uno_url must start with 'uno:', got {self.uno_url!r}; e.g. {DEFAULT_UNO_URL!r}"
            )
        if self.uno_timeout_s <= 0 or self.command_timeout_s <= 0:
            raise ValueError("uno_timeout_s and command_timeout_s must be > 0")

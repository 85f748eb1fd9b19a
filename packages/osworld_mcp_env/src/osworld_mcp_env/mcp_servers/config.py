"""Configuration of the in-desktop MCP servers (one dataclass, read once by the CLI)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

DEFAULT_UNO_URL = "uno:socket,host=127.0.0.1,port=2002;urp;StarOffice.ComponentContext"


@dataclass(frozen=True)
class ToolLimits:
    """What one message or one tool call may cost the tool host, whatever its arguments.

    The tool host serves every namespace from one process and the agent chooses the
    arguments, so each cost that grows with an argument has a bound here. A call over
    a bound is a tool error that names the bound (or a JSON-RPC error for the wire
    bounds), never a wedged host.
    """

    max_message_bytes: int = field(
        default=1 << 20,
        metadata={
            "help": "Largest JSON-RPC message read (one stdio line, one HTTP body); a larger one is "
            "answered with a JSON-RPC error unread. 4x max_argument_bytes: room for the envelope."
        },
    )
    max_argument_bytes: int = field(
        default=256 << 10,
        metadata={
            "help": "Largest tools/call arguments (UTF-8 JSON); larger is a tool error. 4x the env's "
            "own action cap (65,536 characters), so only other clients ever meet it."
        },
    )
    max_result_bytes: int = field(
        default=64 << 10,
        metadata={
            "help": "Largest tool result or error (UTF-8 JSON of text plus structuredContent); longer "
            "strings and lists are cut with a '[truncated ...]' marker. The observation's "
            "tool_result holds 65,536 characters, so more could never reach the model."
        },
    )
    calculator_max_chars: int = field(
        default=1_000, metadata={"help": "Longest expression os.calculator parses."}
    )
    calculator_max_depth: int = field(
        default=100, metadata={"help": "Deepest nesting of operators os.calculator evaluates."}
    )
    calculator_max_digits: int = field(
        default=1_000,
        metadata={
            "help": "Most decimal digits of any integer os.calculator computes; the size of each "
            "result is bounded before it is computed, so no operation runs longer than ~1 ms."
        },
    )
    calculator_timeout_s: float = field(
        default=1.0, metadata={"help": "Wall-clock guard of one os.calculator evaluation."}
    )
    max_walk_entries: int = field(
        default=100_000,
        metadata={
            "help": "Directory entries a tree walk visits (os.search_files, copies, the editor's "
            "search and replace, vlc.get_media_files); a walk that stops early says so."
        },
    )
    max_text_file_bytes: int = field(
        default=2_000_000,
        metadata={"help": "Largest file the editor tools read, write or diff (and a replace may produce)."},
    )
    max_diff_lines: int = field(
        default=20_000,
        metadata={"help": "Most lines per file code.compare_files diffs (difflib is quadratic at worst)."},
    )
    max_image_pixels: int = field(
        default=40_000_000,
        metadata={"help": "Largest image (width x height) the image tools decode (160 MB as RGBA)."},
    )
    max_fill_pixels: int = field(
        default=4_000_000,
        metadata={
            "help": "Largest image os.remove_image_background processes: its flood fill runs in "
            "Python at ~1.3 us per pixel (~5 s at this size)."
        },
    )
    max_range_cells: int = field(
        default=100_000,
        metadata={"help": "Most cells one Calc tool reads or writes (each is a UNO round trip)."},
    )
    regex_timeout_s: float = field(
        default=2.0,
        metadata={
            "help": "Time a user's regular expression may take on one paragraph (catastrophic "
            "backtracking would otherwise hold the GIL, and so every tool, for minutes)."
        },
    )

    def __post_init__(self) -> None:
        bad = [f.name for f in fields(self) if not getattr(self, f.name) > 0]
        if bad:
            raise ValueError(f"ToolLimits fields must be > 0: {bad}")
        if self.max_argument_bytes > self.max_message_bytes:
            raise ValueError(
                f"max_argument_bytes ({self.max_argument_bytes}) must not exceed max_message_bytes "
                f"({self.max_message_bytes}): arguments travel inside one message"
            )


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

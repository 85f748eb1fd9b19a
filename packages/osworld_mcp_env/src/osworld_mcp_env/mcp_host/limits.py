"""What one message or one tool call may cost the tool host: the bounds both sides of MCP read.

The servers enforce them (:mod:`osworld_mcp_env.mcp_servers.middleware`, ``wire``); the env's
client (:mod:`~osworld_mcp_env.mcp_host.client`) refuses arguments over the same cap before
sending. Standard library only, like the namespace table beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields


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

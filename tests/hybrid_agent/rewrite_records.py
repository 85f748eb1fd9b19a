"""Episode records shaped as hybrid_agent's runner writes them, for the rewrite tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hybrid_agent.context import call_summary
from hybrid_agent.recorder import EpisodeRecord, read_episode
from hybrid_agent.trajectory import Call

TERMINAL = ("os", "Terminal - ")
WRITER = ("libreoffice_writer", "Untitled 1 - LibreOffice Writer")
CALC = ("libreoffice_calc", "numbers.xlsx - LibreOffice Calc")


def gui(action: str, **arguments: Any) -> dict[str, Any]:
    """A computer_use call as the env executed it (pixels)."""
    return {"name": "computer_use", "arguments": {"action": action, **arguments}}


def line(call: dict[str, Any], focus: tuple[str, str | None] = TERMINAL, step: int = 0, **extra: Any) -> dict:
    """One step line: the scripted policy's Action line (a call summary), the parse, the executed action."""
    app, window = focus
    # The model wrote the call without the frame id; the env's action cites it (agent_loop.cite_frame).
    written = {**call, "arguments": {k: v for k, v in call["arguments"].items() if k != "frame_id"}}
    summary = call_summary(Call(written["name"], written["arguments"]))
    return {
        "type": "step",
        "step": step,
        "app": app,
        "window": window,
        "model_output": f"Action: {summary}",
        "parse": {"ok": True, "call": written, "repairs": [], "action_line": summary},
        "action": call,
        "env_error": None,
        **extra,
    }


def record(
    path: Path, lines: list[dict], score: float | None = 1.0, task_id: str = "os-create-file", run: int = 0
) -> EpisodeRecord:
    """Writes a finished record of ``lines`` (steps numbered in order) and reads it back."""
    header = {"type": "episode", "task_id": task_id, "domain": "os", "run": run, "policy": "scripted:oracle"}
    steps = [{**entry, "step": i} for i, entry in enumerate(lines)]
    end = {"type": "end", "score": score, "error": None, "steps": len(steps)}
    path.write_text("\n".join(json.dumps(entry) for entry in [header, *steps, end]) + "\n")
    return read_episode(path)

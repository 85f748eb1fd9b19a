"""The response menu of :class:`~grpo_trainer.model.tiny.TinyPolicy` for the ToolOrGui env.

Each entry is a complete model output in the study's format (``Action:`` line and a
``<tool_call>``), so it goes through ``hybrid_agent``'s parser like a real model's.
"""

from __future__ import annotations

import json


def _response(summary: str, name: str, arguments: dict) -> str:
    call = json.dumps({"name": name, "arguments": arguments})
    return f"Action: {summary}\n<tool_call>\n{call}\n</tool_call>"


TOOL_WRITE = _response("write 5 to A1", "libreoffice_calc.set_cell_value", {"cell": "A1", "value": "5"})
GUI_TYPE = _response("type 5 into A1", "computer_use", {"action": "type", "text": "5\n"})
TERMINATE = _response("done", "computer_use", {"action": "terminate", "status": "success"})
READ = _response("read A1", "libreoffice_calc.get_cell_value", {"cell": "A1"})
CLICK = _response("click the sheet", "computer_use", {"action": "left_click", "coordinate": [500, 500]})
WRONG = _response("write 6 to A1", "libreoffice_calc.set_cell_value", {"cell": "A1", "value": "6"})
MENU: tuple[str, ...] = (TOOL_WRITE, GUI_TYPE, TERMINATE, READ, CLICK, WRONG, "I am not sure.")

"""Plans for :class:`~grpo_trainer.model.menu_policy.MenuPolicy`: a seeded one-cell Calc task, real desktop.

The task's own MCP-tool oracle (``bundled_solution(id, "tools")``: write the cell, save,
terminate) is one plan; the other three get one or both of its two decisions wrong, and
the real evaluator scores them 0: the write with a wrong value (off by one), and either
write with no save (the file on disk keeps its old value). Two decisions, two options
each: an untrained policy succeeds in 1/4 of its episodes, once per ``len(menu)`` responses.
"""

from __future__ import annotations

from hybrid_agent.policies.scripted import render_call
from osworld_mcp_env.tasks.bundled import bundled_solution

WRITE = "libreoffice_calc.set_cell_value"


def one_cell_plans(task_id: str) -> list[list[str]]:
    """The four plans of a task whose tool oracle is one integer cell write, ``save``, ``terminate``."""
    oracle = bundled_solution(task_id, "tools")
    names = [call["name"] for call in oracle]
    if names[:-1] != [WRITE, "libreoffice_calc.save"] or not oracle[0]["arguments"]["value"].isdigit():
        raise ValueError(f"{task_id}'s tool oracle {names} is not one integer cell write and a save.")
    write, save, done = oracle
    wrong = {**write, "arguments": {**write["arguments"], "value": str(int(write["arguments"]["value"]) + 1)}}
    right_text, wrong_text, save_text, done_text = map(render_call, (write, wrong, save, done))
    return [
        [right_text, save_text, done_text],  # the oracle: scores 1
        [right_text, done_text],
        [wrong_text, save_text, done_text],
        [wrong_text, done_text],
    ]

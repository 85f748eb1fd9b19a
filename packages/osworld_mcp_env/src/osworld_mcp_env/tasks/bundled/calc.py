"""Calc templates: formulas, data entry and sorting in a seeded xlsx, checked by ``compare_table``.

GUI oracles are keyboard only: arrow keys move from the cell the script knows the
cursor is on (A1 when the file opens) to the target cell, the entries are typed, each
ending with Return (the cursor goes down), and ``ctrl+s`` saves (xlsx, no dialog).
``ax`` oracles find every target cell by its address (``ax.find(name="D3")``), then one
``ax.act`` sets each cell's text on its ref and saves.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Sequence
from typing import Any

from osworld_mcp_env.tasks import ax_script
from osworld_mcp_env.tasks.bundled.files import xlsx
from osworld_mcp_env.tasks.bundled.office import idle_postconfig, open_document
from osworld_mcp_env.tasks.templates import (
    DONE,
    HOME,
    NAMES,
    SAVE,
    Call,
    Instance,
    file_stem,
    key,
    register_template,
    task_dict,
    tool,
    type_text,
)

COLS = "ABCDEFGH"
SAVE_TOOL = tool("libreoffice_calc.save")
Rows = list[list[Any]]


def position(cell: str) -> tuple[int, int]:
    """``(column index, row number)`` of a cell name such as ``D2``."""
    return COLS.index(cell[0]), int(cell[1:])


def moves(start: tuple[int, int], cell: str) -> list[Call]:
    """Arrow keys from ``start`` to ``cell``, one key per step.

    Not ``ctrl+Home`` and Return: on a loaded desktop the Return right after
    ``ctrl+Home`` was sometimes lost (the cursor stayed on A1, the entry landed a row
    too high; 2 of about 50 runs, never with plain arrow keys in 65). Not Tab either:
    after a Tab, Calc's Return jumps back to the column the Tabs started from.
    """
    (col0, row0), (col, row) = start, position(cell)
    horizontal = ["Right" if col > col0 else "Left"] * abs(col - col0)
    vertical = ["Down" if row > row0 else "Up"] * abs(row - row0)
    return [key(k) for k in (*vertical, *horizontal)]


def calc_instance(
    task_id: str,
    rng: random.Random,
    instruction: str,
    rows: Rows,
    gold_rows: Rows,
    entries: dict[str, list[str]],
    wrong: dict[str, list[str]],
    tools: list[Call] | None,
) -> Instance:
    """A Calc task on ``<stem>.xlsx``: ``entries`` maps a start cell to values typed downwards.

    ``instruction`` may use ``{file}``.
    """
    name = f"{file_stem(rng)}.xlsx"
    path = f"{HOME}/{name}"
    gold_name = name.replace(".xlsx", "_gold.xlsx")

    def script(cells: dict[str, list[str]]) -> list[Call]:
        calls: list[Call] = []
        cursor = position("A1")  # where Calc opens a file openpyxl wrote
        for cell, values in cells.items():
            calls += [*moves(cursor, cell), type_text("".join(f"{v}\n" for v in values))]
            cursor = (position(cell)[0], position(cell)[1] + len(values))
        return calls + SAVE + [DONE]

    def ax_oracle(cells: dict[str, list[str]]) -> list[Call]:
        targets = {
            f"{cell[0]}{position(cell)[1] + i}": value
            for cell, values in cells.items()
            for i, value in enumerate(values)
        }
        finds = [ax_script.find(target, role="table cell", name=target) for target in targets]
        sets = [ax_script.op("set_text", target, text=value) for target, value in targets.items()]
        return [*finds, ax_script.act(*sets, ax_script.op("key", keys="ctrl+s")), DONE]

    task = task_dict(
        task_id,
        "libreoffice_calc",
        instruction.format(file=name) + " Then save the file in its current format (xlsx).",
        open_document(path),
        {
            "func": "compare_table",
            "result": {"type": "vm_file", "path": path, "dest": name},
            "expected": {"type": "cache_file", "path": gold_name},
            "options": {"rules": [{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}]},
            "postconfig": idle_postconfig(),
        },
        ["libreoffice_calc"],
    )
    return Instance(
        task=task,
        inputs={path: xlsx(rows)},
        gold={gold_name: xlsx(gold_rows)},
        gui=script(entries),
        tools=None if tools is None else [*tools, SAVE_TOOL, DONE],
        near_miss=script(wrong),
        ax=ax_oracle(entries),
    )


def set_cells(start: str, values: Sequence[str]) -> list[Call]:
    """Tool calls writing ``values`` downwards from ``start``."""
    col, row = start[0], int(start[1:])
    return [
        tool("libreoffice_calc.set_cell_value", cell=f"{col}{row + i}", value=v) for i, v in enumerate(values)
    ]


def with_cell(rows: Rows, cell: str, value: Any) -> Rows:
    """A copy of ``rows`` with ``value`` at ``cell`` (rows/columns padded with None)."""
    out = [list(r) for r in rows]
    col, row = COLS.index(cell[0]), int(cell[1:]) - 1
    while len(out) <= row:
        out.append([])
    out[row] += [None] * (col + 1 - len(out[row]))
    out[row][col] = value
    return out


def numbers(rng: random.Random, n: int, lo: int = 5, hi: int = 95) -> list[int]:
    """``n`` distinct integers in [lo, hi]."""
    return rng.sample(range(lo, hi + 1), n)


def named_column(rng: random.Random) -> tuple[Rows, list[int]]:
    """A header and 5-8 rows of (name, number)."""
    n = rng.randint(5, 8)
    names = rng.sample(NAMES, n)
    values = numbers(rng, n)
    header = rng.choice((["Name", "Score"], ["Member", "Points"], ["Seller", "Units"]))
    return [header, *([a, b] for a, b in zip(names, values, strict=True))], values


def aggregate(label: str, func: str, value: Callable[[list[int]], float]) -> None:
    """Registers ``calc-column-<label>``: ``=func(B2:Bn)`` into a seeded cell of column D."""

    @register_template(f"calc-column-{label}", "calc", tools=True)
    def build(rng: random.Random, task_id: str) -> Instance:
        rows, values = named_column(rng)
        if func == "AVERAGE":  # a whole average: the same double on every side
            rows[-1][1] += (-sum(values)) % len(values)
            values[-1] = rows[-1][1]
        last = len(rows)
        cell = f"D{rng.randint(2, 4)}"
        formula = f"={func}(B2:B{last})"
        # Plausible slips (the last row left out, a neighbouring function); the first that
        # gives another number than the right answer is the near miss.
        slips = [
            (f"={func}(B2:B{last - 1})", value(values[:-1])),
            (f"={func}(B3:B{last})", value(values[1:])),
            (f"=SUM(B2:B{last})", sum(values)),
        ]
        wrong = next(f for f, v in slips if v != value(values))
        noun = {
            "SUM": "total",
            "AVERAGE": "average",
            "MAX": "largest value",
            "MIN": "smallest value",
            "COUNT": "number of values",
        }
        what = noun.get(func, "median")
        instruction = f"In {{file}}, put the {what} of column B (rows 2 to {last}) into cell {cell}."
        return calc_instance(
            task_id,
            rng,
            instruction,
            rows,
            with_cell(rows, cell, value(values)),
            {cell: [formula]},
            {cell: [wrong]},
            set_cells(cell, [formula]),
        )


aggregate("sum", "SUM", sum)
aggregate("average", "AVERAGE", lambda v: sum(v) // len(v))
aggregate("max", "MAX", max)
aggregate("min", "MIN", min)
aggregate("median", "MEDIAN", statistics.median)
aggregate("count", "COUNT", len)


@register_template("calc-count-above", "calc", tools=True)
def count_above(rng: random.Random, task_id: str) -> Instance:
    """COUNTIF over column B with a seeded threshold."""
    rows, values = named_column(rng)
    threshold = sorted(values)[len(values) // 2]
    last, cell = len(rows), f"E{rng.randint(2, 3)}"
    formula = f'=COUNTIF(B2:B{last};">{threshold}")'
    wrong = f'=COUNTIF(B2:B{last};">={threshold}")'
    instruction = (
        f"In {{file}}, put into cell {cell} how many values in B2:B{last} are greater than {threshold}."
    )
    gold = with_cell(rows, cell, sum(v > threshold for v in values))
    return calc_instance(
        task_id, rng, instruction, rows, gold, {cell: [formula]}, {cell: [wrong]}, set_cells(cell, [formula])
    )


def per_row(template_id: str, header: str, op: str, describe: str, fn: Callable[[int, int], int]) -> None:
    """Registers a template filling column C with ``A<op>B`` for every data row."""

    @register_template(template_id, "calc", tools=True)
    def build(rng: random.Random, task_id: str) -> Instance:
        n = rng.randint(4, 6)
        a, b = numbers(rng, n, 2, 40), numbers(rng, n, 2, 40)
        cols = rng.choice((["Start", "End"], ["Before", "After"], ["Q1", "Q2"]))
        rows: Rows = [cols, *([x, y] for x, y in zip(a, b, strict=True))]
        gold: Rows = [[*cols, header], *([x, y, fn(x, y)] for x, y in zip(a, b, strict=True))]
        formulas = [f"=A{r}{op}B{r}" for r in range(2, n + 2)]
        wrong = [*formulas[:-1], f"=A{n + 1}{op}B{n}"]
        instruction = (
            f'In {{file}}, write the header "{header}" in C1 and, in C2:C{n + 1}, {describe} of each row.'
        )
        entries = {"C1": [header, *formulas]}
        return calc_instance(
            task_id,
            rng,
            instruction,
            rows,
            gold,
            entries,
            {"C1": [header, *wrong]},
            set_cells("C1", [header, *formulas]),
        )


per_row("calc-row-product", "Product", "*", "the product of columns A and B", lambda x, y: x * y)
per_row("calc-row-difference", "Change", "-", "column A minus column B", lambda x, y: x - y)
per_row("calc-row-total", "Total", "+", "the sum of columns A and B", lambda x, y: x + y)


@register_template("calc-fix-cell", "calc", tools=True)
def fix_cell(rng: random.Random, task_id: str) -> Instance:
    """One seeded cell holds a typo; the instruction gives the right number."""
    rows, values = named_column(rng)
    r = rng.randint(2, len(rows))
    right = values[r - 2] + rng.randint(1, 9)
    name = rows[r - 1][0]
    instruction = f"In {{file}}, the value of {name} in column B is wrong: it must be {right}. Fix that cell."
    gold = with_cell(rows, f"B{r}", right)
    other = f"B{2 if r != 2 else 3}"
    return calc_instance(
        task_id,
        rng,
        instruction,
        rows,
        gold,
        {f"B{r}": [str(right)]},
        {other: [str(right)]},
        set_cells(f"B{r}", [str(right)]),
    )


@register_template("calc-append-row", "calc", tools=True)
def append_row(rng: random.Random, task_id: str) -> Instance:
    """A new (name, number) row after the last one."""
    rows, _values = named_column(rng)
    used = {r[0] for r in rows[1:]}
    name = rng.choice([n for n in NAMES if n not in used])
    value = rng.randint(100, 199)
    r = len(rows) + 1
    instruction = f"In {{file}}, add a row for {name} with the value {value} right below the last row."
    gold = [*rows, [name, value]]
    return calc_instance(
        task_id,
        rng,
        instruction,
        rows,
        gold,
        {f"A{r}": [name], f"B{r}": [str(value)]},
        {f"A{r}": [name], f"B{r}": [str(value + 10)]},
        [*set_cells(f"A{r}", [name]), *set_cells(f"B{r}", [str(value)])],
    )


@register_template("calc-sort-column", "calc", tools=True)
def sort_column(rng: random.Random, task_id: str) -> Instance:
    """One numeric column to sort (ascending or descending, by seed)."""
    n = rng.randint(5, 8)
    values = numbers(rng, n)
    header = rng.choice(("Score", "Length", "Weight", "Count"))
    ascending = rng.random() < 0.5
    ordered = sorted(values, reverse=not ascending)
    rows: Rows = [[header], *([v] for v in values)]
    gold: Rows = [[header], *([v] for v in ordered)]
    wrong = sorted(values, reverse=ascending)
    order = "ascending" if ascending else "descending"
    instruction = f"In {{file}}, sort the values of column A (below the header) in {order} order."
    return calc_instance(
        task_id,
        rng,
        instruction,
        rows,
        gold,
        {"A2": [str(v) for v in ordered]},
        {"A2": [str(v) for v in wrong]},
        [tool("libreoffice_calc.sort_column", column_name="A", ascending=ascending, start_index=2)],
    )


@register_template("calc-scale-column", "calc", tools=True)
def scale_column(rng: random.Random, task_id: str) -> Instance:
    """Column B = column A times a seeded factor (units conversion)."""
    n = rng.randint(4, 7)
    factor, unit_a, unit_b = rng.choice(
        ((100, "Meters", "Centimeters"), (1000, "Kilograms", "Grams"), (60, "Hours", "Minutes"))
    )
    values = numbers(rng, n, 1, 30)
    rows: Rows = [[unit_a], *([v] for v in values)]
    gold: Rows = [[unit_a, unit_b], *([v, v * factor] for v in values)]
    formulas = [f"=A{r}*{factor}" for r in range(2, n + 2)]
    wrong = [f"=A{r}*{factor // 10}" for r in range(2, n + 2)]
    instruction = (
        f'In {{file}}, write "{unit_b}" in B1 and, in B2:B{n + 1}, '
        f"convert each value of column A to {unit_b.lower()}."
    )
    return calc_instance(
        task_id,
        rng,
        instruction,
        rows,
        gold,
        {"B1": [unit_b, *formulas]},
        {"B1": [unit_b, *wrong]},
        set_cells("B1", [unit_b, *formulas]),
    )

"""Multi-app templates: a fact read in one app (or file) is written in another.

The setup opens the source first and the target last, so the target has the focus;
the oracles know the fact from the seed and edit the target only (the GUI oracle by
keyboard, the tool oracle through the target's MCP namespace).
"""

from __future__ import annotations

import random

from osworld_mcp_env.tasks.bundled import calc, writer
from osworld_mcp_env.tasks.bundled.files import docx_bytes, text, xlsx
from osworld_mcp_env.tasks.bundled.office import open_document
from osworld_mcp_env.tasks.bundled.os import TERMINAL_OVER_APP, os_instance, terminal_setup
from osworld_mcp_env.tasks.templates import (
    HOME,
    NAMES,
    WORDS,
    Instance,
    file_stem,
    register_template,
)


def sheet(rng: random.Random) -> tuple[str, list[list], list[int], list[str]]:
    """A seeded (name, amount) workbook: its guest path, rows, amounts and names."""
    rows, values = calc.named_column(rng)
    return f"{HOME}/{file_stem(rng)}_table.xlsx", rows, values, [r[0] for r in rows[1:]]


def calc_to_writer(template_id: str, what: str) -> None:
    """Registers: a fact of the open workbook replaces ``TBD`` in the open report."""

    @register_template(template_id, "multi_apps", tools=True)
    def build(rng: random.Random, task_id: str) -> Instance:
        book, rows, values, names = sheet(rng)
        header = rows[0][1].lower()
        fact, wrong, phrase = {
            "total": (str(sum(values)), str(sum(values[:-1])), f"the total of the {header} column"),
            "top": (
                names[values.index(max(values))],
                names[values.index(min(values))],
                f"the name with the most {header}",
            ),
            "count": (str(len(values)), str(len(values) + 1), "the number of data rows"),
        }[what]
        paragraphs = ["Weekly summary", f"Result: TBD {header}.", "End of report."]
        instance = writer.writer_doc(
            task_id,
            rng,
            f"The workbook {book.rsplit('/', 1)[1]} is open in Calc and {{file}} in Writer. In the report, "
            f"replace TBD with {phrase} from the workbook.",
            paragraphs,
            [p.replace("TBD", fact) for p in paragraphs],
            writer.find_and_type("TBD", fact),
            writer.find_and_type("TBD", wrong),
            writer.replace_tools("TBD", fact),
        )
        task = instance.task
        task["snapshot"] = "multi_apps"
        task["config"][1:1] = open_document(book)
        task["related_apps"] = ["libreoffice_calc", "libreoffice_writer"]
        return Instance(
            task,
            {book: xlsx(rows), **instance.inputs},
            instance.gold,
            instance.gui,
            instance.tools,
            instance.near_miss,
        )


calc_to_writer("multi-calc-total-to-writer", "total")
calc_to_writer("multi-calc-top-to-writer", "top")
calc_to_writer("multi-calc-count-to-writer", "count")


def with_source_open(instance: Instance, source: str, data: bytes, apps: list[str]) -> Instance:
    """``instance`` with ``source`` uploaded and opened before its own target."""
    task = instance.task
    task["snapshot"] = "multi_apps"
    task["config"][1:1] = open_document(source)
    task["related_apps"] = apps
    return Instance(
        task,
        {source: data, **instance.inputs},
        instance.gold,
        instance.gui,
        instance.tools,
        instance.near_miss,
    )


@register_template("multi-writer-amount-to-calc", "multi_apps", tools=True)
def writer_to_calc(rng: random.Random, task_id: str) -> Instance:
    """An amount stated in a report entered as a new row of the open workbook."""
    rows, _values = calc.named_column(rng)
    used = {r[0] for r in rows[1:]}
    name = rng.choice([n for n in NAMES if n not in used])
    amount = rng.randint(200, 299)
    doc = f"{HOME}/{file_stem(rng)}_memo.docx"
    memo = ["Memo", f"{name} reached {amount} this week.", "Please record it."]
    r = len(rows) + 1
    inner = calc.calc_instance(
        task_id,
        rng,
        f"The memo {doc.rsplit('/', 1)[1]} is open in Writer and {{file}} in Calc. Add a row at the bottom "
        "of the sheet with the person and the number the memo reports.",
        rows,
        [*rows, [name, amount]],
        {f"A{r}": [name], f"B{r}": [str(amount)]},
        {f"A{r}": [name], f"B{r}": [str(amount - 100)]},
        [*calc.set_cells(f"A{r}", [name]), *calc.set_cells(f"B{r}", [str(amount)])],
    )
    return with_source_open(inner, doc, docx_bytes(memo), ["libreoffice_writer", "libreoffice_calc"])


@register_template("multi-textfile-to-calc", "multi_apps", tools=True)
def textfile_to_calc(rng: random.Random, task_id: str) -> Instance:
    """A rate from a text file (found by its path in the instruction) into a cell of the workbook."""
    rows, _values = calc.named_column(rng)
    rate = rng.randint(11, 29)
    src = f"{HOME}/{rng.choice(WORDS)}_rates.txt"
    cell = f"D{rng.randint(2, 4)}"
    inner = calc.calc_instance(
        task_id,
        rng,
        f"The file {src} gives a tax rate. Put that rate (the number only) into cell {cell} of {{file}}.",
        rows,
        calc.with_cell(rows, cell, rate),
        {cell: [str(rate)]},
        {cell: [str(rate + 1)]},
        calc.set_cells(cell, [str(rate)]),
    )
    inner.task["snapshot"] = "multi_apps"
    inner.task["related_apps"] = ["os", "libreoffice_calc"]
    data = text(["# rates", f"tax_rate={rate}", f"discount_rate={rate + 5}"])
    return Instance(
        inner.task, {src: data, **inner.inputs}, inner.gold, inner.gui, inner.tools, inner.near_miss
    )


@register_template("multi-textfile-to-writer", "multi_apps", tools=True)
def textfile_to_writer(rng: random.Random, task_id: str) -> Instance:
    """A reference code from a text file replaces a placeholder in the open document."""
    code = f"REF-{rng.randint(10000, 99999)}"
    src = f"{HOME}/{rng.choice(WORDS)}_reference.txt"
    paragraphs = ["Order confirmation", "Your reference is [REF].", "Thank you."]
    inner = writer.writer_doc(
        task_id,
        rng,
        f"Replace the placeholder [REF] in {{file}} with the reference code written in {src}.",
        paragraphs,
        [p.replace("[REF]", code) for p in paragraphs],
        writer.find_and_type("[REF]", code),
        writer.find_and_type("[REF]", code[:-1]),
        writer.replace_tools("[REF]", code),
    )
    inner.task["snapshot"] = "multi_apps"
    inner.task["related_apps"] = ["os", "libreoffice_writer"]
    return Instance(
        inner.task, {src: text([code]), **inner.inputs}, inner.gold, inner.gui, inner.tools, inner.near_miss
    )


@register_template("multi-calc-to-textfile", "multi_apps", tools=False)
def calc_to_textfile(rng: random.Random, task_id: str) -> Instance:
    """The largest amount of a workbook (opened in Calc) written to a file from the terminal."""
    book, rows, values, _names = sheet(rng)
    out = f"{HOME}/answer_{rng.randint(10, 99)}.txt"
    best = max(values)
    setup = [*open_document(book), *terminal_setup(HOME)]
    instance = os_instance(
        task_id,
        f"The workbook {book} is open in Calc. Write the largest number of its column B into {out} "
        "(only the number, on one line).",
        {book: xlsx(rows)},
        f"cat {out}",
        f"{best}\n",
        f"echo {best} > {out}",
        f"echo {min(values)} > {out}",
        None,
        related=("libreoffice_calc", "os", "terminal"),
        setup=setup,
        terminal_at=TERMINAL_OVER_APP,
    )
    instance.task["snapshot"] = "multi_apps"
    return instance


@register_template("multi-writer-to-textfile", "multi_apps", tools=False)
def writer_to_textfile(rng: random.Random, task_id: str) -> Instance:
    """A code stated in an open document written to a file from the terminal."""
    code = f"{rng.choice(WORDS).upper()}-{rng.randint(100, 999)}"
    doc = f"{HOME}/{file_stem(rng)}.docx"
    out = f"{HOME}/code.txt"
    setup = [*open_document(doc), *terminal_setup(HOME)]
    instance = os_instance(
        task_id,
        f"The document {doc} is open in Writer; it states an access code. Write that code into {out} "
        "(only the code, on one line).",
        {doc: docx_bytes(["Access", f"The access code is {code}.", "Keep it private."])},
        f"cat {out}",
        f"{code}\n",
        f"echo {code} > {out}",
        f"echo {code.lower()} > {out}",
        None,
        related=("libreoffice_writer", "os", "terminal"),
        setup=setup,
        terminal_at=TERMINAL_OVER_APP,
    )
    instance.task["snapshot"] = "multi_apps"
    return instance

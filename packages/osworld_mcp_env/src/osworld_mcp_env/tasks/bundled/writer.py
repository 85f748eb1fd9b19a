"""Writer templates: edits of a seeded docx, checked by ``compare_docx_files`` against a gold docx.

GUI oracles are keyboard only: the find toolbar (``ctrl+f``, Return selects the next
match, Escape leaves it selected in the text) then typing over the selection;
``ctrl+s`` saves (docx, no dialog). ``ax`` oracles find each paragraph to change by its
text (``ax.find(role="paragraph", text=...)``), then one ``ax.act`` rewrites it through
its EditableText (``set_text``), or, where a paragraph break is made or removed (which
a paragraph's own text cannot hold), sends keys to its ref; then saves.
"""

from __future__ import annotations

import random
import re
from typing import Any

from osworld_mcp_env.tasks import ax_script
from osworld_mcp_env.tasks.bundled.files import docx_bytes
from osworld_mcp_env.tasks.bundled.office import idle_postconfig, open_document
from osworld_mcp_env.tasks.templates import (
    DONE,
    HOME,
    NAMES,
    SAVE,
    WORDS,
    Call,
    Instance,
    file_stem,
    key,
    register_template,
    task_dict,
    tool,
    type_text,
)

SAVE_TOOL = tool("libreoffice_writer.save")
CITIES = ("Lisbon", "Oslo", "Tallinn", "Porto", "Geneva", "Dublin", "Krakow", "Lyon")


def find_and_type(search: str, replacement: str, times: int = 1) -> list[Call]:
    """Selects the next match of ``search`` and types ``replacement`` over it (``""``: deletes it)."""
    calls = [key("ctrl", "Home")]
    for _ in range(times):
        calls += [key("ctrl", "f"), type_text(search), key("Return"), key("Escape")]
        calls.append(type_text(replacement) if replacement else key("Delete"))
    return calls


AxRoute = tuple[list[Call], list[dict[str, Any]]]
"""An ``ax`` oracle's finds (each binding a ref to a name) and the steps of its one ``ax.act``."""


def rewrite_paragraphs(paragraphs: list[str], gold: list[str]) -> AxRoute:
    """The ``ax`` route of an edit inside paragraphs: each changed paragraph's text set whole."""
    changed = [(i, new) for i, (old, new) in enumerate(zip(paragraphs, gold, strict=True)) if old != new]
    finds = [ax_script.find(f"p{i}", role="paragraph", text=paragraphs[i]) for i, _ in changed]
    return finds, [ax_script.op("set_text", f"p{i}", text=new) for i, new in changed]


def keys_at_paragraph(paragraph: str, *steps: dict[str, Any]) -> AxRoute:
    """The ``ax`` route of a paragraph break: ``steps`` (keys, typing) at the paragraph's ref ``p``."""
    return [ax_script.find("p", role="paragraph", text=paragraph)], list(steps)


def writer_doc(
    task_id: str,
    rng: random.Random,
    instruction: str,
    paragraphs: list[str],
    gold: list[str],
    gui: list[Call],
    wrong: list[Call],
    tools: list[Call] | None,
    paragraph_breaks: bool = False,
    ax: AxRoute | None = None,
) -> Instance:
    """A Writer task on ``<stem>.docx``; ``instruction`` may use ``{file}``.

    ``paragraph_breaks``: the task is about where paragraphs begin and end, so the
    check compares paragraph by paragraph (``ignore_blanks: false``); by OSWorld's
    default, ``compare_docx_files`` compares the whitespace-collapsed text, in which
    a paragraph break and a space are the same.

    ``ax``: the ``ax`` oracle's route, its act saving at the end; default: each changed
    paragraph rewritten (:func:`rewrite_paragraphs`), for edits that keep the paragraphs.
    """
    name = f"{file_stem(rng)}.docx"
    path = f"{HOME}/{name}"
    gold_name = name.replace(".docx", "_gold.docx")
    finds, steps = ax or rewrite_paragraphs(paragraphs, gold)
    task = task_dict(
        task_id,
        "libreoffice_writer",
        instruction.format(file=name) + " Then save the file in its current format (Word docx).",
        open_document(path),
        {
            "func": "compare_docx_files",
            "result": {"type": "vm_file", "path": path, "dest": name},
            "expected": {"type": "cache_file", "path": gold_name},
            "postconfig": idle_postconfig(),
            **({"options": {"ignore_blanks": False}} if paragraph_breaks else {}),
        },
        ["libreoffice_writer"],
    )
    return Instance(
        task=task,
        inputs={path: docx_bytes(paragraphs)},
        gold={gold_name: docx_bytes(gold)},
        gui=[*gui, *SAVE, DONE],
        tools=None if tools is None else [*tools, SAVE_TOOL, DONE],
        near_miss=[*wrong, *SAVE, DONE],
        ax=[*finds, ax_script.act(*steps, ax_script.op("key", keys="ctrl+s")), DONE],
    )


def replace_tools(old: str, new: str) -> list[Call]:
    """The tool route of a literal replacement."""
    return [tool("libreoffice_writer.find_and_replace", pattern=re.escape(old), replacement=new)]


def letter(rng: random.Random, name: str, city: str, amount: int) -> list[str]:
    """A short seeded letter; every paragraph fits on one line."""
    topic = rng.choice(WORDS).capitalize()
    return [
        f"Project {topic}",
        f"Dear {name},",
        f"Our meeting in {city} is confirmed for next week.",
        f"The approved budget is {amount} euros.",
        "Please bring the signed forms with you.",
        "Best regards,",
    ]


def replacement_template(template_id: str, describe: str) -> None:
    """Registers a template replacing one seeded field of the letter (name, city or amount)."""

    @register_template(template_id, "writer", tools=True)
    def build(rng: random.Random, task_id: str) -> Instance:
        name, new_name = rng.sample(NAMES, 2)
        city, new_city = rng.sample(CITIES, 2)
        amount = rng.randint(20, 90) * 100
        paragraphs = letter(rng, name, city, amount)
        topic = paragraphs[0].split()[1]
        old, new = {
            "name": (name, new_name),
            "city": (city, new_city),
            "amount": (str(amount), str(amount + rng.randint(1, 9) * 100)),
            "topic": (topic, next(w.capitalize() for w in WORDS if w.capitalize() != topic)),
            "closing": ("Best regards", rng.choice(("Kind regards", "Warm regards", "Yours sincerely"))),
        }[describe]
        gold = [p.replace(old, new) for p in paragraphs]
        typo = new[:-1] + ("x" if new[-1] != "x" else "y")
        instruction = f'In the letter {{file}}, replace "{old}" with "{new}".'
        return writer_doc(
            task_id,
            rng,
            instruction,
            paragraphs,
            gold,
            find_and_type(old, new),
            find_and_type(old, typo),
            replace_tools(old, new),
        )


replacement_template("writer-replace-name", "name")
replacement_template("writer-replace-city", "city")
replacement_template("writer-replace-amount", "amount")
replacement_template("writer-rename-project", "topic")
replacement_template("writer-change-closing", "closing")


@register_template("writer-fill-placeholder", "writer", tools=True)
def fill_placeholder(rng: random.Random, task_id: str) -> Instance:
    """A ``[FIELD]`` placeholder replaced by a seeded value."""
    field, value = rng.choice((("[CITY]", rng.choice(CITIES)), ("[NAME]", rng.choice(NAMES))))
    paragraphs = letter(
        rng,
        field if field == "[NAME]" else rng.choice(NAMES),
        field if field == "[CITY]" else rng.choice(CITIES),
        500,
    )
    gold = [p.replace(field, value) for p in paragraphs]
    instruction = f"The letter {{file}} still has the placeholder {field}. Replace it with {value}."
    return writer_doc(
        task_id,
        rng,
        instruction,
        paragraphs,
        gold,
        find_and_type(field, value),
        find_and_type(field, value.lower()),
        replace_tools(field, value),
    )


@register_template("writer-fix-typo", "writer", tools=True)
def fix_typo(rng: random.Random, task_id: str) -> Instance:
    """A misspelled word (two letters swapped) to correct."""
    word = rng.choice(("confirmed", "approved", "signed", "regards"))
    i = rng.randint(1, len(word) - 3)
    typo = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    good = letter(rng, rng.choice(NAMES), rng.choice(CITIES), 700)
    paragraphs = [p.replace(word, typo) for p in good]
    instruction = f'The letter {{file}} misspells "{word}" as "{typo}". Correct it.'
    return writer_doc(
        task_id,
        rng,
        instruction,
        paragraphs,
        good,
        find_and_type(typo, word),
        find_and_type(typo, word.upper()),
        replace_tools(typo, word),
    )


@register_template("writer-replace-all", "writer", tools=True)
def replace_all(rng: random.Random, task_id: str) -> Instance:
    """A product name that occurs three times, all to rename."""
    old, new = (w.capitalize() for w in rng.sample(WORDS, 2))
    paragraphs = [
        f"Release notes for {old}",
        f"This version of {old} loads files faster.",
        f"Users of {old} can now export tables.",
        "Thank you for your feedback.",
    ]
    gold = [p.replace(old, new) for p in paragraphs]
    instruction = f'In {{file}}, rename the product "{old}" to "{new}" everywhere.'
    return writer_doc(
        task_id,
        rng,
        instruction,
        paragraphs,
        gold,
        find_and_type(old, new, times=3),
        find_and_type(old, new, times=2),
        replace_tools(old, new),
    )


@register_template("writer-delete-sentence", "writer", tools=True)
def delete_sentence(rng: random.Random, task_id: str) -> Instance:
    """One sentence inside a paragraph to remove (with its trailing space)."""
    extra = rng.choice(("Lunch is not included.", "Parking is free.", "The room has a projector."))
    paragraphs = letter(rng, rng.choice(NAMES), rng.choice(CITIES), 800)
    i = 2
    paragraphs[i] = f"{paragraphs[i][:-1]}. {extra} Arrive early."
    gold = [*paragraphs]
    gold[i] = paragraphs[i].replace(f"{extra} ", "")
    instruction = f'In {{file}}, delete the sentence "{extra}".'
    return writer_doc(
        task_id,
        rng,
        instruction,
        paragraphs,
        gold,
        find_and_type(f"{extra} ", ""),
        find_and_type("Arrive early.", ""),
        replace_tools(f"{extra} ", ""),
    )


@register_template("writer-append-paragraph", "writer", tools=False)
def append_paragraph(rng: random.Random, task_id: str) -> Instance:
    """A closing paragraph typed after the last one (no tool adds a paragraph)."""
    paragraphs = letter(rng, rng.choice(NAMES), rng.choice(CITIES), 900)
    signer = rng.choice(NAMES)
    gold = [*paragraphs, signer]
    instruction = f'Add a new last paragraph to {{file}} that contains only the name "{signer}".'
    gui = [key("ctrl", "End"), type_text(f"\n{signer}")]
    wrong = [key("ctrl", "End"), type_text(f" {signer}")]
    ax = keys_at_paragraph(
        paragraphs[-1], ax_script.op("key", "p", keys="ctrl+End"), ax_script.op("type", text=f"\n{signer}")
    )
    return writer_doc(
        task_id, rng, instruction, paragraphs, gold, gui, wrong, None, paragraph_breaks=True, ax=ax
    )


@register_template("writer-insert-title", "writer", tools=False)
def insert_title(rng: random.Random, task_id: str) -> Instance:
    """A new first paragraph (a title) above the existing text."""
    paragraphs = letter(rng, rng.choice(NAMES), rng.choice(CITIES), 400)[1:]
    title = f"Invitation {rng.randint(100, 999)}"
    gold = [title, *paragraphs]
    instruction = f'Insert a new first paragraph "{title}" at the top of {{file}}, above the existing text.'
    gui = [key("ctrl", "Home"), type_text(f"{title}\n")]
    wrong = [key("ctrl", "Home"), type_text(f"{title} ")]
    ax = keys_at_paragraph(
        paragraphs[0], ax_script.op("key", "p", keys="ctrl+Home"), ax_script.op("type", text=f"{title}\n")
    )
    return writer_doc(
        task_id, rng, instruction, paragraphs, gold, gui, wrong, None, paragraph_breaks=True, ax=ax
    )


@register_template("writer-delete-paragraph", "writer", tools=False)
def delete_paragraph(rng: random.Random, task_id: str) -> Instance:
    """A whole paragraph to remove (the paragraph break too: no tool removes one)."""
    paragraphs = letter(rng, rng.choice(NAMES), rng.choice(CITIES), 600)
    target = paragraphs[4]
    gold = [p for p in paragraphs if p != target]
    instruction = f'Delete the paragraph "{target}" from {{file}} (no empty line may remain).'
    gui = [*find_and_type(target, ""), key("Delete")]
    wrong = find_and_type(target, "")
    # Emptied through its text, the paragraph then takes Delete at its only offset: the break goes.
    ax = keys_at_paragraph(
        target, ax_script.op("set_text", "p", text=""), ax_script.op("key", "p", keys="Delete")
    )
    return writer_doc(
        task_id, rng, instruction, paragraphs, gold, gui, wrong, None, paragraph_breaks=True, ax=ax
    )

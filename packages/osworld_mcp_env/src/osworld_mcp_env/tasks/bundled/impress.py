"""Impress templates: a text box of a seeded deck rewritten, checked on the saved pptx.

The check reads the slide's XML inside the saved file (a ``python3`` one-liner run
as the desktop user) and compares the slide's text with ``exact_match``. The GUI
oracle clicks the slide's thumbnail, triple-clicks the box's text and types the new text
over it; ``ctrl+s`` saves (pptx, no dialog).
"""

from __future__ import annotations

import random

from osworld_mcp_env.tasks.bundled.files import pptx_bytes
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
    gui,
    key,
    register_template,
    task_dict,
    tool,
    type_text,
)

SLIDE_TEXT = (
    "python3 -c \"import re,sys,zipfile; x=zipfile.ZipFile(sys.argv[1]).read('ppt/slides/slide{n}.xml')"
    ".decode(); print('|'.join(re.findall('<a:t>([^<]*)</a:t>', x)))\" {path}"
)


def deck(rng: random.Random) -> list[tuple[str, str]]:
    """Three or four seeded (title, body) slides."""
    topics = rng.sample(WORDS, rng.randint(3, 4))
    return [(f"{t.capitalize()} plan", f"Owner {rng.choice(NAMES)}") for t in topics]


# Where the desktop's Impress (1920x1080, sidebar open) shows things, in screen pixels:
# the Slides pane's thumbnails (one every 116 px) and a point on the text of each
# placeholder of the shown slide (title centred, body's first line), the same at every zoom
# the window opens with.
THUMBNAIL_X, FIRST_THUMBNAIL_Y, THUMBNAIL_STEP = 99, 218, 116
BOX_TEXT = ((850, 246), (546, 382))


def edit_box(slide: int, box: int, new: str) -> list[Call]:
    """GUI route: show the slide, triple-click the box's text (selects its one paragraph), type over it.

    Mouse clicks, not Tab then Return then ctrl+a: Impress enters text edit on Return
    through a posted event, so a ctrl+a right behind it could select the slide's objects
    instead of the text, and the new text was appended on a loaded machine.
    """
    thumbnail = [THUMBNAIL_X, FIRST_THUMBNAIL_Y + slide * THUMBNAIL_STEP]
    return [
        gui("left_click", coordinate=thumbnail),
        gui("triple_click", coordinate=list(BOX_TEXT[box])),
        type_text(new),
        key("Escape"),
        key("Escape"),
    ]


def rewrite_template(template_id: str, box: int, make: str) -> None:
    """Registers a template that rewrites box ``box`` (0 title, 1 body) of a seeded slide."""

    @register_template(template_id, "impress", tools=True)
    def build(rng: random.Random, task_id: str) -> Instance:
        slides = deck(rng)
        k = rng.randrange(len(slides))
        old = slides[k][box]
        new, wrong, ask = {
            "title": (f"{rng.choice(WORDS).capitalize()} review", None, "change the title of slide {n} to"),
            "owner": (
                f"Owner {rng.choice([n for n in NAMES if n not in old])}",
                None,
                "set the text below the title of slide {n} to",
            ),
            "status": ("Status done", None, "replace the text below the title of slide {n} with"),
            "upper": (old.upper(), None, "write the title of slide {n} in capitals:"),
            "due": (
                f"Due 2025-0{rng.randint(1, 9)}-{rng.randint(10, 28)}",
                None,
                "set the text below the title of slide {n} to",
            ),
            "year": (f"{old.split()[0]} {rng.randint(2025, 2030)}", None, "change the title of slide {n} to"),
        }[make]
        wrong = new[:-1]
        name = f"{file_stem(rng)}.pptx"
        path = f"{HOME}/{name}"
        gold = [*slides]
        gold[k] = (new, slides[k][1]) if box == 0 else (slides[k][0], new)
        instruction = f'In the presentation {name}, {ask.format(n=k + 1)} "{new}". Then save it as pptx.'
        task = task_dict(
            task_id,
            "libreoffice_impress",
            instruction,
            open_document(path),
            {
                "func": "exact_match",
                "result": {
                    "type": "vm_command_line",
                    "command": SLIDE_TEXT.format(n=k + 1, path=path),
                    "shell": True,
                },
                "expected": {"type": "rule", "rules": {"expected": "|".join(gold[k]) + "\n"}},
                "postconfig": idle_postconfig(),
            },
            ["libreoffice_impress"],
        )
        return Instance(
            task=task,
            inputs={path: pptx_bytes(slides)},
            gold={},
            gui=[*edit_box(k, box, new), *SAVE, DONE],
            tools=[
                tool("libreoffice_impress.write_text", content=new, page_index=k + 1, box_index=box),
                tool("libreoffice_impress.save"),
                DONE,
            ],
            near_miss=[*edit_box(k, box, wrong), *SAVE, DONE],
        )


rewrite_template("impress-set-title", 0, "title")
rewrite_template("impress-set-body", 1, "owner")
rewrite_template("impress-update-title-year", 0, "year")
rewrite_template("impress-set-status", 1, "status")
rewrite_template("impress-title-capitals", 0, "upper")
rewrite_template("impress-set-due-date", 1, "due")

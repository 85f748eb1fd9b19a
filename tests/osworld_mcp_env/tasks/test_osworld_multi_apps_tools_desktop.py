"""OSWorld multi-app tasks about code, PDFs and documents, from their shipped JSON (-m desktop).

Tasks 20236825 and f918266a (complete a script, save its output), 26150609 and 9219480b
(fix a pygame snake / a tetris game in VS Code, scored by the task's own test suite),
98e8e339 (merge a VS Code project's .txt files into a Writer document), 5df7b33a (split
a book's PDF by chapter, named as chapter one is) and da922383 (save the blog posts open
in Chromium as PDFs, checked by the task's PyMuPDF script). The files they download and
their gold files are stand-ins made here, in the layout ``tasks fetch`` fills, as in
:mod:`test_osworld_cached_tasks_desktop` (whose helpers this reuses). Each gold is made
on the host by another route than the oracle's, from data chosen here: an output
computed by the host's Python, a document written by python-docx (the oracle converts
with LibreOffice), chapter PDFs written page by page (the oracle splits the book with
pypdf), a test suite or checking script written by hand. The no-op scores 0, the oracle,
in the agent's own bash actions, scores 1. VS Code is code-server here (``guest/bin/code``);
the oracles edit the files it has open on disk.
"""

from __future__ import annotations

import importlib.util
import io
import json
import shutil
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path

import docx
import docx.shared
import gymnasium as gym
import pytest
import test_osworld_website_episodes_desktop as web
from osworld_mcp_env.evaluators import METRICS
from osworld_mcp_env.tasks import read_task_file
from osworld_mcp_env.tasks.coverage import coverage
from stand_in_sites import StandIn, stand_in_env, stand_in_sites, trusting
from task_data import OSWORLD_EXAMPLES, fill_stand_in_cache, soffice_convert, zip_bytes
from test_osworld_cached_tasks_desktop import Case, text_pdf

pytestmark = [pytest.mark.desktop, pytest.mark.slow]

HOSTS = ["lilianweng.github.io"]


def _python(script: str) -> dict:
    """A bash action that runs ``script`` with the desktop's python (a heredoc, no quoting)."""
    return web.bash(f"python3 - <<'EOF'\n{textwrap.dedent(script).strip()}\nEOF")


def _edit(path: str, old: str, new: str) -> dict:
    """Replaces ``old`` (which must be there) with ``new`` in the desktop file ``path``."""
    return _python(f"""
        import pathlib
        path = pathlib.Path({path!r}).expanduser()
        text = path.read_text()
        assert {old!r} in text, text
        path.write_text(text.replace({old!r}, {new!r}))
    """)


# 20236825: the tutorial's bubble sort, to be written into bubbleSort.py and run.
NUMBERS = [64, 34, 25, 12, 22, 11, 90, 5]
BUBBLE_STUB = f"""def bubbleSort(arr):
    n = len(arr)
    # TODO: complete the bubble sort as the tutorial shows
    pass


if __name__ == "__main__":
    arr = {NUMBERS}
    bubbleSort(arr)
    print("Sorted array is:", arr)
"""
BUBBLE_TODO = "    # TODO: complete the bubble sort as the tutorial shows\n    pass\n"
BUBBLE_BODY = """    for i in range(n):
        for j in range(0, n - i - 1):
            if arr[j] > arr[j + 1]:
                arr[j], arr[j + 1] = arr[j + 1], arr[j]
"""


def _bubble_files(_tmp: Path) -> dict[str, bytes]:
    tutorial = docx.Document()
    tutorial.add_heading("Bubble Sort", 1)
    tutorial.add_paragraph("Repeatedly swap adjacent elements that are in the wrong order.")
    data = io.BytesIO()
    tutorial.save(data)
    return {
        "bubbleSort.zip": zip_bytes({"bubbleSort.py": BUBBLE_STUB}),
        "Bubble_Sort_tutorial.docx": data.getvalue(),
        "res_Gold.txt": f"Sorted array is: {sorted(NUMBERS)}\n".encode(),  # the host's sort
    }


# f918266a: a calculator with two operations left to write; its run is the log.
PAIRS = [(12, 4), (7, 2), (-9, 3)]
CALCULATOR = f"""def add(a, b):
    return a + b


def subtract(a, b):
    return a - b


def multiply(a, b):
    pass  # TODO


def divide(a, b):
    pass  # TODO


if __name__ == "__main__":
    for a, b in {PAIRS}:
        print(f"{{a}} + {{b}} = {{add(a, b)}}")
        print(f"{{a}} - {{b}} = {{subtract(a, b)}}")
        print(f"{{a}} * {{b}} = {{multiply(a, b)}}")
        print(f"{{a}} / {{b}} = {{divide(a, b)}}")
"""


def _calculator_files(_tmp: Path) -> dict[str, bytes]:
    log = "".join(
        f"{a} + {b} = {a + b}\n{a} - {b} = {a - b}\n{a} * {b} = {a * b}\n{a} / {b} = {a / b}\n"
        for a, b in PAIRS
    )
    return {"calculator.zip": zip_bytes({"calculator.py": CALCULATOR}), "log_Gold.txt": log.encode()}


# 26150609: the snake compares its head with the Food object, never its position.
SNAKE = {
    "settings.py": "CELL = 20\nWIDTH, HEIGHT = 400, 400\nFPS = 10\n",
    "food.py": """import random

import pygame

from settings import CELL, HEIGHT, WIDTH


class Food:
    def __init__(self):
        self.respawn()

    def respawn(self):
        self.position = (random.randrange(0, WIDTH, CELL), random.randrange(0, HEIGHT, CELL))

    def draw(self, screen):
        pygame.draw.rect(screen, (200, 0, 0), pygame.Rect(*self.position, CELL, CELL))
""",
    "snake.py": """import pygame

from settings import CELL


class Snake:
    def __init__(self):
        self.body = [(100, 100), (80, 100), (60, 100)]
        self.direction = (CELL, 0)
        self.growing = False

    def move(self):
        x, y = self.body[0]
        self.body.insert(0, (x + self.direction[0], y + self.direction[1]))
        if self.growing:
            self.growing = False
        else:
            self.body.pop()

    def eats(self, food):
        return self.body[0] == food

    def draw(self, screen):
        for x, y in self.body:
            pygame.draw.rect(screen, (0, 200, 0), pygame.Rect(x, y, CELL, CELL))
""",
    "main.py": """import pygame

from food import Food
from settings import FPS, HEIGHT, WIDTH
from snake import Snake


def step(snake, food):
    snake.move()
    if snake.eats(food):
        snake.growing = True
        food.respawn()
        return True
    return False


def main():
    pygame.init()
    screen = pygame.display.set_mode((WIDTH, HEIGHT))
    clock = pygame.time.Clock()
    snake, food = Snake(), Food()
    while not any(event.type == pygame.QUIT for event in pygame.event.get()):
        step(snake, food)
        screen.fill((0, 0, 0))
        snake.draw(screen)
        food.draw(screen)
        pygame.display.flip()
        clock.tick(FPS)


if __name__ == "__main__":
    main()
""",
}
# The task's test suite, by hand: food right ahead of the head is eaten and the snake grows.
SNAKE_SUITE = """import food
import main
import settings
import snake


def test():
    player, meal = snake.Snake(), food.Food()
    x, y = player.body[0]
    meal.position = (x + settings.CELL, y)
    if not main.step(player, meal):
        return False
    player.move()
    return len(player.body) == 4
"""

# 9219480b: rotating a block that sits at the right wall or the floor indexes past the board.
TETRIS = {
    "settings.py": "COLUMNS, ROWS = 10, 20\nCELL = 30\n",
    "block.py": """SHAPES = {
    "I": [(0, 0), (1, 0), (2, 0), (3, 0)],
    "L": [(0, 0), (0, 1), (0, 2), (1, 2)],
}


class Block:
    def __init__(self, cells, x, y):
        self.cells, self.x, self.y = list(cells), x, y

    def rotated(self):
        return [(dy, dx) for dx, dy in self.cells]

    def positions(self, cells=None):
        return [(self.x + dx, self.y + dy) for dx, dy in (cells or self.cells)]
""",
    "tetris.py": """from block import SHAPES, Block
from settings import COLUMNS, ROWS


class Tetris:
    def __init__(self):
        self.board = [[0] * COLUMNS for _ in range(ROWS)]
        self.block = Block(SHAPES["I"], COLUMNS // 2 - 2, 0)

    def fits(self, cells):
        return all(self.board[y][x] == 0 for x, y in self.block.positions(cells))

    def rotate(self):
        cells = self.block.rotated()
        if self.fits(cells):
            self.block.cells = cells
""",
    "main.py": """import pygame

from settings import CELL, COLUMNS, ROWS
from tetris import Tetris


def main():
    pygame.init()
    screen = pygame.display.set_mode((COLUMNS * CELL, ROWS * CELL))
    game = Tetris()
    while True:
        for event in pygame.event.get():
            if event.type == pygame.QUIT:
                return
            if event.type == pygame.KEYDOWN and event.key == pygame.K_UP:
                game.rotate()
        screen.fill((0, 0, 0))
        pygame.display.flip()


if __name__ == "__main__":
    main()
""",
}
TETRIS_FITS = "        return all(self.board[y][x] == 0 for x, y in self.block.positions(cells))\n"
TETRIS_FIX = (
    "        return all(\n"
    "            0 <= x < COLUMNS and 0 <= y < ROWS and self.board[y][x] == 0\n"
    "            for x, y in self.block.positions(cells)\n"
    "        )\n"
)
# The task's test suite, by hand: up at the right wall and at the floor neither crashes nor leaves the board.
TETRIS_SUITE = """import settings
import tetris


def test():
    for cells, x, y in [
        ([(0, 0), (0, 1), (0, 2), (0, 3)], settings.COLUMNS - 1, 0),
        ([(0, 0), (1, 0), (2, 0), (3, 0)], 0, settings.ROWS - 1),
    ]:
        game = tetris.Tetris()
        game.block.cells, game.block.x, game.block.y = cells, x, y
        try:
            game.rotate()
        except IndexError:
            return False
        inside = all(
            0 <= px < settings.COLUMNS and 0 <= py < settings.ROWS for px, py in game.block.positions()
        )
        if not inside:
            return False
    return True
"""

# 98e8e339: a VS Code project with .txt files among others; merged in name order, no separator.
PROJECT = {
    "a_intro.txt": "Document processing project.\nStep one reads the inputs.\n",
    "b_method.txt": "Each file is parsed line by line.\n",
    "c_results.txt": "All inputs were merged.\nThe end.\n",
    "process.py": "print('not a text file')\n",
    "notes.md": "# Notes\n",
}
MERGE = """cd ~/Desktop/doc_proc && cat *.txt > /tmp/concat.txt \\
&& soffice -env:UserInstallation=file:///tmp/merge-profile --headless \\
   --convert-to 'docx:MS Word 2007 XML' --outdir ~/Desktop /tmp/concat.txt && test -s ~/Desktop/concat.docx"""


def _merge_files(_tmp: Path) -> dict[str, bytes]:
    gold = docx.Document()
    gold.styles["Normal"].font.size = docx.shared.Pt(10)
    for name in sorted(n for n in PROJECT if n.endswith(".txt")):
        for line in PROJECT[name].splitlines():
            gold.add_paragraph(line)
    data = io.BytesIO()
    gold.save(data)
    return {"doc_proc.zip": zip_bytes(PROJECT), "concat_gold.docx": data.getvalue()}


# 5df7b33a: a book of three chapters, chapter one already split off and named as the example.
BOOK = "Spectral Graph Theory"
CHAPTERS = [
    ("Eigenvalues and the Laplacian of a graph", 2),
    ("Isoperimetric problems", 3),
    ("Diameters and eigenvalues", 1),
]


def _chapter_name(number: int, title: str) -> str:
    return f"Chapter {number} - {title}.pdf"


def _chapter_pages(number: int, title: str, pages: int) -> list[str]:
    return [f"Chapter {number} {title} page {page}" for page in range(1, pages + 1)]


def _book_files(_tmp: Path) -> dict[str, bytes]:
    every = [p for n, (title, pages) in enumerate(CHAPTERS, 1) for p in _chapter_pages(n, title, pages)]
    book = text_pdf(*every)
    chapters = {
        _chapter_name(n, t): text_pdf(*_chapter_pages(n, t, p)) for n, (t, p) in enumerate(CHAPTERS, 1)
    }
    first = _chapter_name(1, CHAPTERS[0][0])
    return {
        "book.zip": zip_bytes({f"book/{BOOK}.pdf": book, f"book/{first}": chapters[first]}),
        "gold_book.zip": zip_bytes({f"{BOOK}.pdf": book, **chapters}),  # the postconfig zips book/*.pdf
    }


# The oracle reads the chapters' first pages off the book and writes each chapter with pypdf.
SPLIT = f"""
    import pathlib, re
    from pypdf import PdfReader, PdfWriter
    folder = pathlib.Path.home() / "Desktop" / "book"
    reader = PdfReader(folder / "{BOOK}.pdf")
    starts = {{}}
    for index, page in enumerate(reader.pages):
        first = re.match(r"Chapter (\\d+) (.+) page 1$", page.extract_text())
        if first:
            starts[index] = (int(first[1]), first[2])
    firsts = sorted(starts) + [len(reader.pages)]
    for first, end in zip(firsts, firsts[1:]):
        number, title = starts[first]
        writer = PdfWriter()
        for page in reader.pages[first:end]:
            writer.add_page(page)
        writer.write(folder / f"Chapter {{number}} - {{title}}.pdf")
"""

# da922383: the two posts Chromium opens, saved as PDFs named by their titles.
POSTS = {
    "/posts/2023-06-23-agent/": ("LLM Powered Autonomous Agents", "Agent System Overview"),
    "/posts/2024-02-05-human-data-quality/": ("Thinking about High-Quality Human Data", "Human Raters"),
}
# The task's script, by hand: per post, 1 when ~/Documents/Blog has its PDF and the PDF has its text.
BLOG_SCRIPT = f"""import os

import pymupdf

BLOG = "/home/user/Documents/Blog"
POSTS = {list(POSTS.values())!r}
found = []
for title, phrase in POSTS:
    path = os.path.join(BLOG, title + ".pdf")
    text = "".join(page.get_text() for page in pymupdf.open(path)) if os.path.isfile(path) else ""
    found.append(int(phrase in text))
print(found)
"""
PRINT_POST = r"""mkdir -p ~/Documents/Blog \
&& /usr/bin/chromium --headless=new --user-data-dir="$(mktemp -d)" \
  --ignore-certificate-errors-spki-list={SPKI} --no-pdf-header-footer \
  --print-to-pdf="$HOME/Documents/Blog/{title}.pdf" https://lilianweng.github.io{path} \
  && test -s "$HOME/Documents/Blog/{title}.pdf"
"""


def _post_page(title: str, phrase: str) -> str:
    return (
        f"<html><head><title>{title} | Lil'Log</title></head><body><h1>{title}</h1>"
        f"<h2>{phrase}</h2><p>What the post says about {phrase.lower()}.</p></body></html>"
    )


CASES = {
    case.task.split("/")[1][:8]: case
    for case in [
        Case(
            "multi_apps/20236825-b5df-46e7-89bf-62e1d640a897",
            [
                _edit("~/Desktop/bubbleSort.py", BUBBLE_TODO, BUBBLE_BODY),
                web.bash("cd ~/Desktop && python3 bubbleSort.py > res.txt"),
            ],
            _bubble_files,
        ),
        Case(
            "multi_apps/f918266a-b3e0-4914-865d-4faa564f1aef",
            [
                _edit(
                    "~/Desktop/calculator.py",
                    "    pass  # TODO\n\n\ndef divide",
                    "    return a * b\n\n\ndef divide",
                ),
                _edit("~/Desktop/calculator.py", "    pass  # TODO\n", "    return a / b\n"),
                web.bash("cd ~/Desktop && python3 calculator.py > log.txt"),
            ],
            _calculator_files,
        ),
        Case(
            "multi_apps/26150609-0da3-4a7d-8868-0faf9c5f01bb",
            [_edit("~/Desktop/snake/snake.py", "self.body[0] == food\n", "self.body[0] == food.position\n")],
            lambda _tmp: {
                **{name: text.encode() for name, text in SNAKE.items()},
                "test_suite.py": SNAKE_SUITE.encode(),
            },
        ),
        Case(
            "multi_apps/9219480b-3aed-47fc-8bac-d2cffc5849f7",
            [_edit("~/Desktop/tetris/tetris.py", TETRIS_FITS, TETRIS_FIX)],
            lambda _tmp: {
                **{name: text.encode() for name, text in TETRIS.items()},
                "test_suite.py": TETRIS_SUITE.encode(),
            },
        ),
        Case("multi_apps/98e8e339-5f91-4ed2-b2b2-12647cb134f4", [web.bash(MERGE, timeout=110)], _merge_files),
        Case("multi_apps/5df7b33a-9f77-4101-823e-02f863e1c1ae", [_python(SPLIT)], _book_files),
        Case(
            "multi_apps/da922383-bfa4-4cd3-bbad-6bebab3d7742",
            [
                web.bash(PRINT_POST.format(title=title, path=path, SPKI="{SPKI}"), timeout=110)
                for path, (title, _) in POSTS.items()
            ],
            lambda _tmp: {"script.py": BLOG_SCRIPT.encode()},
            {("lilianweng.github.io", path): _post_page(*post) for path, post in POSTS.items()},
        ),
    ]
}
NEEDS_PYMUPDF = pytest.mark.skipif(
    importlib.util.find_spec("pymupdf") is None,
    reason="da922383's script imports PyMuPDF, which the desktop's python (this one) lacks: "
    "install the `mupdf` extra",
)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[StandIn]:
    pages = {key: page for case in CASES.values() for key, page in case.pages.items()}
    with stand_in_sites(tmp_path_factory.mktemp("tls"), HOSTS, pages) as stand_in:
        yield stand_in


@pytest.fixture(scope="module")
def file_cache(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cache")
    for case in CASES.values():
        task = read_task_file(case.path)
        fill_stand_in_cache(root, task, case.files(tmp_path_factory.mktemp(task.id[:8])).__getitem__)
    return root


@pytest.fixture(scope="module")
def env(site: StandIn, file_cache: Path) -> Iterator[gym.Env]:
    env = stand_in_env(site, HOSTS, file_cache)
    yield env
    env.close()


@pytest.mark.parametrize(
    "short_id", [pytest.param(i, marks=[NEEDS_PYMUPDF] if i == "da922383" else []) for i in sorted(CASES)]
)
def test_multi_apps_task_no_op_0_oracle_1(env, site: StandIn, short_id: str):
    case = CASES[short_id]
    oracle = json.loads(json.dumps(case.oracle).replace("{SPKI}", site.spki))
    reward, info = web.run_episode(
        env, trusting(json.loads(case.path.read_text()), site.spki), [web.terminate()]
    )
    assert reward == 0.0, info.get("evaluation")
    reward, info = web.run_episode(
        env, trusting(json.loads(case.path.read_text()), site.spki), [*oracle, web.terminate()]
    )
    assert reward == 1.0, info.get("evaluation")


def test_the_stand_ins_fail_as_the_tasks_say_and_the_fixes_mend_them(tmp_path: Path):
    """Without the desktop: the broken code is broken as described, and the oracles' edits fix it."""
    for files, suite, old, new, name in [
        (SNAKE, SNAKE_SUITE, "self.body[0] == food\n", "self.body[0] == food.position\n", "snake.py"),
        (TETRIS, TETRIS_SUITE, TETRIS_FITS, TETRIS_FIX, "tetris.py"),
    ]:
        folder = tmp_path / name.removesuffix(".py")
        folder.mkdir()
        for file, text in {**files, "test_suite.py": suite}.items():
            (folder / file).write_text(text)
        run = [sys.executable, "-c", "import test_suite; print(test_suite.test())"]
        broken = subprocess.run(run, cwd=folder, capture_output=True, text=True, check=True)
        assert broken.stdout.strip().endswith("False"), broken
        (folder / name).write_text((folder / name).read_text().replace(old, new))
        fixed = subprocess.run(run, cwd=folder, capture_output=True, text=True, check=True)
        assert fixed.stdout.strip().endswith("True"), fixed


@pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice is the desktop's EPUB writer")
def test_42d25c08_is_unsupported_since_libreoffices_epub_has_no_part_compare_epub_reads(tmp_path: Path):
    """The desktop's one EPUB writer: its book has no root toc.ncx, content.opf or .html, so even
    the gold converted the same way scores 0 against it; coverage says so for 42d25c08."""
    novel = tmp_path / "Pass Through.txt"
    novel.write_text("Pass Through\n\nChapter 1\nThe train left at night.\n")
    book = soffice_convert(novel, tmp_path / "out", "epub", tmp_path / "profile")
    names = zipfile.ZipFile(book).namelist()
    assert "OEBPS/content.opf" in names and not any(n.endswith(".html") for n in names)
    assert METRICS.get("compare_epub").fn(str(book), str(book)) == 0.0
    verdict = next(i for i in coverage([OSWORLD_EXAMPLES]).items if i.path.stem.startswith("42d25c08"))
    assert verdict.status == "unsupported" and not verdict.with_internet

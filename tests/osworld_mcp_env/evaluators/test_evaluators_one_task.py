"""Metrics one OSWorld task each uses (run_sqlite3, check_font_size, ...) on hand-made files.

Each expected number follows OSWorld's own function (general.py, table.py, vscode.py,
chrome.py, gimp.py); the comment beside it says which step gives it.
"""

from __future__ import annotations

import json
import sqlite3
import zipfile
from collections.abc import Sequence
from pathlib import Path

import docx
import openpyxl
import pytest
from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators import METRICS, ZeroScore
from osworld_mcp_env.tasks.coverage import assess
from PIL import Image, ImageDraw
from rapidfuzz import fuzz


def metric(name: str):
    return METRICS.get(name).fn


# The task's query: 1 when every message of folder 13 has attribute 58 set to 1.
SQL = (
    "SELECT COALESCE((SELECT COUNT(*) FROM messageAttributes WHERE attributeID = 58 AND value = 1 "
    "AND messageID IN (SELECT id FROM messages WHERE folderID = 13)), 0) = "
    "(SELECT COUNT(*) FROM messages WHERE folderID = 13);"
)


def gloda(path: Path, flagged: list[int]) -> str:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE messages (id INTEGER, folderID INTEGER)")
    db.execute("CREATE TABLE messageAttributes (attributeID INTEGER, value INTEGER, messageID INTEGER)")
    db.executemany("INSERT INTO messages VALUES (?, 13)", [(1,), (2,)])
    db.executemany("INSERT INTO messageAttributes VALUES (58, 1, ?)", [(m,) for m in flagged])
    db.commit()
    db.close()
    return str(path)


def test_run_sqlite3_returns_the_first_value(tmp_path: Path):
    fn = metric("run_sqlite3")
    # Both messages of folder 13 flagged: 2 = 2 is 1 -> float(1) = 1.
    assert fn(gloda(tmp_path / "a.sqlite", [1, 2]), {"sql": SQL}) == 1.0
    # One of two: 1 = 2 is 0 -> `0 or 0` -> 0.
    assert fn(gloda(tmp_path / "b.sqlite", [1]), {"sql": SQL}) == 0.0
    # NULL is 0 (`None or 0`).
    assert fn(gloda(tmp_path / "c.sqlite", []), {"sql": "SELECT NULL"}) == 0.0
    # A database without the tables: the query raises in OSWorld -> 0 with the reason.
    empty = tmp_path / "d.sqlite"
    sqlite3.connect(empty).close()
    with pytest.raises(ZeroScore, match="no such table"):
        fn(str(empty), {"sql": SQL})
    # No file: sqlite3.connect(None) raises in OSWorld; here 0, and no database is created.
    with pytest.raises(ZeroScore, match="no database"):
        fn(str(tmp_path / "missing.sqlite"), {"sql": SQL})
    assert not (tmp_path / "missing.sqlite").exists()
    with pytest.raises(EvaluationError, match="sql"):
        fn(gloda(tmp_path / "e.sqlite", []), {})


def cities(path: Path, column: Sequence[str | None]) -> str:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["C1"] = "City"
    for i, city in enumerate(column, start=2):
        ws[f"C{i}"] = city
    wb.save(path)
    return str(path)


EXPECTED = ["Scottsdale", ["Montreal", "Montréal"], ["Banff", "Alberta’s Rockies"], *["X"] * 18]


def test_compare_conference_city_in_order(tmp_path: Path):
    fn = metric("compare_conference_city_in_order")
    rules = {"expected": EXPECTED}
    # Containment after accents and punctuation are dropped: "Scottsdale, AZ" holds "scottsdale",
    # "MONTRÉAL" becomes "montreal", "Alberta's Rockies" and "Alberta’s Rockies" both become
    # "alberta s rockies" -> 1.
    right = ["Scottsdale, AZ", "MONTRÉAL", "Alberta's Rockies", *["x"] * 18]
    assert fn(cities(tmp_path / "a.xlsx", right), rules) == 1.0
    # Two cities swapped: "Montreal" is not in "scottsdale" -> 0.
    swapped = [right[1], right[0], *right[2:]]
    assert fn(cities(tmp_path / "b.xlsx", swapped), rules) == 0.0
    # C22 empty: "" does not contain "x" -> 0.
    assert fn(cities(tmp_path / "c.xlsx", right[:-1]), rules) == 0.0
    # Fewer expected entries than the 21 cells: IndexError, caught by OSWorld -> 0.
    assert fn(cities(tmp_path / "d.xlsx", right), {"expected": EXPECTED[:5]}) == 0.0


def words_doc(path: Path, *paragraphs: str) -> str:
    doc = docx.Document()
    for text in paragraphs:
        doc.add_paragraph(text)
    doc.save(str(path))
    return str(path)


def test_fuzzy_place_math_wants_exactly_three_words(tmp_path: Path):
    fn = metric("fuzzy_place_math")
    answers = ["福田区益田路5055号", "福华三路111号", "深南大道6009号"]
    rules = {"expected": answers}
    # Three words, each an exact answer: mean of 1, 1, 1 -> 1.
    assert fn(words_doc(tmp_path / "a.docx", *answers), rules) == 1.0
    # One word off by a character: its best ratio is fuzz.ratio(word, answer) / 100.
    near = "福华三路112号"
    score = fn(words_doc(tmp_path / "b.docx", answers[0], near, answers[2]), rules)
    assert score == pytest.approx((2 + fuzz.ratio(near, answers[1]) / 100) / 3)
    assert 0.6 < score < 1
    # Five addresses (as the instruction asks) are five words, not three: 0.
    assert fn(words_doc(tmp_path / "c.docx", *answers, "a", "b"), rules) == 0.0


def archive(path: Path, entries: dict[str, bytes]) -> str:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return str(path)


def test_compare_zip_files_compares_names_and_bytes(tmp_path: Path):
    fn = metric("compare_zip_files")
    pdf = b"%PDF-1.4 same"
    gold = archive(tmp_path / "g.zip", {"essay.docx": b"DOCX", "essay.pdf": pdf})
    # Same names, same bytes (identical PDF bytes have identical text: ratio 1 >= 0.95): 1.
    assert (
        fn(archive(tmp_path / "a.zip", {"essay.docx": b"DOCX", "essay.pdf": b"%PDF-1.4 same"}), gold) == 1.0
    )
    # A missing entry: the name sets differ -> 0. A non-PDF entry with other bytes: 0.
    assert fn(archive(tmp_path / "b.zip", {"essay.docx": b"DOCX"}), gold) == 0.0
    assert (
        fn(archive(tmp_path / "c.zip", {"essay.docx": b"DOCY", "essay.pdf": b"%PDF-1.4 same"}), gold) == 0.0
    )
    assert fn(None, gold) == 0.0
    with pytest.raises(ZeroScore, match="archive"):
        fn(str(tmp_path / "g.zip.missing"), gold)


def image(path: Path, size: tuple[int, int], colour: str, *, dot: bool = False) -> str:
    picture = Image.new("RGB", size, colour)
    if dot:
        picture.putpixel((1, 1), (0, 0, 0))
    picture.save(path)
    return str(path)


def test_compare_image_list_needs_every_pair_pixel_equal(tmp_path: Path):
    fn = metric("compare_image_list")
    gold = [image(tmp_path / "g1.png", (8, 8), "red"), image(tmp_path / "g2.png", (8, 8), "blue")]
    same = [image(tmp_path / "a1.png", (8, 8), "red"), image(tmp_path / "a2.png", (8, 8), "blue")]
    assert fn(same, gold) == 1.0
    # One pixel differs in the second pair: ImageChops.difference has a bounding box -> 0.
    dotted = [same[0], image(tmp_path / "b2.png", (8, 8), "blue", dot=True)]
    assert fn(dotted, gold) == 0.0
    # A uniform image of another size is resized to the gold's first: still equal -> 1.
    assert fn([image(tmp_path / "c1.png", (16, 16), "red"), same[1]], gold) == 1.0
    # A missing result image (the getter gives None): 0. A single path is one pair.
    assert fn([same[0], None], gold) == 0.0
    assert fn(same[0], gold[0]) == 1.0


def test_check_font_size_value_and_open_range():
    fn = metric("check_font_size")
    # The task's rule: 16 < size < 99999, open at both ends (OSWorld's `min < x < max`).
    task_rule = {"type": "range", "min": 16, "max": 99999}
    assert fn({"default_font_size": 20}, task_rule) == 1.0
    # Chrome's default 16 is not above 16: 0.
    assert fn({"default_font_size": 16}, task_rule) == 0.0
    # `value`: plain equality.
    assert fn({"default_font_size": 16}, {"type": "value", "value": 16}) == 1.0
    assert fn({"default_font_size": 17}, {"type": "value", "value": 16}) == 0.0
    # No settings: OSWorld indexes None and raises -> 0 with the reason.
    with pytest.raises(ZeroScore, match="no font settings"):
        fn(None, task_rule)
    # Another rule type: OSWorld raises TypeError, a broken task rather than a 0.
    with pytest.raises(EvaluationError, match="'exact'"):
        fn({"default_font_size": 16}, {"type": "exact"})


def triangle(path: Path, mode: str, shift: int, *, marker: bool) -> str:
    """A 100x100 white picture with a yellow triangle whose centroid is (50, 50 + shift)."""
    picture = Image.new("RGB", (100, 100), "white")
    draw = ImageDraw.Draw(picture)
    draw.polygon([(50 + shift, 38), (38 + shift, 56), (62 + shift, 56)], fill=(255, 255, 0))
    if marker:
        picture.putpixel((0, 0), (255, 0, 0))  # the rarest colour, so index 1 is the triangle's
    picture.convert(mode).save(path)
    return str(path)


def test_check_triangle_position_takes_the_second_rarest_colour(tmp_path: Path):
    fn = metric("check_triangle_position")
    # Three colours: counts ascending are red (1), yellow, white; index 1 is the triangle,
    # whose centroid is within 5 px (5 % of 100) of (50, 50) -> 1.
    assert fn(triangle(tmp_path / "mid.png", "RGB", 0, marker=True), None) == 1.0
    # The same triangle 30 px left: its centroid column is ~20 -> 0.
    assert fn(triangle(tmp_path / "side.png", "RGB", -30, marker=True), None) == 0.0
    # OSWorld's quirk: with two colours, index 1 of the ascending counts is the white
    # background, whose centroid stays near the middle (column ~50.2) -> 1 for a triangle on the side.
    assert fn(triangle(tmp_path / "two.png", "RGB", -30, marker=False), None) == 1.0
    # RGBA is read the same way (four channels per colour, all opaque here).
    assert fn(triangle(tmp_path / "mid_rgba.png", "RGBA", 0, marker=True), None) == 1.0
    assert fn(triangle(tmp_path / "side_rgba.png", "RGBA", -30, marker=True), None) == 0.0
    # No file: 0 (OSWorld's first test).
    assert fn(None, None) == 0.0
    # A grey picture has no channel axis (OSWorld's `shape[2]` raises), one colour has no index 1.
    with pytest.raises(ZeroScore, match="colour axis"):
        fn(triangle(tmp_path / "grey.png", "L", 0, marker=True), None)
    blank = tmp_path / "blank.png"
    Image.new("RGB", (10, 10), "white").save(blank)
    with pytest.raises(ZeroScore, match="one colour"):
        fn(str(blank), None)


def test_compare_image_text_is_left_out_with_its_reason(tmp_path: Path):
    # OSWorld's check (multi_apps 02ce9a50): "ls" or "1s" in easyocr's text of a screenshot.
    # Its model cannot be fetched here and tesseract misreads "ls" ("Is", "Ls"), so the task
    # is reported unsupported by that reason rather than scored by another OCR.
    path = tmp_path / "multi_apps" / "ocr.json"
    path.parent.mkdir()
    path.write_text(
        json.dumps(
            {
                "id": "ocr",
                "instruction": "Save a screenshot of `ls` as ls.png",
                "config": [],
                "evaluator": {
                    "func": "compare_image_text",
                    "result": {"type": "vm_file", "path": "/home/user/Desktop/ls.png", "dest": "ls.png"},
                    "expected": {"type": "rule", "rules": {"type": "text", "text": "ls"}},
                },
            }
        )
    )
    verdict = assess(path)
    assert verdict.loads and verdict.status == "unsupported"
    assert verdict.reason.startswith("compare_image_text: OCR")
    assert "compare_image_text" not in METRICS

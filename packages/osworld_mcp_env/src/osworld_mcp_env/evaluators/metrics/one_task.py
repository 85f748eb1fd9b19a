"""Metrics one OSWorld task each uses outside the office modules: ``run_sqlite3``, ``compare_zip_files``, ...

Same reading as OSWorld's functions (``general.py``, ``table.py``, ``vscode.py``,
``chrome.py``, ``gimp.py``):
sqlite3, openpyxl, python-docx, PIL and rapidfuzz, with the same thresholds and the
same quirks (``fuzzy_place_math`` wants exactly three words). Where OSWorld's
function raises on the agent's file, the check scores 0 with the reason.
"""

from __future__ import annotations

import difflib
import re
import sqlite3
import unicodedata
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import docx
import numpy as np
import openpyxl
from docx.opc.exceptions import PackageNotFoundError
from openpyxl.utils.exceptions import InvalidFileException
from PIL import Image, ImageChops
from rapidfuzz import fuzz

from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators.metrics.pdf import page_texts
from osworld_mcp_env.evaluators.metrics.task_rules import rule_value
from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric


@register_metric("run_sqlite3")
def run_sqlite3(result: Any, expected: Any, **options: Any) -> float:
    """The first column of the first row of ``rules["sql"]`` run on the agent's database (NULL: 0).

    The database is opened read-only and with ``trusted_schema`` off, so the agent's
    schema cannot run functions with side effects; the value is OSWorld's either way.
    """
    sql = rule_value(expected, "sql", "run_sqlite3")
    if not result or not Path(result).is_file():
        raise ZeroScore("run_sqlite3: no database file (OSWorld raises)")
    try:
        connection = sqlite3.connect(f"{Path(result).resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise ZeroScore(f"run_sqlite3: cannot open the database (OSWorld raises): {exc}") from exc
    try:
        connection.execute("PRAGMA trusted_schema = OFF")
        row = connection.execute(sql).fetchone()
    except sqlite3.Error as exc:
        raise ZeroScore(f"run_sqlite3: the query fails on this database (OSWorld raises): {exc}") from exc
    finally:
        connection.close()
    if row is None:
        raise ZeroScore("run_sqlite3: the query returned no row (OSWorld raises)")
    try:
        return float(row[0] or 0)
    except (TypeError, ValueError) as exc:
        raise ZeroScore(f"run_sqlite3: {row[0]!r} is not a number (OSWorld raises)") from exc


def _city_key(value: Any) -> str:
    """OSWorld's tolerant city text: accents dropped, lower case, runs of other characters one space."""
    if value is None:
        return ""
    decomposed = unicodedata.normalize("NFKD", str(value))
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return re.sub(r"[^a-z0-9]+", " ", plain.lower()).strip()


@register_metric("compare_conference_city_in_order")
def compare_conference_city_in_order(result: Any, expected: Any, **options: Any) -> float:
    """1 when each cell C2:C22 of the active sheet contains its expected city (or one of its names).

    Containment is on :func:`_city_key` texts; an empty candidate never matches. Any
    error while comparing (fewer expected entries than cells, an entry that is neither
    text nor a list) scores 0, as OSWorld catches it.
    """
    cities = rule_value(expected, "expected", "compare_conference_city_in_order")
    if not result:
        raise ZeroScore("compare_conference_city_in_order: no workbook (OSWorld raises)")
    try:
        sheet = openpyxl.load_workbook(result).active
    except (InvalidFileException, zipfile.BadZipFile, KeyError, ValueError, OSError) as exc:
        raise ZeroScore(f"compare_conference_city_in_order: not a workbook (OSWorld raises): {exc}") from exc
    if sheet is None:
        raise ZeroScore("compare_conference_city_in_order: no active sheet (OSWorld raises)")
    actual = [cell.value for row in sheet["C2:C22"] for cell in row]
    for i, value in enumerate(actual):
        if i >= len(cities) or not isinstance(cities[i], str | list):
            return 0.0
        candidates = [cities[i]] if isinstance(cities[i], str) else cities[i]
        key = _city_key(value)
        if not any(_city_key(c) and _city_key(c) in key for c in candidates):
            return 0.0
    return 1.0


@register_metric("fuzzy_place_math")
def fuzzy_place_math(result: Any, expected: Any, **options: Any) -> float:
    """The mean best ``fuzz.ratio`` of the document's words against the expected answers.

    Words are the whitespace-split texts of all paragraphs; unless there are exactly
    three, the score is 0 (OSWorld's rule, whatever number the instruction asks for).
    """
    answers = rule_value(expected, "expected", "fuzzy_place_math")
    if result is None:
        return 0.0
    try:
        paragraphs = docx.Document(result).paragraphs
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError, OSError) as exc:
        raise ZeroScore(f"fuzzy_place_math: python-docx cannot open it (OSWorld raises): {exc}") from exc
    words = [w for p in paragraphs for w in p.text.split()]
    if len(words) != 3:
        return 0.0
    return sum(max([0.0, *(fuzz.ratio(w, a) / 100 for a in answers)]) for w in words) / 3


def _pdf_text(content: bytes) -> str:
    """The text of every page, joined with nothing between, as PyPDF2 gives it (OSWorld's reader)."""
    try:
        return "".join(page_texts(content))
    except Exception as exc:  # pypdf's errors are many; OSWorld's reader raises on each
        raise ZeroScore(f"compare_zip_files: a PDF entry cannot be read (OSWorld raises): {exc}") from exc


@register_metric("compare_zip_files")
def compare_zip_files(result: Any, expected: Any, **options: Any) -> float:
    """1 when both archives hold the same names and each entry matches.

    A ``.pdf`` entry matches when its extracted text is at least 95 % alike
    (``difflib.SequenceMatcher.ratio``); any other entry must be byte-identical.
    Identical PDF bytes match without extracting text; text extraction uses pypdf
    (PyPDF2's successor).
    """
    if not result:
        return 0.0
    try:
        with zipfile.ZipFile(result) as got, zipfile.ZipFile(expected) as want:
            names = set(got.namelist())
            if names != set(want.namelist()):
                return 0.0
            for name in names:
                a, b = got.read(name), want.read(name)
                if a == b:
                    continue
                if not name.lower().endswith(".pdf"):
                    return 0.0
                if difflib.SequenceMatcher(None, _pdf_text(a), _pdf_text(b)).ratio() < 0.95:
                    return 0.0
    except (zipfile.BadZipFile, OSError) as exc:
        raise ZeroScore(f"compare_zip_files: cannot read an archive (OSWorld raises): {exc}") from exc
    return 1.0


@register_metric("compare_image_list")
def compare_image_list(result: Any, expected: Any, **options: Any) -> float:
    """1 when each result image has the same pixels as its expected image (pairs up to the shorter list).

    A result image of another size is first resized to the expected one (Lanczos) and
    converted to its mode, as OSWorld does; any differing pixel is 0. A missing image is 0.
    """
    pairs = zip(result, expected, strict=False) if isinstance(result, list) else [(result, expected)]
    for got, want in pairs:
        if not got or not want:
            return 0.0
        try:
            with Image.open(got) as pred, Image.open(want) as gold:
                image = pred.resize(gold.size, Image.Resampling.LANCZOS) if pred.size != gold.size else pred
                if image.mode != gold.mode:
                    image = image.convert(gold.mode)
                if ImageChops.difference(image, gold).getbbox():
                    return 0.0
        except (OSError, ValueError) as exc:
            raise ZeroScore(f"compare_image_list: PIL cannot compare {got} (OSWorld raises): {exc}") from exc
    return 1.0


@register_metric("check_font_size")
def check_font_size(result: Any, expected: Any, **options: Any) -> float:
    """Chrome's ``default_font_size`` against the rule: ``value`` (equal) or ``range`` (``min < size < max``).

    The range is open at both ends, as OSWorld's: Chrome's default 16 fails ``min: 16``.
    A rule ``type`` other than these two is a broken task (OSWorld raises TypeError).
    """
    kind = rule_value(expected, "type", "check_font_size")
    if not isinstance(result, Mapping) or "default_font_size" not in result:
        raise ZeroScore(f"check_font_size: no font settings, got {result!r:.200} (OSWorld raises)")
    size = result["default_font_size"]
    if kind == "value":
        return 1.0 if size == rule_value(expected, "value", "check_font_size") else 0.0
    if kind == "range":
        low, high = (rule_value(expected, key, "check_font_size") for key in ("min", "max"))
        return 1.0 if low < size < high else 0.0
    raise EvaluationError(f"check_font_size: rule type {kind!r} is not supported (OSWorld raises).")


@register_metric("check_triangle_position")
def check_triangle_position(result: Any, expected: Any, **options: Any) -> float:
    """1 when the pixels of the image's second *rarest* colour centre within 5 % of the image's middle.

    OSWorld means the triangle's colour but sorts the colour counts ascending and takes
    index 1: in a two-colour picture that is the background, elsewhere often an
    antialiasing shade. The same numpy calls pick the same colour (ties included).
    Centroid and centre are (row, column); each must be strictly within 5 % of that axis.
    A picture without a channel axis (grey) or with one colour makes OSWorld raise: 0.
    """
    if result is None:
        return 0.0
    try:
        with Image.open(result) as image:
            pixels = np.array(image)
    except (OSError, ValueError) as exc:
        raise ZeroScore(f"check_triangle_position: PIL cannot open {result} (OSWorld raises): {exc}") from exc
    if pixels.ndim != 3:
        raise ZeroScore("check_triangle_position: the picture has no colour axis (OSWorld raises)")
    colours, counts = np.unique(pixels.reshape(-1, pixels.shape[2]), axis=0, return_counts=True)
    if len(colours) < 2:
        raise ZeroScore("check_triangle_position: the picture has one colour (OSWorld raises)")
    colour = colours[np.argsort(counts)][1]
    centroid = np.argwhere(np.all(pixels == colour, axis=2)).mean(axis=0)
    shape = np.array(pixels.shape[:2])
    return 1.0 if bool(np.all(np.abs(centroid - shape / 2) < 0.05 * shape)) else 0.0

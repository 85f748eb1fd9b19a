"""One-task Writer metrics (formatting, settings, records), scored as OSWorld's ``docs.py`` does.

Each reads the document with python-docx (odfpy for ``check_highlighted_words``), the
library OSWorld uses, so what counts as a run, a paragraph or a footer is the same.
Several first require the texts to agree (``compare_docx_files`` with its defaults),
as OSWorld's do. Where OSWorld's function raises on the agent's file (an empty
document, an attribute odfpy refuses), the check scores 0 with the reason
(:class:`ZeroScore`).
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Mapping
from typing import Any
from xml.etree import ElementTree

import docx
from docx.enum.text import WD_PARAGRAPH_ALIGNMENT, WD_TAB_ALIGNMENT
from docx.opc.exceptions import PackageNotFoundError
from docx.text.paragraph import Paragraph
from rapidfuzz import fuzz

from osworld_mcp_env.evaluators.metrics.cielab import ciede2000, srgb_to_lab
from osworld_mcp_env.evaluators.metrics.docs import compare_docx_files
from osworld_mcp_env.evaluators.metrics.task_rules import rule_value
from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric

# What python-docx raises on a file that is not a readable .docx (OSWorld logs it and returns 0).
_DOC_ERRORS = (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError, OSError)
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_OOR = "{http://openoffice.org/2001/registry}"


def _document(path: Any) -> Any:
    """The python-docx document, or None when the path is empty or the file unreadable."""
    if not path:
        return None
    try:
        return docx.Document(path)
    except _DOC_ERRORS:
        return None


@register_metric("find_default_font")
def find_default_font(result: Any, expected: Any, **options: Any) -> float:
    """1 when Writer's default font (``registrymodifications.xcu``) is ``rules["font_name"]``.

    The value of the last ``Standard`` property under ``/org.openoffice.Office.Writer/DefaultFont``
    wins; an unreadable file means no default font (OSWorld logs the error and compares None).
    """
    want = rule_value(expected, "font_name", "find_default_font")
    if not result:
        return 0.0
    font = None
    try:
        root = ElementTree.parse(result).getroot()
    except (ElementTree.ParseError, OSError):
        root = None
    if root is not None:
        for item in root.iterfind(f".//item[@{_OOR}path='/org.openoffice.Office.Writer/DefaultFont']"):
            for prop in item.iterfind(f".//prop[@{_OOR}name='Standard']"):
                for value in prop.iterfind("value"):
                    font = value.text
    return float(font == want)


@register_metric("contains_page_break")
def contains_page_break(result: Any, expected: Any, **options: Any) -> float:
    """1 when the body's paragraphs hold page breaks (``<w:br w:type="page"/>`` in their runs).

    With ``rules["page_break_count"]`` the count must also match. Breaks in tables,
    headers or inside hyperlinks are not counted (python-docx's ``paragraph.runs``).
    """
    doc = _document(result)
    if doc is None:
        return 0.0
    want = expected.get("page_break_count") if isinstance(expected, Mapping) else None
    count = sum(
        1
        for paragraph in doc.paragraphs
        for run in paragraph.runs
        for br in run.element.iterfind(f".//{_W}br")
        if br.get(f"{_W}type") == "page"
    )
    if want is not None and count != want:
        return 0.0
    return float(count > 0)


@register_metric("compare_font_names")
def compare_font_names(result: Any, expected: Any, **options: Any) -> float:
    """1 when every run of the body's paragraphs names ``rules["font_name"]`` directly.

    A run that inherits its font from a style has no name (None) and fails, as in OSWorld.
    """
    want = rule_value(expected, "font_name", "compare_font_names")
    doc = _document(result)
    if doc is None:
        return 0.0
    return float(all(run.font.name == want for p in doc.paragraphs for run in p.runs))


@register_metric("compare_subscript_contains")
def compare_subscript_contains(result: Any, expected: Any, **options: Any) -> float:
    """1 when some run of both documents, at the same paragraph and run index, is subscript."""
    got, want = _document(result), _document(expected)
    if got is None or want is None:
        return 0.0
    for p1, p2 in zip(got.paragraphs, want.paragraphs, strict=False):
        for r1, r2 in zip(p1.runs, p2.runs, strict=False):
            if r1.font.subscript and r2.font.subscript:
                return 1.0
    return 0.0


@register_metric("has_page_numbers_in_footers")
def has_page_numbers_in_footers(result: Any, expected: Any, **options: Any) -> float:
    """1 when the first footer paragraph of every section holds a digit (the page number's text)."""
    doc = _document(result)
    if doc is None:
        return 0.0
    for section in doc.sections:
        paragraphs = section.footer.paragraphs
        if not any(char.isdigit() for char in (paragraphs[0].text if paragraphs else "")):
            return 0.0
    return 1.0


@register_metric("is_first_line_centered")
def is_first_line_centered(result: Any, expected: Any, **options: Any) -> float:
    """1 when the first paragraph's own alignment is centre (an inherited one is None: 0)."""
    doc = _document(result)
    if doc is None:
        return 0.0
    if not doc.paragraphs:
        raise ZeroScore("is_first_line_centered: the document has no paragraph (OSWorld raises)")
    return float(doc.paragraphs[0].paragraph_format.alignment == WD_PARAGRAPH_ALIGNMENT.CENTER)


def _counted_tabs(paragraph: Paragraph) -> list[Any]:
    """The paragraph's own tab stops, less cleared ones and a left stop at 0 (OSWorld's filter)."""
    return [
        t
        for t in paragraph.paragraph_format.tab_stops
        if not (
            t.alignment == WD_TAB_ALIGNMENT.CLEAR
            or (t.alignment == WD_TAB_ALIGNMENT.LEFT and t.position == 0)
        )
    ]


@register_metric("check_tabstops", options=("word_number_split_by_tabstop", "index"))
def check_tabstops(result: Any, expected: Any, **options: Any) -> float:
    """How close the tab stops of the non-blank paragraphs are to the expected document's.

    Same number of non-blank paragraphs, of tab stops per paragraph and the same
    alignments, else 0. With ``word_number_split_by_tabstop`` each result paragraph's
    ``index``-th tab-separated part must have that many words. The score is 1 minus
    the mean, over paragraphs, of the summed position differences divided by the
    text width of the expected document's first section.
    """
    got, want = _document(result), _document(expected)
    if got is None or want is None:
        return 0.0
    para1 = [p for p in got.paragraphs if p.text.strip()]
    para2 = [p for p in want.paragraphs if p.text.strip()]
    if len(para1) != len(para2):
        return 0.0
    number = options.get("word_number_split_by_tabstop")
    if number is not None:
        index = options.get("index", 0)
        for p in para1:
            parts = p.text.split("\t")
            if not -len(parts) <= index < len(parts):
                raise ZeroScore(f"check_tabstops: no tab-separated part {index} (OSWorld raises)")
            if len([w for w in re.split(r"\s", parts[index]) if w.strip()]) != number:
                return 0.0
    section = want.sections[0]
    if None in (section.page_width, section.left_margin, section.right_margin):
        raise ZeroScore("check_tabstops: the expected document has no page width or margins (OSWorld raises)")
    width = section.page_width - section.left_margin - section.right_margin
    minus = 0.0
    for p1, p2 in zip(para1, para2, strict=True):
        tabs1, tabs2 = _counted_tabs(p1), _counted_tabs(p2)
        if len(tabs1) != len(tabs2):
            return 0.0
        difference = 0.0
        for t1, t2 in zip(tabs1, tabs2, strict=True):
            if t1.alignment != t2.alignment:
                return 0.0
            difference += abs(t1.position - t2.position)
        if not width:
            raise ZeroScore("check_tabstops: the expected text width is 0 (OSWorld divides by zero)")
        minus += difference / width
    if not para1:
        raise ZeroScore("check_tabstops: no non-blank paragraph (OSWorld divides by zero)")
    return 1 - minus / len(para1)


@register_metric("check_highlighted_words")
def check_highlighted_words(result: Any, expected: Any, **options: Any) -> float:
    """1 when the texts agree and no span of the result ``.odt`` has a yellow (``#ffff00``) background.

    A span's automatic style is found by name; any of that style's property elements
    with ``fo:background-color="#ffff00"`` counts as a highlight.
    """
    if not result or not expected or not compare_docx_files(result, expected):
        return 0.0
    from odf.opendocument import load
    from odf.text import Span

    try:
        doc = load(result)
        for span in doc.getElementsByType(Span):
            name = span.getAttribute("stylename")
            if not name:
                continue
            for style in doc.automaticstyles.childNodes:  # OSWorld's order of getAttribute calls
                if style.getAttribute("name") == name and any(
                    p.getAttribute("backgroundcolor") == "#ffff00" for p in style.childNodes
                ):
                    return 0.0
    except (AttributeError, KeyError, ValueError, OSError) as exc:
        raise ZeroScore(f"check_highlighted_words: odfpy refuses the styles (OSWorld raises): {exc}") from exc
    return 1.0


def _distance(rgb: Any, target: tuple[int, int, int]) -> float:
    """CIEDE2000 between a run's colour and ``target``, both as sRGB / 255 (what OSWorld passes)."""
    if rgb is None:
        raise ZeroScore("evaluate_colored_words_in_tables: a word has no direct colour (OSWorld raises)")
    lab1 = srgb_to_lab((rgb[0] / 255.0, rgb[1] / 255.0, rgb[2] / 255.0))
    lab2 = srgb_to_lab((target[0] / 255.0, target[1] / 255.0, target[2] / 255.0))
    return ciede2000(lab1, lab2)


@register_metric("evaluate_colored_words_in_tables", options=("threshold",))
def evaluate_colored_words_in_tables(result: Any, expected: Any, **options: Any) -> float:
    """1 when the texts agree and, in every table, runs starting with a vowel are red, others blue.

    "Red" and "blue" mean a CIEDE2000 difference from pure red (255, 0, 0) or blue
    (0, 0, 255) of at most ``threshold`` (default 3.5). A non-empty run without a
    direct colour raises in OSWorld (0 here, with the reason).
    """
    if not result or not expected or not compare_docx_files(result, expected):
        return 0.0
    doc = _document(result)
    if doc is None:
        return 0.0
    threshold = options.get("threshold", 3.5)
    for table in doc.tables:
        for row in table.rows:
            for cell in row.cells:
                for paragraph in cell.paragraphs:
                    for run in paragraph.runs:
                        if not run.text:
                            continue
                        target = (255, 0, 0) if run.text[0].lower() in "aeiou" else (0, 0, 255)
                        if _distance(run.font.color.rgb, target) > threshold:
                            return 0.0
    return 1.0


@register_metric("evaluate_strike_through_last_paragraph")
def evaluate_strike_through_last_paragraph(result: Any, expected: Any, **options: Any) -> float:
    """1 when the texts agree and every run of the last paragraph is struck through (no run: 1)."""
    if not result or not expected or not compare_docx_files(result, expected):
        return 0.0
    doc = _document(result)
    if doc is None:
        return 0.0
    if not doc.paragraphs:
        raise ZeroScore("evaluate_strike_through_last_paragraph: no paragraph (OSWorld raises)")
    return float(all(run.font.strike for run in doc.paragraphs[-1].runs))


@register_metric("check_italic_font_size_14")
def check_italic_font_size_14(result: Any, expected: Any, **options: Any) -> float:
    """1 when the texts agree and every directly italic run of the body has a direct size of 14 pt."""
    if not result or not expected or not compare_docx_files(result, expected):
        return 0.0
    doc = _document(result)
    if doc is None:
        return 0.0
    italic = [run for p in doc.paragraphs for run in p.runs if run.italic]
    return float(all(run.font.size is not None and run.font.size.pt == 14 for run in italic))


@register_metric("compare_docx_files_and_ignore_new_lines", options=("ignore_blanks",))
def compare_docx_files_and_ignore_new_lines(result: Any, expected: Any, **options: Any) -> float:
    """1 when two ``.docx`` agree once empty paragraphs are dropped.

    ``ignore_blanks`` (default True) compares the whitespace-collapsed texts; without
    it the remaining paragraphs are compared one by one. Other file types score 0.
    """
    if not result or not expected or not (str(result).endswith(".docx") and str(expected).endswith(".docx")):
        return 0.0
    got, want = _document(result), _document(expected)
    if got is None or want is None:
        return 0.0
    texts1 = [p.text for p in got.paragraphs if p.text != ""]
    texts2 = [p.text for p in want.paragraphs if p.text != ""]
    if options.get("ignore_blanks", True):
        joined = [re.sub(r"\s+", " ", "\n".join(t)).strip() for t in (texts1, texts2)]
        return float(joined[0] == joined[1])
    return float(texts1 == texts2)


# content_only: tasks pass it and OSWorld's compare_references never reads it (accepted, no effect).
@register_metric(
    "compare_references", options=("reference_indicator", "reference_base_result", "content_only")
)
def compare_references(result: Any, expected: Any, **options: Any) -> float:
    """How alike the reference lists after the ``reference_indicator`` paragraph are.

    Both lack the heading: 1; one lacks it, or the non-blank reference counts differ: 0.
    Otherwise the mean ``fuzz.ratio`` of paired references, ``m``, gives
    ``(m - base) / (1 - base)`` when ``m >= base + 0.01`` (``reference_base_result``,
    default 0.5), else 0.
    """
    if not result or not expected or not (str(result).endswith(".docx") and str(expected).endswith(".docx")):
        return 0.0
    got, want = _document(result), _document(expected)
    if got is None or want is None:
        return 0.0
    indicator = options.get("reference_indicator", "References")
    base = options.get("reference_base_result", 0.5)
    texts1, texts2 = [p.text for p in got.paragraphs], [p.text for p in want.paragraphs]
    if indicator not in texts1 and indicator not in texts2:
        return 1.0
    if indicator not in texts1 or indicator not in texts2:
        return 0.0
    ref1 = [t for t in texts1[texts1.index(indicator) + 1 :] if t.strip()]
    ref2 = [t for t in texts2[texts2.index(indicator) + 1 :] if t.strip()]
    if len(ref1) != len(ref2):
        return 0.0
    if not ref1:
        raise ZeroScore("compare_references: no reference after the heading (OSWorld divides by zero)")
    mean = sum(fuzz.ratio(a, b) / 100.0 for a, b in zip(ref1, ref2, strict=True)) / len(ref1)
    if mean >= base + 0.01:
        return (mean - base) / (1 - base)
    return 0.0


def _lines_and_train_ids(path: str) -> tuple[list[str], list[str]] | None:
    doc = _document(path)
    if doc is None:
        return None
    lines = [p.text.strip() for p in doc.paragraphs if p.text.strip()]
    return lines, [line.split(",")[1].strip() for line in lines if len(line.split(",")) == 4]


@register_metric("compare_unique_train_records")
def compare_unique_train_records(result: Any, expected: Any, **options: Any) -> float:
    """1 when the agent's de-duplicated train records match the gold file's.

    ``expected`` is ``[gold, original]``. Every non-blank result line must come from
    the original, no train id (second field of a 4-field line) may repeat, the set of
    ids must be the gold's and the number of lines the gold's.
    """
    if not result or not isinstance(expected, list) or len(expected) < 2 or not all(expected[:2]):
        return 0.0
    read = [_lines_and_train_ids(p) for p in (result, expected[0], expected[1])]
    if read[0] is None or read[1] is None or read[2] is None:
        return 0.0
    (lines, ids), (gold_lines, gold_ids), (original, _) = read[0], read[1], read[2]
    if not set(lines) <= set(original) or len(ids) != len(set(ids)) or set(ids) != set(gold_ids):
        return 0.0
    return float(len(lines) == len(gold_lines))

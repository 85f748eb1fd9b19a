"""Writer document metrics: ``compare_docx_files``, ``compare_docx_tables``, scored as OSWorld does.

Paragraph texts come from python-docx for ``.docx`` and, for ``.odt``, from the text
nodes and ``text:span`` children of each ``text:p`` (OSWorld's reading, which skips
deeper nesting). Similarities are rapidfuzz ratios / 100, as in OSWorld.
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any

import docx
from docx.opc.exceptions import PackageNotFoundError
from PIL import Image, UnidentifiedImageError
from rapidfuzz import fuzz

from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric

_DOC_ERRORS = (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError, OSError)


def _odt_paragraphs(path: str) -> list[str]:
    from odf import text
    from odf.opendocument import load

    out = []
    for p in load(path).getElementsByType(text.P):
        parts = []
        for node in p.childNodes:
            if node.nodeType == node.TEXT_NODE:
                parts.append(node.data)
            elif node.nodeType == node.ELEMENT_NODE and node.tagName == "text:span":
                parts += [c.data for c in node.childNodes if c.nodeType == c.TEXT_NODE]
        out.append("".join(parts))
    return out


def _paragraphs(path: str) -> list[str] | None:
    try:
        if path.endswith(".odt"):
            return _odt_paragraphs(path)
        return [p.text for p in docx.Document(path).paragraphs]
    except _DOC_ERRORS:
        return None


def _joined(paragraphs: list[str]) -> str:
    return re.sub(r"\s+", " ", "\n".join(paragraphs)).strip()


_DOCX_OPTIONS = (
    "ignore_blanks",
    "ignore_case",
    "ignore_order",
    "content_only",
    "fuzzy_match",
    "delete_empty_lines",
)


@register_metric("compare_docx_files", options=_DOCX_OPTIONS)
def compare_docx_files(result: Any, expected: Any, **options: Any) -> float:
    """The text agreement of two documents (both ``.docx`` or both ``.odt``).

    Options (OSWorld's, same defaults): ``ignore_order`` sorts paragraphs;
    ``delete_empty_lines`` drops blank ones; ``content_only`` returns the similarity
    of the whitespace-collapsed texts; ``ignore_blanks`` (default True) compares those
    texts (their similarity with ``fuzzy_match``); without it paragraphs are compared
    one by one (the mean similarity with ``fuzzy_match``); ``ignore_case`` lowers both.

    Returns:
        1 or 0, or a similarity in [0, 1] with ``content_only`` / ``fuzzy_match``.
        A missing or unreadable file, or mixed types, scores 0 (as in OSWorld).
    """
    if not result or not expected:
        return 0.0
    kinds = {str(result).rsplit(".", 1)[-1], str(expected).rsplit(".", 1)[-1]}
    if kinds not in ({"docx"}, {"odt"}):
        return 0.0
    got, want = _paragraphs(result), _paragraphs(expected)
    if got is None or want is None:
        return 0.0
    if options.get("ignore_order", False):
        got, want = sorted(got), sorted(want)
    if options.get("delete_empty_lines", False):
        got, want = [p for p in got if p.strip()], [p for p in want if p.strip()]
    case = (lambda s: s.lower()) if options.get("ignore_case", False) else (lambda s: s)
    fuzzy = options.get("fuzzy_match", False)
    if options.get("content_only", False) or options.get("ignore_blanks", True):
        a, b = case(_joined(got)), case(_joined(want))
        if options.get("content_only", False) or fuzzy:
            return fuzz.ratio(a, b) / 100.0
        return float(a == b)
    if len(got) != len(want):
        return 0.0
    if fuzzy:
        if not got:
            return 1.0
        return sum(fuzz.ratio(case(a), case(b)) / 100.0 for a, b in zip(got, want, strict=True)) / len(got)
    return float(all(case(a) == case(b) for a, b in zip(got, want, strict=True)))


@register_metric("compare_docx_tables")
def compare_docx_tables(result: Any, expected: Any, **options: Any) -> float:
    """1 when both .docx have the same tables: count, shape, and stripped cell texts."""
    if not result or not expected:
        return 0.0
    try:
        tables = [docx.Document(p).tables for p in (result, expected)]
    except _DOC_ERRORS:
        return 0.0
    got, want = tables
    if len(got) != len(want):
        return 0.0
    for t1, t2 in zip(got, want, strict=True):
        if len(t1.rows) != len(t2.rows) or len(t1.columns) != len(t2.columns):
            return 0.0
        for i in range(len(t1.rows)):
            for j in range(len(t1.columns)):
                if t1.cell(i, j).text.strip() != t2.cell(i, j).text.strip():
                    return 0.0
    return 1.0


@register_metric("compare_line_spacing")
def compare_line_spacing(result: Any, expected: Any, **options: Any) -> float:
    """1 when the texts agree (``compare_docx_files``, defaults) and every paragraph's line spacing is equal.

    ``line_spacing`` is python-docx's: None (inherited), a float multiple or a length.
    """
    if not result or not expected or not compare_docx_files(result, expected):
        return 0.0
    try:
        got, want = (docx.Document(p).paragraphs for p in (result, expected))
    except _DOC_ERRORS:
        return 0.0
    if len(got) != len(want):
        return 0.0
    pairs = zip(got, want, strict=True)
    return float(all(a.paragraph_format.line_spacing == b.paragraph_format.line_spacing for a, b in pairs))


def _images(path: str) -> list[bytes]:
    """The blobs of every image the main document part relates to, in relationship order."""
    return [rel.target_part.blob for rel in docx.Document(path).part.rels.values() if "image" in rel.reltype]


@register_metric("compare_docx_images")
def compare_docx_images(result: Any, expected: Any, **options: Any) -> float:
    """1 when both documents embed the same number of images with the same decoded pixels, in order."""
    if not result or not expected:
        return 0.0
    try:
        got, want = _images(result), _images(expected)
    except _DOC_ERRORS:
        return 0.0
    if len(got) != len(want):
        return 0.0
    try:
        same = all(
            Image.open(io.BytesIO(a)).tobytes() == Image.open(io.BytesIO(b)).tobytes()
            for a, b in zip(got, want, strict=True)
        )
    except (OSError, UnidentifiedImageError) as exc:
        raise ZeroScore(
            f"compare_docx_images: PIL cannot decode an embedded image (OSWorld raises): {exc}"
        ) from exc
    return float(same)

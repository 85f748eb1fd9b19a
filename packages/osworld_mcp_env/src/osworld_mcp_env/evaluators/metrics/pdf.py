"""PDF metrics: ``compare_pdfs``, ``check_pdf_pages``, ``compare_pdf_images``, scored as OSWorld does.

OSWorld reads text and images with PyMuPDF (AGPL), which this Apache-2.0 package does not
require. ``compare_pdfs`` reads text with PyMuPDF when the optional ``mupdf`` extra is
installed (then its text is OSWorld's, characters outside the page included: PyMuPDF drops
them), else with pypdf (BSD), the library ``check_pdf_pages`` already uses in OSWorld:
page text joined as PyMuPDF joins it (each page's text ends with a newline), the
remaining differences (pypdf's line and space breaking, text beyond the page's edge)
listed in ``docs/evaluators.md``. Images are read with pypdf and compared by
:func:`phash`, ``imagehash.phash``'s bits.
"""

from __future__ import annotations

import io
import logging
import operator
from pathlib import Path
from typing import Any

from PIL import Image
from pypdf import PdfReader
from pypdf.generic import ArrayObject, StreamObject
from rapidfuzz import fuzz

from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators.metrics.phash import hash_distance, phash
from osworld_mcp_env.evaluators.metrics.task_rules import rule_value
from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric

log = logging.getLogger(__name__)

_RELATIONS = ("lt", "le", "eq", "ne", "ge", "gt")


def page_texts(source: str | Path | bytes) -> list[str]:
    """Each page's ``extract_text`` (pypdf); raises what pypdf raises on a file it cannot read."""
    reader = PdfReader(io.BytesIO(source) if isinstance(source, bytes) else source)
    return [page.extract_text() for page in reader.pages]


def _pymupdf() -> Any:
    """The ``pymupdf`` module when the ``mupdf`` extra is installed, else None."""
    try:
        import pymupdf  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    return pymupdf


def pdf_text_reader() -> str:
    """Which library ``compare_pdfs`` reads text with here: ``"pymupdf"`` (OSWorld's) or ``"pypdf"``."""
    return "pymupdf" if _pymupdf() is not None else "pypdf"


def pdf_text(source: str | Path | bytes) -> str:
    """The text of every page as ``compare_pdfs`` reads it (see :func:`pdf_text_reader`).

    PyMuPDF: ``page.get_text()`` joined, as OSWorld does. pypdf: each page's text
    newline-terminated like PyMuPDF's (no run-on pages).
    """
    pymupdf = _pymupdf()
    if pymupdf is not None:
        opened = pymupdf.open(stream=source) if isinstance(source, bytes) else pymupdf.open(source)
        with opened as doc:
            return "".join(page.get_text() for page in doc)
    return "".join(t if not t or t.endswith("\n") else t + "\n" for t in page_texts(source))


def _pair_ratio(result: Any, expected: Any) -> float:
    """``fuzz.ratio / 100`` of the stripped texts; a result that cannot be read adds 0, as in OSWorld.

    A missing result (None) reads as no text: OSWorld's ``fitz.open(None)`` is an empty document.
    An expected file that cannot be read is the task's fault: ``EvaluationError``.
    """
    try:
        want = pdf_text(expected)
    except Exception as exc:  # pypdf's errors are many
        raise EvaluationError(f"compare_pdfs: cannot read the expected PDF {expected!r}: {exc}") from exc
    try:
        got = "" if result is None else pdf_text(result)
    except Exception as exc:  # OSWorld logs any and adds 0
        log.info("compare_pdfs: cannot read %r: %s", result, exc)
        return 0.0
    return fuzz.ratio(got.strip(), want.strip()) / 100


@register_metric("compare_pdfs")
def compare_pdfs(result: Any, expected: Any, **options: Any) -> float:
    """The mean text similarity (rapidfuzz ``ratio``) of each result PDF with its expected PDF.

    A list of expected files pairs up with a list of results (up to the shorter) and the sum
    is divided by the number of expected files, as OSWorld does; a single result against a
    list of expected files pairs each expected file with one character of the path in
    OSWorld, none of which opens, so the score is 0.
    """
    if not isinstance(expected, list):
        return _pair_ratio(result, expected)
    if not isinstance(result, list) or not expected:
        return 0.0
    return sum(_pair_ratio(r, e) for r, e in zip(result, expected, strict=False)) / len(expected)


@register_metric("check_pdf_pages")
def check_pdf_pages(result: Any, expected: Any, **options: Any) -> float:
    """1 when the page count stands in ``rules["relation"]`` (an ``operator`` name) to ``ref_value``."""
    relation = rule_value(expected, "relation", "check_pdf_pages")
    ref_value = rule_value(expected, "ref_value", "check_pdf_pages")
    if relation not in _RELATIONS:
        raise EvaluationError(f"check_pdf_pages: relation {relation!r} is not one of {_RELATIONS}")
    if result is None:
        return 0.0
    try:
        pages = len(PdfReader(result).pages)
    except Exception as exc:  # OSWorld's PdfReader raises the same on an unreadable file
        raise ZeroScore(f"check_pdf_pages: pypdf cannot read {result!r} (OSWorld raises): {exc}") from exc
    return float(getattr(operator, relation)(pages, ref_value))


def _stored_picture(item: Any) -> Image.Image | None:
    """The image of a ``page.images`` entry as PyMuPDF's ``extract_image`` hands it to PIL.

    A JPEG or JPEG 2000 stream is the stored file itself (pypdf's ``image`` re-encodes
    it, which moves pixels); any other is decoded losslessly either way.
    """
    xobject = item.indirect_reference.get_object() if item.indirect_reference else None
    filters = xobject.get("/Filter") if isinstance(xobject, StreamObject) else None
    last = filters[-1] if isinstance(filters, ArrayObject) and filters else filters
    if isinstance(xobject, StreamObject) and last in ("/DCTDecode", "/JPXDecode"):
        return Image.open(io.BytesIO(xobject.get_data()))
    return item.image


def pdf_images(path: str) -> list[Image.Image]:
    """The images each page's resources hold, page by page, as PyMuPDF's ``get_images`` lists them.

    Inline images (drawn in the content stream, not resources) are skipped: PyMuPDF does
    not list them. An image PIL cannot decode is skipped, as OSWorld skips it.
    """
    images = []
    for number, page in enumerate(PdfReader(path).pages):
        for item in page.images:
            if item.name.startswith("~"):  # pypdf's name for an inline image
                continue
            try:
                picture = _stored_picture(item)
                if picture is None:
                    raise ValueError("no image data")
                picture.load()
                images.append(picture)
            except Exception as exc:  # decoding errors are many; OSWorld logs and skips
                log.info("compare_pdf_images: image %s on page %d of %s: %s", item.name, number, path, exc)
    return images


@register_metric("compare_pdf_images")
def compare_pdf_images(result: Any, expected: Any, **options: Any) -> float:
    """The share of image pairs whose perceptual hashes differ by at most 5 bits.

    A different number of images is 0; two PDFs without images are 1; a missing or
    unreadable result is 0; an expected file that cannot be read is an ``EvaluationError``.
    """
    try:
        want = pdf_images(expected)
    except Exception as exc:  # pypdf's errors are many
        raise EvaluationError(
            f"compare_pdf_images: cannot read the expected PDF {expected!r}: {exc}"
        ) from exc
    if not result or not Path(result).exists():
        return 0.0
    try:
        got = pdf_images(result)
    except Exception as exc:  # OSWorld catches any extraction error and returns 0
        log.info("compare_pdf_images: cannot read %r: %s", result, exc)
        return 0.0
    if len(got) != len(want):
        return 0.0
    if not got:
        return 1.0
    close = sum(hash_distance(phash(a), phash(b)) <= 5 for a, b in zip(got, want, strict=True))
    return close / len(got)

"""Document metrics: ``compare_docx_files`` (text of .docx, and .odt through odfpy)."""

from __future__ import annotations

import difflib
import re
import zipfile
from pathlib import Path
from typing import Any

import docx
from docx.opc.exceptions import PackageNotFoundError

from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators.registry import register_metric


class _Unreadable(Exception):
    pass


def _paragraphs(path: str) -> list[str]:
    try:
        if Path(path).suffix.lower() == ".odt":
            from odf import teletype, text
            from odf.opendocument import load

            doc = load(path)
            return [teletype.extractText(p) for p in doc.getElementsByType(text.P)]
        return [p.text for p in docx.Document(path).paragraphs]
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError, OSError) as exc:
        raise _Unreadable(str(exc)) from exc


@register_metric("compare_docx_files")
def compare_docx_files(result: Any, expected: Any, **options: Any) -> float:
    """1 when the two documents have the same text.

    Options (OSWorld's):
        ignore_blanks: Compare the whole text with whitespace runs collapsed (default True);
            when False, compare paragraph by paragraph.
        ignore_case: Compare case-insensitively (default False).
        ignore_order: Sort paragraphs first (default False).
        content_only: Pass when the texts are at least 95 % similar (difflib ratio;
            OSWorld uses rapidfuzz) (default False).

    A missing or unreadable result scores 0; an unreadable expected file raises.
    """
    if result is None:
        return 0.0
    if expected is None:
        raise EvaluationError("compare_docx_files needs an expected file.")
    try:
        want = _paragraphs(expected)
    except _Unreadable as exc:
        raise EvaluationError(f"compare_docx_files: expected file {expected!r} is unreadable: {exc}") from exc
    try:
        got = _paragraphs(result)
    except _Unreadable:
        return 0.0
    if options.get("ignore_case", False):
        got, want = [p.lower() for p in got], [p.lower() for p in want]
    if options.get("ignore_order", False):
        got, want = sorted(got), sorted(want)
    if options.get("content_only", False):
        a, b = (re.sub(r"\s+", " ", "\n".join(x)).strip() for x in (got, want))
        return float(difflib.SequenceMatcher(None, a, b).ratio() >= 0.95)
    if options.get("ignore_blanks", True):
        a, b = (re.sub(r"\s+", " ", "\n".join(x)).strip() for x in (got, want))
        return float(a == b)
    return float(got == want)

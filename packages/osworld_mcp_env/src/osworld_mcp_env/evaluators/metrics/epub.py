"""``compare_epub``: an e-book against the gold one, part by part, scored as OSWorld scores it.

As upstream OSWorld reads it (the revision of the shipped corpus, 2026-04-29): three
kinds of part come from each archive's root and are compared line by line: ``toc.ncx``
without its ``navPoint`` lines, ``content.opf`` without its ``dc:identifier`` lines (both
differ between any two conversions), each only where the book has it, and every
``*.html`` re-serialised by lxml (line breaks removed, then pretty-printed). The parts of
the two books are paired in sorted order and the score is the mean of difflib's line
ratios over the result's parts.
"""

from __future__ import annotations

import difflib
import zipfile
from typing import Any

import lxml.etree
import lxml.html

from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric

# The root parts OSWorld reads when present, and the lines it drops from each.
_INDEXES = {"toc.ncx": "navPoint", "content.opf": "dc:identifier"}


def _kept_lines(raw: bytes, dropped: str) -> list[str]:
    return [line for line in raw.decode().splitlines() if dropped not in line]


def _html_lines(raw: bytes) -> list[str]:
    text = raw.decode().replace("\n", "").replace("\r", "")
    tree = lxml.html.fromstring(text.encode())
    return str(lxml.html.tostring(tree, pretty_print=True, encoding="unicode")).splitlines()


def epub_parts(path: str) -> list[tuple[str, list[str]]]:
    """The compared parts of the book, ``(name, lines)``, sorted by name; ``[]`` when it is no zip.

    Raises:
        ZeroScore: Where OSWorld's reading raises: a part that is not UTF-8 or not HTML,
            an ``.html`` in a folder (OSWorld writes each part to a flat folder and
            cannot create the subfolder), a missing file.
    """
    try:
        with zipfile.ZipFile(path) as book:
            names = book.namelist()
            parts = [
                (name, _kept_lines(book.read(name), drop)) for name, drop in _INDEXES.items() if name in names
            ]
            for name in names:
                if not name.endswith(".html"):
                    continue
                if "/" in name:
                    raise ZeroScore(f"compare_epub: {name!r} lies in a folder (OSWorld cannot write it out)")
                parts.append((name, _html_lines(book.read(name))))
    except zipfile.BadZipFile:
        return []  # OSWorld's one guarded error: the book then has no parts
    except (OSError, UnicodeDecodeError, lxml.etree.ParserError) as exc:
        raise ZeroScore(f"compare_epub: cannot read {path!r} (OSWorld raises): {exc}") from exc
    return sorted(parts)


@register_metric("compare_epub")
def compare_epub(result: Any, expected: Any, **options: Any) -> float:
    """The paired parts' line-similarity ratios summed over the result's part count (1: identical).

    Pairs stop at the shorter list, as OSWorld's ``zip`` does, but the sum is divided by
    the result's parts: a result with parts the gold lacks scores less. A result that is
    not a zip archive has no parts and scores 0.
    """
    if result is None:
        return 0.0
    got_parts = epub_parts(result)
    if not got_parts:
        return 0.0
    pairs = zip(got_parts, epub_parts(expected), strict=False)
    total = sum(difflib.SequenceMatcher(a=got, b=want).ratio() for (_, got), (_, want) in pairs)
    return total / len(got_parts)

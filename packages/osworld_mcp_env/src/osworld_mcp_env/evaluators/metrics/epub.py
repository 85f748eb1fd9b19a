"""``compare_epub``: an e-book against the gold one, part by part, scored as OSWorld scores it.

OSWorld unpacks three kinds of part from each archive's root and compares them line by
line: ``toc.ncx`` without its ``navPoint`` lines, ``content.opf`` without its
``dc:identifier`` lines (both differ between any two conversions), and every ``*.html``
re-serialised by lxml (line breaks removed, then pretty-printed). The parts of the two
books are paired in sorted order and the score is the product of difflib's line ratios.
"""

from __future__ import annotations

import difflib
import zipfile
from typing import Any

import lxml.etree
import lxml.html

from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric


def _kept_lines(raw: bytes, dropped: str) -> list[str]:
    return [line for line in raw.decode().splitlines() if dropped not in line]


def _html_lines(raw: bytes) -> list[str]:
    text = raw.decode().replace("\n", "").replace("\r", "")
    tree = lxml.html.fromstring(text.encode())
    return str(lxml.html.tostring(tree, pretty_print=True, encoding="unicode")).splitlines()


def epub_parts(path: str) -> list[tuple[str, list[str]]]:
    """The compared parts of the book, ``(name, lines)``, sorted by name; ``[]`` when it is no zip.

    Raises:
        ZeroScore: Where OSWorld's reading raises: no root ``toc.ncx`` or ``content.opf``,
            a part that is not UTF-8 or not HTML, an ``.html`` in a folder (OSWorld
            writes each part to a flat folder and cannot create the subfolder), a
            missing file.
    """
    try:
        with zipfile.ZipFile(path) as book:
            parts = [
                ("toc.ncx", _kept_lines(book.read("toc.ncx"), "navPoint")),
                ("content.opf", _kept_lines(book.read("content.opf"), "dc:identifier")),
            ]
            for name in book.namelist():
                if not name.endswith(".html"):
                    continue
                if "/" in name:
                    raise ZeroScore(f"compare_epub: {name!r} lies in a folder (OSWorld cannot write it out)")
                parts.append((name, _html_lines(book.read(name))))
    except zipfile.BadZipFile:
        return []  # OSWorld's one guarded error: the book then has no parts
    except (KeyError, OSError, UnicodeDecodeError, lxml.etree.ParserError) as exc:
        raise ZeroScore(f"compare_epub: cannot read {path!r} (OSWorld raises): {exc}") from exc
    return sorted(parts)


@register_metric("compare_epub")
def compare_epub(result: Any, expected: Any, **options: Any) -> float:
    """The product of the paired parts' line-similarity ratios (1 for identical books).

    Pairs stop at the shorter list, as OSWorld's ``zip`` does; so a result that is not a
    zip archive has no parts and scores 1, OSWorld's verdict too.
    """
    if result is None:
        return 0.0
    score = 1.0
    for (_, got), (_, want) in zip(epub_parts(result), epub_parts(expected), strict=False):
        score *= difflib.SequenceMatcher(a=got, b=want).ratio()
    return score

"""compare_epub and compare_htmls on hand-made books and pages, with the scores OSWorld's code gives."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from osworld_mcp_env.evaluators import METRICS, ZeroScore

epub = METRICS.get("compare_epub").fn
htmls = METRICS.get("compare_htmls").fn

TOC = """<?xml version="1.0" encoding="utf-8"?>
<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/">
<head><meta name="dtb:uid" content="{uid}"/></head>
<navMap>
<navPoint id="{uid}-1" playOrder="1"><navLabel><text>Chapter 1</text></navLabel></navPoint>
</navMap>
</ncx>
"""
OPF = """<?xml version="1.0" encoding="utf-8"?>
<package xmlns="http://www.idpf.org/2007/opf">
<metadata>
<dc:title>Pass Through</dc:title>
<dc:identifier id="uuid_id">{uid}</dc:identifier>
</metadata>
</package>
"""
CHAPTER = "<html><body><h1>Chapter 1</h1>\n<p>It was a dark night.</p><p>The end.</p></body></html>"


def book(
    tmp_path: Path, name: str, uid: str, chapter: str = CHAPTER, extra: dict[str, str] | None = None
) -> str:
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("mimetype", "application/epub+zip")
        z.writestr("toc.ncx", TOC.format(uid=uid))
        z.writestr("content.opf", OPF.format(uid=uid))
        z.writestr("index_split_000.html", chapter)
        for member, text in (extra or {}).items():
            z.writestr(member, text)
    return str(path)


def test_conversions_differing_only_in_identifiers_are_equal(tmp_path: Path):
    gold = book(tmp_path, "gold.epub", "1111")
    # The uid sits on navPoint and dc:identifier lines (dropped) and in the head's meta (kept).
    assert epub(book(tmp_path, "a.epub", "1111"), gold) == 1.0
    # The line breaks inside a chapter vanish before lxml pretty-prints it.
    assert epub(book(tmp_path, "b.epub", "1111", CHAPTER.replace("\n", "")), gold) == 1.0


def test_a_changed_part_lowers_the_mean_of_the_parts_ratios(tmp_path: Path):
    gold = book(tmp_path, "gold.epub", "1111")
    changed = book(tmp_path, "c.epub", "1111", CHAPTER.replace("dark", "stormy"))
    # lxml pretty-prints the chapter on 5 lines ("<html><body>", "<h1>...", "<p>...", "<p>...",
    # "</body></html>"); one differs: difflib's ratio 2*4/10; toc and opf 1; mean of the three.
    assert epub(changed, gold) == pytest.approx((1 + 1 + 0.8) / 3)
    other_uid = book(tmp_path, "d.epub", "2222")
    # toc.ncx's head line with the uid differs: 2*5/12 on its 6 lines; opf equal; chapter equal.
    assert epub(other_uid, gold) == pytest.approx((10 / 12 + 1 + 1) / 3)


def test_the_mean_is_over_the_results_parts(tmp_path: Path):
    gold = book(tmp_path, "gold.epub", "1111")
    # A fourth part shifts the sorted pairing (index_split_001.html <-> toc.ncx: ratio 0) and
    # counts in the divisor: 2 equal pairs of 4 parts.
    longer = book(tmp_path, "e.epub", "1111", extra={"index_split_001.html": "<p>More.</p>"})
    assert epub(longer, gold) == pytest.approx(2 / 4)
    # Fewer parts: the pairs stop at the result's.
    only_opf = tmp_path / "only_opf.epub"
    with zipfile.ZipFile(only_opf, "w") as z:
        z.writestr("content.opf", OPF.format(uid="9"))
    assert epub(str(only_opf), gold) == 1.0  # a missing toc.ncx is skipped, not an error


def test_quirks_of_osworlds_reading(tmp_path: Path):
    gold = book(tmp_path, "gold.epub", "1111")
    not_zip = tmp_path / "novel.epub"
    not_zip.write_text("just text")
    assert epub(str(not_zip), gold) == 0.0  # no parts: nothing to average
    assert epub(None, gold) == 0.0
    with pytest.raises(ZeroScore, match="folder"):
        epub(book(tmp_path, "nested.epub", "1111", extra={"text/part1.html": "<p>x</p>"}), gold)
    not_utf8 = book(tmp_path, "latin.epub", "1111")
    with zipfile.ZipFile(not_utf8, "a") as z:
        z.writestr("y.html", "<p>caf\xe9</p>".encode("latin-1"))
    with pytest.raises(ZeroScore, match="OSWorld raises"):
        epub(not_utf8, gold)


PAGE = """<!DOCTYPE html>
<html><head><title>Survey</title></head>
<body><table class="data"><tr><td>2021</td><td>Total</td></tr></table></body></html>
"""


def test_htmls_pair_nodes_in_document_order(tmp_path: Path):
    gold = tmp_path / "gold.html"
    gold.write_text(PAGE)
    same = tmp_path / "same.html"
    same.write_text(PAGE)
    assert htmls(str(same), str(gold)) == 1.0
    for change in (("2021", "2022"), ('class="data"', 'class="grid"'), ("<td>Total", "<th>Total")):
        other = tmp_path / "other.html"
        other.write_text(PAGE.replace(*change))
        assert htmls(str(other), str(gold)) == 0.0, change
    # A tag's text spans its descendants, so a page cut short fails at <html> already...
    prefix = tmp_path / "prefix.html"
    prefix.write_text(PAGE.split("<body>")[0])
    assert htmls(str(gold), str(prefix)) == 0.0
    # ...but the walk stops with the shorter page: a comment after </html> (no text) is never compared.
    longer = tmp_path / "longer.html"
    longer.write_text(PAGE + "<!-- saved by the agent -->\n")
    assert htmls(str(longer), str(gold)) == 1.0
    with pytest.raises(ZeroScore):
        htmls(str(tmp_path / "missing.html"), str(gold))

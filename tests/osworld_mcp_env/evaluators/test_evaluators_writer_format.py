"""One-task Writer metrics on hand-made documents, with the score OSWorld's own function gives and why.

Each expected number follows OSWorld's desktop_env/evaluators/metrics/docs.py; the
comment beside it says which step of that function gives it.
"""

from __future__ import annotations

from pathlib import Path

import docx
import pytest
from docx.enum.text import WD_BREAK, WD_PARAGRAPH_ALIGNMENT, WD_TAB_ALIGNMENT
from docx.shared import Inches, Pt, RGBColor
from odf.opendocument import OpenDocumentText
from odf.style import Style, TextProperties
from odf.text import P, Span
from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators import METRICS, ZeroScore
from osworld_mcp_env.evaluators.metrics.cielab import ciede2000, srgb_to_lab


def metric(name: str):
    return METRICS.get(name).fn


def document(paragraphs: list[str] | None = None) -> docx.document.Document:
    doc = docx.Document()
    for text in paragraphs or []:
        doc.add_paragraph(text)
    return doc


def save(doc: docx.document.Document, path: Path) -> str:
    doc.save(str(path))
    return str(path)


def plain(path: Path, paragraphs: list[str]) -> str:
    return save(document(paragraphs), path)


def xcu(path: Path, *fonts: str) -> str:
    items = "".join(
        '<item oor:path="/org.openoffice.Office.Writer/DefaultFont">'
        f'<prop oor:name="Standard" oor:op="fuse"><value>{font}</value></prop></item>'
        for font in fonts
    )
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<oor:items xmlns:oor="http://openoffice.org/2001/registry">'
        '<item oor:path="/org.openoffice.Office.Common/Misc">'
        '<prop oor:name="Standard"><value>x</value></prop></item>'
        f"{items}</oor:items>"
    )
    return str(path)


def test_find_default_font_reads_the_last_standard_value(tmp_path: Path):
    rules = {"font_name": "Times New Roman"}
    # The last DefaultFont/Standard value wins (the loop overwrites default_font): 1.
    assert metric("find_default_font")(xcu(tmp_path / "a.xcu", "Arial", "Times New Roman"), rules) == 1.0
    assert metric("find_default_font")(xcu(tmp_path / "b.xcu", "Times New Roman", "Arial"), rules) == 0.0
    # Another path's "Standard" value is not the default font; none found -> None != name: 0.
    assert metric("find_default_font")(xcu(tmp_path / "c.xcu"), rules) == 0.0
    # A file that is not XML: the parse error is logged, default_font stays None: 0.
    (tmp_path / "bad.xcu").write_text("not xml")
    assert metric("find_default_font")(str(tmp_path / "bad.xcu"), rules) == 0.0
    assert metric("find_default_font")(None, rules) == 0.0
    with pytest.raises(EvaluationError, match="font_name"):
        metric("find_default_font")(xcu(tmp_path / "d.xcu", "Arial"), {})


def test_contains_page_break_counts_page_breaks_in_body_runs(tmp_path: Path):
    doc = document(["one"])
    for _ in range(2):
        doc.add_paragraph().add_run().add_break(WD_BREAK.PAGE)
    doc.add_paragraph().add_run().add_break(WD_BREAK.LINE)  # a line break is not a page break
    two = save(doc, tmp_path / "two.docx")
    # Two <w:br w:type="page"/>: the count matches 2 -> 1; 5 was asked -> 0.
    assert metric("contains_page_break")(two, {"page_break_count": 2}) == 1.0
    assert metric("contains_page_break")(two, {"page_break_count": 5}) == 0.0
    # Without a count, any page break is enough: 1; none at all: 0.
    assert metric("contains_page_break")(two, {}) == 1.0
    assert metric("contains_page_break")(plain(tmp_path / "none.docx", ["x"]), {}) == 0.0
    # A break inside a table cell is not in doc.paragraphs: not counted (0 with a count of 1).
    table_doc = document()
    table_doc.add_table(rows=1, cols=1).cell(0, 0).paragraphs[0].add_run().add_break(WD_BREAK.PAGE)
    assert metric("contains_page_break")(save(table_doc, tmp_path / "t.docx"), {"page_break_count": 1}) == 0.0


def test_compare_font_names_needs_the_font_on_every_run(tmp_path: Path):
    rules = {"font_name": "Times New Roman"}
    doc = document()
    for text in ("a", "b"):
        doc.add_paragraph().add_run(text).font.name = "Times New Roman"
    assert metric("compare_font_names")(save(doc, tmp_path / "a.docx"), rules) == 1.0
    # One run without a direct font: run.font.name is None != "Times New Roman" -> 0.
    doc.add_paragraph("inherits its font")
    assert metric("compare_font_names")(save(doc, tmp_path / "b.docx"), rules) == 0.0
    # No run at all: the loops never fail -> 1 (OSWorld's vacuous truth).
    assert metric("compare_font_names")(plain(tmp_path / "e.docx", []), rules) == 1.0


def test_compare_subscript_contains_needs_a_subscript_run_at_the_same_place(tmp_path: Path):
    def with_subscript(path: Path, paragraph_index: int) -> str:
        doc = document(["lead"])
        p = doc.add_paragraph("H")
        p.add_run("2").font.subscript = paragraph_index == 1
        q = doc.add_paragraph("H")
        q.add_run("2").font.subscript = paragraph_index == 2
        return save(doc, path)

    gold = with_subscript(tmp_path / "g.docx", 1)
    # Both have a subscript run at paragraph 1, run 1: 1.
    assert metric("compare_subscript_contains")(with_subscript(tmp_path / "a.docx", 1), gold) == 1.0
    # The subscript is in another paragraph: no pair of runs is subscript in both -> 0.
    assert metric("compare_subscript_contains")(with_subscript(tmp_path / "b.docx", 2), gold) == 0.0
    assert metric("compare_subscript_contains")(None, gold) == 0.0


def test_has_page_numbers_in_footers_looks_for_a_digit(tmp_path: Path):
    doc = document(["body"])
    doc.sections[0].footer.paragraphs[0].text = "Page 1"
    assert metric("has_page_numbers_in_footers")(save(doc, tmp_path / "a.docx"), None) == 1.0
    # A footer without a digit: 0. No footer at all: python-docx gives an empty one -> 0.
    doc.sections[0].footer.paragraphs[0].text = "Page"
    assert metric("has_page_numbers_in_footers")(save(doc, tmp_path / "b.docx"), None) == 0.0
    assert metric("has_page_numbers_in_footers")(plain(tmp_path / "c.docx", ["body"]), None) == 0.0


def test_is_first_line_centered(tmp_path: Path):
    doc = document(["Title", "body"])
    doc.paragraphs[0].alignment = WD_PARAGRAPH_ALIGNMENT.CENTER
    assert metric("is_first_line_centered")(save(doc, tmp_path / "a.docx"), None) == 1.0
    # Only the second paragraph centred: the first has alignment None -> 0.
    doc = document(["Title", "body"])
    doc.paragraphs[1].alignment = WD_PARAGRAPH_ALIGNMENT.CENTER
    assert metric("is_first_line_centered")(save(doc, tmp_path / "b.docx"), None) == 0.0
    # No paragraph: doc.paragraphs[0] raises IndexError in OSWorld -> 0 with a reason here.
    empty = save(document(), tmp_path / "e.docx")
    with pytest.raises(ZeroScore, match="no paragraph"):
        metric("is_first_line_centered")(empty, None)


def tabbed(path: Path, rows: list[str], stops: list[tuple[float, WD_TAB_ALIGNMENT]]) -> str:
    doc = document()
    for row in rows:
        p = doc.add_paragraph(row)
        for inches, alignment in stops:
            p.paragraph_format.tab_stops.add_tab_stop(Inches(inches), alignment)
    doc.add_paragraph("")  # blank paragraphs are dropped before pairing
    return save(doc, path)


def test_check_tabstops_scores_the_position_differences(tmp_path: Path):
    rows = ["Alpha beta gamma\t12", "Delta epsilon zeta\t34"]
    options = {"word_number_split_by_tabstop": 3, "index": 0}
    gold = tabbed(tmp_path / "g.docx", rows, [(5.0, WD_TAB_ALIGNMENT.RIGHT)])
    same = tabbed(tmp_path / "s.docx", rows, [(5.0, WD_TAB_ALIGNMENT.RIGHT)])
    assert metric("check_tabstops")(same, gold, **options) == 1.0
    # python-docx's default page: 8.5 in wide with 1.25 in margins -> 6 in of text. Each
    # paragraph's stop is 0.6 in off: 0.6 / 6 = 0.1 per paragraph, mean 0.1 -> 1 - 0.1 = 0.9.
    near = tabbed(tmp_path / "n.docx", rows, [(4.4, WD_TAB_ALIGNMENT.RIGHT)])
    assert metric("check_tabstops")(near, gold, **options) == pytest.approx(0.9)
    # Another alignment: 0. A left stop at 0 is ignored on both sides (still 1).
    left = tabbed(tmp_path / "l.docx", rows, [(5.0, WD_TAB_ALIGNMENT.LEFT)])
    assert metric("check_tabstops")(left, gold, **options) == 0.0
    zero = tabbed(tmp_path / "z.docx", rows, [(0, WD_TAB_ALIGNMENT.LEFT), (5.0, WD_TAB_ALIGNMENT.RIGHT)])
    assert metric("check_tabstops")(zero, gold, **options) == 1.0
    # The first tab-separated part must have 3 words: "Alpha beta" has 2 -> 0.
    short = tabbed(
        tmp_path / "w.docx", ["Alpha beta\t12", "Delta epsilon zeta\t34"], [(5.0, WD_TAB_ALIGNMENT.RIGHT)]
    )
    assert metric("check_tabstops")(short, gold, **options) == 0.0
    # A different number of non-blank paragraphs: 0.
    one = tabbed(tmp_path / "o.docx", rows[:1], [(5.0, WD_TAB_ALIGNMENT.RIGHT)])
    assert metric("check_tabstops")(one, gold, **options) == 0.0


def odt(path: Path, words: list[tuple[str, str | None]]) -> str:
    """One paragraph of spans; each span's automatic style has the given background colour."""
    doc = OpenDocumentText()
    p = P()
    for i, (word, colour) in enumerate(words):
        style = Style(name=f"T{i}", family="text")
        if colour:
            style.addElement(TextProperties(backgroundcolor=colour))
        doc.automaticstyles.addElement(style)
        p.addElement(Span(stylename=style, text=word))
    doc.text.addElement(p)
    doc.save(str(path))
    return str(path)


def test_check_highlighted_words_fails_on_a_yellow_span(tmp_path: Path):
    gold = odt(tmp_path / "g.odt", [("call ", None), ("now", None)])
    # Same text, no yellow background: 1.
    assert (
        metric("check_highlighted_words")(
            odt(tmp_path / "a.odt", [("call ", None), ("now", "#00ff00")]), gold
        )
        == 1.0
    )
    # A span styled with fo:background-color="#ffff00": highlighted -> 0.
    assert (
        metric("check_highlighted_words")(
            odt(tmp_path / "b.odt", [("call ", None), ("now", "#ffff00")]), gold
        )
        == 0.0
    )
    # The text differs: compare_docx_files is 0 first -> 0.
    assert (
        metric("check_highlighted_words")(odt(tmp_path / "c.odt", [("call ", None), ("later", None)]), gold)
        == 0.0
    )


def styled_runs(path: Path, texts: list[str], *, strike_last: list[bool], italic_size: float | None) -> str:
    doc = document(texts[:-1])
    last = doc.add_paragraph()
    for word, strike in zip(texts[-1].split(" "), strike_last, strict=True):
        run = last.add_run(word + " ")
        run.font.strike = strike
    run = doc.paragraphs[0].add_run(" emphasised")
    run.italic = True
    if italic_size is not None:
        run.font.size = Pt(italic_size)
    return save(doc, path)


def test_strike_through_and_italic_size_need_the_text_and_the_format(tmp_path: Path):
    texts = ["Intro", "drop these"]
    gold = styled_runs(tmp_path / "g.docx", texts, strike_last=[True, True], italic_size=14)
    ok = styled_runs(tmp_path / "a.docx", texts, strike_last=[True, True], italic_size=14)
    half = styled_runs(tmp_path / "b.docx", texts, strike_last=[True, False], italic_size=12)
    unsized = styled_runs(tmp_path / "c.docx", texts, strike_last=[True, True], italic_size=None)
    strike, italic = metric("evaluate_strike_through_last_paragraph"), metric("check_italic_font_size_14")
    assert strike(ok, gold) == 1.0 and italic(ok, gold) == 1.0
    # One run of the last paragraph not struck: 0. An italic run at 12 pt: 0.
    assert strike(half, gold) == 0.0 and italic(half, gold) == 0.0
    # An italic run with no direct size (font.size None): 0.
    assert italic(unsized, gold) == 0.0
    # The text differs from the gold: compare_docx_files fails first -> 0 for both.
    other = styled_runs(
        tmp_path / "d.docx", ["Other", "drop these"], strike_last=[True, True], italic_size=14
    )
    assert strike(other, gold) == 0.0 and italic(other, gold) == 0.0


def test_compare_docx_files_and_ignore_new_lines(tmp_path: Path):
    gold = plain(tmp_path / "g.docx", ["Model A", "", "Model B  scores"])
    fn = metric("compare_docx_files_and_ignore_new_lines")
    # Empty paragraphs are dropped; whitespace collapses (ignore_blanks default): 1.
    assert fn(plain(tmp_path / "a.docx", ["Model A", "Model B scores"]), gold) == 1.0
    # ignore_blanks false: paragraph by paragraph, "Model B scores" != "Model B  scores" -> 0.
    assert fn(plain(tmp_path / "b.docx", ["Model A", "Model B scores"]), gold, ignore_blanks=False) == 0.0
    assert (
        fn(plain(tmp_path / "c.docx", ["Model A", "", "", "Model B  scores"]), gold, ignore_blanks=False)
        == 1.0
    )
    # Joined texts: "Model A Model B" (a paragraph split differently) still equals -> 1 with blanks ignored.
    assert fn(plain(tmp_path / "d.docx", ["Model A Model B", "scores"]), gold) == 1.0
    assert fn(plain(tmp_path / "e.docx", ["Model C"]), gold) == 0.0


def test_compare_references_rescales_the_mean_similarity(tmp_path: Path):
    gold = plain(
        tmp_path / "g.docx", ["Essay", "References", "Smith, J. (2020). Title.", "", "Lee, K. (2019). Book."]
    )
    fn = metric("compare_references")
    same = plain(
        tmp_path / "a.docx",
        ["Other essay", "References", "Smith, J. (2020). Title.", "Lee, K. (2019). Book."],
    )
    # Identical references: mean ratio 1.0 >= 0.6 + 0.01 -> (1 - 0.6) / (1 - 0.6) = 1.
    assert fn(same, gold, content_only=True, reference_base_result=0.6) == pytest.approx(1.0)
    # One reference gains a character: fuzz.ratio is the indel similarity 1 - 1/(21 + 22) = 42/43,
    # the mean (1 + 42/43) / 2 = 85/86 >= 0.5 + 0.01 -> (85/86 - 0.5) / (1 - 0.5) = 42/43.
    close = plain(tmp_path / "b.docx", ["References", "Smith, J. (2020). Title.", "Lee, K. (2019). Books."])
    assert fn(close, gold) == pytest.approx(42 / 43)
    # The second reference shares nothing: mean (1 + 0) / 2 = 0.5 < 0.51 -> 0.
    assert fn(plain(tmp_path / "h.docx", ["References", "Smith, J. (2020). Title.", "qqqq"]), gold) == 0.0
    # A different number of references: 0. Neither has the heading: 1. Only one has it: 0.
    assert fn(plain(tmp_path / "c.docx", ["References", "Smith, J. (2020). Title."]), gold) == 0.0
    assert fn(plain(tmp_path / "d.docx", ["x"]), plain(tmp_path / "e.docx", ["y"])) == 1.0
    assert fn(plain(tmp_path / "f.docx", ["x"]), gold) == 0.0


def test_compare_unique_train_records(tmp_path: Path):
    original = plain(
        tmp_path / "o.docx",
        ["08:00:00, T1, S1, 1", "08:05:00, T2, S1, 2", "08:10:00, T1, S2, 1", "08:20:00, T3, S3, 3"],
    )
    gold = plain(tmp_path / "g.docx", ["08:00:00, T1, S1, 1", "08:05:00, T2, S1, 2", "08:20:00, T3, S3, 3"])
    fn = metric("compare_unique_train_records")
    # Lines all from the original, ids unique, the gold's id set and line count: 1.
    kept_other = plain(
        tmp_path / "a.docx", ["08:10:00, T1, S2, 1", "08:05:00, T2, S1, 2", "08:20:00, T3, S3, 3"]
    )
    assert fn(kept_other, [gold, original]) == 1.0
    # T1 kept twice: duplicate ids -> 0.
    assert fn(original, [gold, original]) == 0.0
    # A line that is not in the original: 0.
    edited = plain(tmp_path / "b.docx", ["08:00:00, T1, S9, 1", "08:05:00, T2, S1, 2", "08:20:00, T3, S3, 3"])
    assert fn(edited, [gold, original]) == 0.0
    # A lone expected path instead of [gold, original]: 0.
    assert fn(kept_other, gold) == 0.0


# (colour, colour, scikit-image's deltaE_ciede2000 of their rgb2lab), computed once with scikit-image.
REFERENCE_DELTAS = [
    ((250, 0, 0), (255, 0, 0), 1.046642408616),
    ((230, 20, 20), (255, 0, 0), 5.342395355443),
    ((255, 0, 0), (0, 0, 255), 52.881399704557),
    ((0, 0, 0), (255, 255, 255), 100.000000176025),
    ((128, 128, 128), (0, 0, 255), 38.670572750481),
    ((0, 0, 0), (0, 0, 0), 0.0),
    ((10, 200, 30), (255, 0, 0), 79.890738447869),
    ((90, 10, 250), (0, 0, 255), 4.582675859279),
]


def coloured_table(path: Path, words: list[tuple[str, tuple[int, int, int] | None]]) -> str:
    doc = document(["Sight words"])
    cells = doc.add_table(rows=1, cols=len(words)).rows[0].cells
    for cell, (word, colour) in zip(cells, words, strict=True):
        run = cell.paragraphs[0].add_run(word)
        if colour is not None:
            run.font.color.rgb = RGBColor(*colour)
    return save(doc, path)


def test_evaluate_colored_words_in_tables_uses_ciede2000(tmp_path: Path):
    fn = metric("evaluate_colored_words_in_tables")
    gold = coloured_table(tmp_path / "g.docx", [("and", None), ("big", None)])
    # Vowel word exactly red, the other exactly blue: both differences 0 <= 3.5 -> 1.
    assert fn(coloured_table(tmp_path / "a.docx", [("and", (255, 0, 0)), ("big", (0, 0, 255))]), gold) == 1.0
    # Colours swapped: red is far from blue (CIEDE2000 ~ 52.9 > 3.5) -> 0.
    assert fn(coloured_table(tmp_path / "b.docx", [("and", (0, 0, 255)), ("big", (255, 0, 0))]), gold) == 0.0
    # Nearly red: CIEDE2000((250, 0, 0), (255, 0, 0)) = 1.05 (scikit-image's value) <= 3.5 -> 1;
    # (230, 20, 20) is 5.34 from red > 3.5 -> 0, and passes with threshold 7.
    near = coloured_table(tmp_path / "c.docx", [("and", (250, 0, 0)), ("big", (0, 0, 255))])
    assert fn(near, gold) == 1.0
    off = coloured_table(tmp_path / "d.docx", [("and", (230, 20, 20)), ("big", (0, 0, 255))])
    assert fn(off, gold) == 0.0 and fn(off, gold, threshold=7) == 1.0
    # A word without a direct colour: rgb2lab(None[0]) raises in OSWorld -> 0 with the reason.
    with pytest.raises(ZeroScore, match="no direct colour"):
        fn(coloured_table(tmp_path / "e.docx", [("and", None), ("big", (0, 0, 255))]), gold)


def test_ciede2000_matches_scikit_image_values():
    # Values printed by skimage.color.deltaE_ciede2000(rgb2lab(c1 / 255), rgb2lab(c2 / 255)).
    for c1, c2, want in REFERENCE_DELTAS:
        lab = [srgb_to_lab((c[0] / 255, c[1] / 255, c[2] / 255)) for c in (c1, c2)]
        assert ciede2000(*lab) == pytest.approx(want, abs=1e-9)  # 12 printed decimals

"""Office metrics on hand-made documents, with the score OSWorld's own function gives and why.

Each expected number is derived from OSWorld's code (desktop_env/evaluators/metrics/
table.py, docs.py, slides.py); the comment beside it says which line of reasoning gives it.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import docx
import openpyxl
import pytest
from osworld_mcp_env.errors import TaskError
from osworld_mcp_env.evaluators import METRICS, ZeroScore, evaluate
from osworld_mcp_env.tasks import TaskContext, load_task
from PIL import Image
from pptx import Presentation
from pptx.util import Inches, Pt


def metric(name: str):
    return METRICS.get(name).fn


def xlsx(path: Path, rows, *, title: str = "Sheet1") -> str:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = title
    for row in rows:
        ws.append(list(row))
    wb.save(path)
    return str(path)


def with_cached_value(path: Path, coord: str, formula: str, cached: str) -> str:
    """Rewrites one cell as LibreOffice saves a formula: the formula plus its cached value."""
    with zipfile.ZipFile(path) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    sheet = parts["xl/worksheets/sheet1.xml"].decode()
    start = sheet.index(f'<c r="{coord}"')
    end = sheet.index("</c>", start) + 4
    sheet = sheet[:start] + f'<c r="{coord}"><f>{formula}</f><v>{cached}</v></c>' + sheet[end:]
    parts["xl/worksheets/sheet1.xml"] = sheet.encode()
    with zipfile.ZipFile(path, "w") as z:
        for name, data in parts.items():
            z.writestr(name, data)
    return str(path)


def table(result, expected, *rules):
    return metric("compare_table")(result, expected, rules=list(rules))


DATA = {"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}


# --- compare_table: sheet_data (pandas reading) ------------------------------------------------------


def test_sheet_data_rounds_to_four_decimals_by_default(tmp_path: Path):
    gold = xlsx(tmp_path / "g.xlsx", [["x"], [1.23456]])
    # round(4): 1.23456 -> 1.2346 and 1.23461 -> 1.2346: equal, so OSWorld returns 1.
    near = xlsx(tmp_path / "n.xlsx", [["x"], [1.23461]])
    # 1.2351 differs at the 4th decimal: 0.
    far = xlsx(tmp_path / "f.xlsx", [["x"], [1.2351]])
    assert table(near, gold, DATA) == 1.0
    assert table(far, gold, DATA) == 0.0
    # precision 1: 1.2351 -> 1.2 and 1.23456 -> 1.2: equal -> 1.
    assert table(far, gold, {**DATA, "precision": 1}) == 1.0


def test_sheet_data_reads_like_pandas(tmp_path: Path):
    # The first row is pandas' header: a different header is a different frame (0).
    gold = xlsx(tmp_path / "g.xlsx", [["Name", "Qty"], ["a", 3]])
    assert table(xlsx(tmp_path / "h.xlsx", [["name", "Qty"], ["a", 3]]), gold, DATA) == 0.0
    # "N/A" is read as NaN, and NaN equals NaN in DataFrame.equals: an empty cell matches "N/A" (1).
    na_gold = xlsx(tmp_path / "na.xlsx", [["x", "y"], [1, "N/A"]])
    assert table(xlsx(tmp_path / "e.xlsx", [["x", "y"], [1, None]]), na_gold, DATA) == 1.0
    # A boolean column has dtype bool, an int column int64: True is not 1 for equals (0).
    bools = xlsx(tmp_path / "b.xlsx", [["x"], [True]])
    assert table(xlsx(tmp_path / "i.xlsx", [["x"], [1]]), bools, DATA) == 0.0
    # ignore_case is not read by OSWorld's sheet_data: "ABC" vs "abc" stays 0.
    upper = xlsx(tmp_path / "u.xlsx", [["x"], ["ABC"]])
    lower = xlsx(tmp_path / "l.xlsx", [["x"], ["abc"]])
    assert table(upper, lower, {**DATA, "ignore_case": True}) == 0.0


def test_sheet_data_missing_sheets(tmp_path: Path):
    gold = xlsx(tmp_path / "g.xlsx", [["x"], [1]])
    res = xlsx(tmp_path / "r.xlsx", [["x"], [1]])
    # The result lacks sheet "Nope": OSWorld's first read returns None and the rule scores 0.
    assert table(res, gold, {**DATA, "sheet_idx0": "RNNope"}) == 0.0
    # The expected side lacks it: OSWorld calls .round on None and raises; we score 0 with a reason.
    with pytest.raises(ZeroScore, match="OSWorld raises"):
        table(res, gold, {**DATA, "sheet_idx1": "ENNope"})


# --- compare_table: check_cell reads the cached value ------------------------------------------------


def test_check_cell_compares_the_value_libreoffice_cached(tmp_path: Path):
    path = tmp_path / "r.xlsx"
    xlsx(path, [[41.99, 0]])
    r = with_cached_value(path, "B1", "SUM(A1:A5)", "41.99")

    def cell(coord, method, ref):
        props = {"value": {"method": method, "ref": ref}}
        return table(r, None, {"type": "check_cell", "sheet_idx": 0, "coordinate": coord, "props": props})

    # read_cell_value returns float("41.99") for B1, a formula cell: |41.99 - 42| <= 0.1 -> 1.
    assert cell("B1", "approx:0.1", 42) == 1.0
    assert cell("B1", "approx:0.001", 42) == 0.0
    # The formula text is never seen: a regex on it does not match the float -> OSWorld catches the
    # TypeError of re.search on a float and scores 0.
    assert cell("B1", "re", "SUM") == 0.0
    # An absent cell reads None; eq None None is True -> 1.
    assert cell("Z9", "eq", None) == 1.0


def test_check_cell_style_props(tmp_path: Path):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"] = "Title"
    ws["A1"].font = openpyxl.styles.Font(bold=True, color="FFFF0000")
    ws.merge_cells("A2:B2")
    wb.save(tmp_path / "s.xlsx")
    path = str(tmp_path / "s.xlsx")

    def cell(coord, prop, method, ref):
        rule = {
            "type": "check_cell",
            "sheet_idx": 0,
            "coordinate": coord,
            "props": {prop: {"method": method, "ref": ref}},
        }
        return table(path, None, rule)

    assert cell("A1", "font_bold", "eq", True) == 1.0
    assert cell("A1", "font_color", "eq", "FFFF0000") == 1.0
    # B2 is covered by the merge A2:B2 (an openpyxl MergedCell): merge is True there, False at A1.
    assert cell("B2", "merge", "eq", True) == 1.0
    assert cell("A1", "merge", "eq", True) == 0.0


# --- compare_table: sheet_fuzzy, freeze, sheet_print ------------------------------------------------


def test_sheet_fuzzy_ignore_chars_and_rapidfuzz_ratio(tmp_path: Path):
    gold = xlsx(tmp_path / "g.xlsx", [["(555) 123-4567", "kitten"]])
    res = xlsx(tmp_path / "r.xlsx", [["555 1234567", "sitting"]])

    def fuzzy(**spec):
        rule = {"type": "sheet_fuzzy", "sheet_idx0": 0, "sheet_idx1": "EI0", "rules": [spec]}
        return table(res, gold, rule)

    # ignore_chars " ()-" strips both to "5551234567": exact_match 1; without it 0.
    assert fuzzy(range=["A1"], type="exact_match", ignore_chars=" ()-") == 1.0
    assert fuzzy(range=["A1"], type="exact_match") == 0.0
    # rapidfuzz's fuzz.ratio("sitting", "kitten") is 61.538...: passes 61, fails 62.
    assert fuzzy(range=["B1"], type="fuzzy_match", threshold=61) == 1.0
    assert fuzzy(range=["B1"], type="fuzzy_match", threshold=62) == 0.0
    # An empty cell reads as the text "None" on both sides: exact_match passes.
    assert fuzzy(range=["C5"], type="exact_match") == 1.0


def test_sheet_fuzzy_uses_rapidfuzz_not_difflib(tmp_path: Path):
    # fuzz.ratio("abbcaba", "bbab") = 72.7 (LCS based), difflib's 36.4: threshold 70 passes in OSWorld.
    gold = xlsx(tmp_path / "g.xlsx", [["bbab"]])
    res = xlsx(tmp_path / "r.xlsx", [["abbcaba"]])
    spec = {"range": ["A1"], "type": "fuzzy_match", "threshold": 70}
    assert (
        table(res, gold, {"type": "sheet_fuzzy", "sheet_idx0": 0, "sheet_idx1": "EI0", "rules": [spec]})
        == 1.0
    )


def freeze_xlsx(path: Path, cell: str, top_left: str) -> str:
    wb = openpyxl.Workbook()
    wb.active.freeze_panes = cell
    wb.active.sheet_view.pane.topLeftCell = top_left  # where the user scrolled to
    wb.save(path)
    return str(path)


def test_freeze_compares_split_counts_not_the_scroll_position(tmp_path: Path):
    gold = freeze_xlsx(tmp_path / "g.xlsx", "B2", "B2")
    scrolled = freeze_xlsx(tmp_path / "s.xlsx", "B2", "B40")
    other = freeze_xlsx(tmp_path / "o.xlsx", "C2", "C2")
    rule = {"type": "freeze", "sheet_idx0": 0, "sheet_idx1": "EI0"}
    # Same xSplit=1, ySplit=1 in state "frozen": ("frozen", 1, 1) on both sides -> 1.
    assert table(scrolled, gold, rule) == 1.0
    assert table(other, gold, rule) == 0.0


def test_sheet_print_compares_csv_exports_beside_the_books(tmp_path: Path):
    res = xlsx(tmp_path / "res.xlsx", [[1]])
    gold = xlsx(tmp_path / "gold.xlsx", [[1]])
    (tmp_path / "res-Sheet1.csv").write_text("A,B\n1,2 \n\n")
    (tmp_path / "gold-Sheet1.csv").write_text("a,b\n1,2\n")
    rule = {"type": "sheet_print", "sheet_idx0": "RNSheet1", "sheet_idx1": "ENSheet1"}
    # Lines are stripped and trailing blank lines dropped; "A,B" vs "a,b" differs -> 0; with ignore_case 1.
    assert table(res, gold, rule) == 0.0
    assert table(res, gold, {**rule, "ignore_case": True}) == 1.0


def test_unimplemented_rule_types_and_options_fail_at_load():
    def task(rule):
        ev = {"func": "compare_table", "result": {"type": "vm_file", "path": "/a.xlsx", "dest": "a.xlsx"}}
        return {"id": "t", "instruction": "x", "evaluator": {**ev, "options": {"rules": [rule]}}}

    with pytest.raises(TaskError, match=r"Unknown compare_table rule type 'sparkle'.* Known: .*sparkline"):
        load_task(task({"type": "sparkle"}))
    with pytest.raises(TaskError, match="option 'tolerance' is not implemented"):
        load_task(task({**DATA, "tolerance": 2}))
    with pytest.raises(TaskError, match="cell prop 'glow' is not implemented"):
        load_task(
            task(
                {
                    "type": "check_cell",
                    "sheet_idx": 0,
                    "coordinate": "A1",
                    "props": {"glow": {"method": "eq"}},
                }
            )
        )
    with pytest.raises(TaskError, match=r"compare_docx_files\): option 'fuzzy' is not implemented"):
        load_task(
            {
                "id": "t",
                "instruction": "x",
                "evaluator": {"func": "compare_docx_files", "options": {"fuzzy": 1}},
            }
        )


# --- compare_csv ---------------------------------------------------------------------------------------


def test_compare_csv_with_a_list_of_expected_files(tmp_path: Path):
    res, a, b = tmp_path / "r.csv", tmp_path / "a.csv", tmp_path / "b.csv"
    res.write_text("x,y\n1,2\n")
    a.write_text("x,y\n9,9\n")
    b.write_text("x,y\n1,2\n")
    # OSWorld returns 1 when the result matches any expected file; a missing one is skipped.
    assert metric("compare_csv")(str(res), [str(tmp_path / "none.csv"), str(a), str(b)]) == 1.0
    assert metric("compare_csv")(str(res), [str(a)]) == 0.0


# --- compare_docx_files ---------------------------------------------------------------------------------


def docx_file(path: Path, paragraphs) -> str:
    doc = docx.Document()
    for p in paragraphs:
        doc.add_paragraph(p)
    doc.save(path)
    return str(path)


def test_compare_docx_files_similarity_options(tmp_path: Path):
    gold = docx_file(tmp_path / "g.docx", ["Hello world", "", "Second line"])
    res = docx_file(tmp_path / "r.docx", ["Hello word", "Second line"])
    # content_only: rapidfuzz ratio of "Hello world Second line" vs "Hello word Second line" = 2*22/45.
    assert metric("compare_docx_files")(res, gold, content_only=True) == pytest.approx(44 / 45)
    # fuzzy_match with ignore_blanks (default): the same ratio.
    assert metric("compare_docx_files")(res, gold, fuzzy_match=True) == pytest.approx(44 / 45)
    # Paragraph by paragraph: 2 vs 3 paragraphs -> 0; delete_empty_lines makes them 2 and 2, and the mean
    # of ratio("Hello word","Hello world")=20/21 and 1.0 is (20/21+1)/2.
    assert metric("compare_docx_files")(res, gold, ignore_blanks=False, fuzzy_match=True) == 0.0
    got = metric("compare_docx_files")(
        res, gold, ignore_blanks=False, fuzzy_match=True, delete_empty_lines=True
    )
    assert got == pytest.approx((20 / 21 + 1) / 2)
    # Exact comparison: different text -> 0; a .docx against a .odt -> 0 (OSWorld's type check).
    assert metric("compare_docx_files")(res, gold) == 0.0
    assert metric("compare_docx_files")(res, str(tmp_path / "g.odt")) == 0.0


def test_compare_docx_tables(tmp_path: Path):
    def with_table(name, cells):
        doc = docx.Document()
        t = doc.add_table(rows=1, cols=len(cells))
        for i, c in enumerate(cells):
            t.cell(0, i).text = c
        doc.save(tmp_path / name)
        return str(tmp_path / name)

    gold = with_table("g.docx", ["a", "b"])
    # Cell texts are stripped before comparing: " a " equals "a" -> 1.
    assert metric("compare_docx_tables")(with_table("r.docx", [" a ", "b"]), gold) == 1.0
    assert metric("compare_docx_tables")(with_table("w.docx", ["a", "c"]), gold) == 0.0
    assert metric("compare_docx_tables")(with_table("x.docx", ["a", "b", "c"]), gold) == 0.0


# --- compare_pptx_files ---------------------------------------------------------------------------------


def pptx_file(path: Path, text: str, *, bold: bool | None = None, left: float = 1.0, size: int = 24) -> str:
    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    box = slide.shapes.add_textbox(Inches(left), Inches(1), Inches(4), Inches(1))
    run = box.text_frame.paragraphs[0].add_run()
    run.text = text
    run.font.bold = bold
    run.font.size = Pt(size)
    prs.save(path)
    return str(path)


def test_compare_pptx_files_examines_text_fonts_and_geometry(tmp_path: Path):
    gold = pptx_file(tmp_path / "g.pptx", "Sales", bold=True)
    same = pptx_file(tmp_path / "s.pptx", "Sales", bold=True)
    assert metric("compare_pptx_files")(same, gold) == 1.0
    # Text differs -> 0. Switching examine_text off is not enough: examine_bullets (on by default) compares
    # each paragraph's text from the slide XML too, so OSWorld still returns 0; with both off, 1.
    other = pptx_file(tmp_path / "o.pptx", "Costs", bold=True)
    assert metric("compare_pptx_files")(other, gold) == 0.0
    assert metric("compare_pptx_files")(other, gold, examine_text=False) == 0.0
    assert metric("compare_pptx_files")(other, gold, examine_text=False, examine_bullets=False) == 1.0
    # bold None vs False both mean "not bold" -> equal; True vs None -> 0.
    assert (
        metric("compare_pptx_files")(
            pptx_file(tmp_path / "n.pptx", "x", bold=None), pptx_file(tmp_path / "f.pptx", "x", bold=False)
        )
        == 1.0
    )
    assert metric("compare_pptx_files")(pptx_file(tmp_path / "u.pptx", "Sales", bold=None), gold) == 0.0
    # 1 inch vs 1.004 inch left: relative gap 0.004 <= 0.005 -> same box; 1.5 inch -> 0.
    assert (
        metric("compare_pptx_files")(pptx_file(tmp_path / "l.pptx", "Sales", bold=True, left=1.004), gold)
        == 1.0
    )
    moved = pptx_file(tmp_path / "m.pptx", "Sales", bold=True, left=1.5)
    assert metric("compare_pptx_files")(moved, gold) == 0.0
    assert metric("compare_pptx_files")(moved, gold, examine_shape=False) == 1.0
    # Font size 24 vs 28 -> 0 unless examine_font_size is off.
    big = pptx_file(tmp_path / "b.pptx", "Sales", bold=True, size=28)
    assert metric("compare_pptx_files")(big, gold) == 0.0
    assert metric("compare_pptx_files")(big, gold, examine_font_size=False) == 1.0


def test_compare_pptx_missing_result_is_a_zero_with_a_reason(tmp_path: Path):
    gold = pptx_file(tmp_path / "g.pptx", "x")
    task = load_task(
        {
            "id": "t",
            "instruction": "x",
            "evaluator": {
                "func": "compare_pptx_files",
                "result": {"type": "rule", "rules": str(tmp_path / "absent.pptx")},
                "expected": {"type": "rule", "rules": gold},
            },
        }
    )
    # OSWorld's Presentation(path) raises on a missing file and its evaluate stops; we score 0 and say why.
    verdict = evaluate(task, None, TaskContext("t", tmp_path))
    assert verdict.score == 0.0
    assert "not a readable pptx" in verdict.checks[0].reason


# --- compare_line_spacing, compare_docx_images ----------------------------------------------------------


def spaced_docx(path: Path, spacings, text: str = "Line") -> str:
    d = docx.Document()
    for i, spacing in enumerate(spacings):
        d.add_paragraph(f"{text} {i}").paragraph_format.line_spacing = spacing
    d.save(path)
    return str(path)


def test_compare_line_spacing_needs_equal_text_and_spacing(tmp_path: Path):
    double = spaced_docx(tmp_path / "a.docx", [2.0, 2.0])
    check = metric("compare_line_spacing")
    assert check(double, spaced_docx(tmp_path / "b.docx", [2.0, 2.0])) == 1.0
    # 1.5 != 2.0 on the second paragraph.
    assert check(double, spaced_docx(tmp_path / "c.docx", [2.0, 1.5])) == 0.0
    # An unset spacing (None, inherited) is not 2.0.
    assert check(double, spaced_docx(tmp_path / "d.docx", [2.0, None])) == 0.0
    # Same spacing, different text: compare_docx_files fails first.
    assert check(double, spaced_docx(tmp_path / "e.docx", [2.0, 2.0], text="Other")) == 0.0


def image_docx(path: Path, *colours) -> str:
    d = docx.Document()
    for i, colour in enumerate(colours):
        png = path.with_name(f"{path.stem}-{i}.png")
        Image.new("RGB", (16, 16), colour).save(png)
        d.add_picture(str(png))
    d.save(path)
    return str(path)


def test_compare_docx_images_by_decoded_pixels(tmp_path: Path):
    check = metric("compare_docx_images")
    red = image_docx(tmp_path / "r.docx", (255, 0, 0))
    assert check(red, image_docx(tmp_path / "r2.docx", (255, 0, 0))) == 1.0
    assert check(red, image_docx(tmp_path / "b.docx", (0, 0, 255))) == 0.0
    assert check(red, image_docx(tmp_path / "rb.docx", (255, 0, 0), (0, 0, 255))) == 0.0  # 1 image vs 2
    # Images are counted by relationship: the same picture twice is one image part, so equal.
    assert check(red, image_docx(tmp_path / "rr.docx", (255, 0, 0), (255, 0, 0))) == 1.0
    assert check(None, red) == 0.0

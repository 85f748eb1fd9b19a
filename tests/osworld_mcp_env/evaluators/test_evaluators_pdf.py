"""PDF metrics on PDFs written here, against what OSWorld's functions return on the same files.

Expected numbers were computed with OSWorld's own pipeline (PyMuPDF 1.28 ``get_text`` /
``get_images`` + ``extract_image``, rapidfuzz, imagehash 4.3 ``phash``) on these exact bytes.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from pathlib import Path

import numpy as np
import openpyxl
import pytest
from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators import METRICS
from osworld_mcp_env.evaluators.metrics import pdf as pdf_metrics
from osworld_mcp_env.evaluators.metrics.pdf import pdf_images, pdf_text
from osworld_mcp_env.evaluators.metrics.phash import phash
from osworld_mcp_env.evaluators.registry import ZeroScore
from PIL import Image
from task_data import needs_soffice, soffice_convert

Picture = tuple[int, int, bytes]


def metric(name: str):
    return METRICS.get(name).fn


def make_pdf(pages: list[list[str | list[str]]], images: dict[int, list[Picture]] | None = None) -> bytes:
    """A PDF of these lines (Helvetica, one ``Tj`` a line or a cell) and RGB images (raw or JPEG)."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    bodies = []
    for index, lines in enumerate(pages):
        ops = [b"BT /F1 12 Tf 14 TL 72 720 Td"]
        for line in lines:
            if isinstance(line, list):  # table cells on one baseline, 150 pt apart
                cells = b" ".join(b"(%s) Tj 150 0 Td" % cell.encode("latin-1") for cell in line)
                ops.append(cells + b" %d -14 Td" % (-150 * len(line)))
            else:
                ops.append(b"(" + line.encode("latin-1") + b") Tj T*")
        ops.append(b"ET")
        names = []
        for k, (w, h, rgb) in enumerate((images or {}).get(index, [])):
            jpeg = rgb.startswith(b"\xff\xd8")  # stored as is (DCTDecode), else raw samples (Flate)
            data = rgb if jpeg else zlib.compress(rgb)
            head = b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceRGB" % (w, h)
            head += b" /BitsPerComponent 8 /Filter /%s /Length %d >>\nstream\n" % (
                b"DCTDecode" if jpeg else b"FlateDecode",
                len(data),
            )
            ref = add(head + data + b"\nendstream")
            names.append(b"/Im%d %d 0 R" % (k, ref))
            ops.append(b"q %d 0 0 %d 72 %d cm /Im%d Do Q" % (w, h, 72 + 150 * k, k))
        content = b"\n".join(ops)
        bodies.append((add(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream"), names))
    parent = len(objects) + len(bodies) + 1
    kids = []
    for content_ref, names in bodies:
        xobjects = b" /XObject << " + b" ".join(names) + b" >>" if names else b""
        resources = b"<< /Font << /F1 %d 0 R >>%s >>" % (font, xobjects)
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources %s /Contents %d 0 R >>"
                % (parent, resources, content_ref)
            )
        )
    add(b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids)))
    catalog = add(b"<< /Type /Catalog /Pages %d 0 R >>" % parent)
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\n" % (len(objects) + 1, catalog)
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


AGENDA = [["Meeting Agenda", "1. Budget review", "2. Hiring plan"], ["Notes: bring laptops."]]


def test_pdf_text_is_pymupdf_text_on_simple_lines():
    # PyMuPDF's "".join(page.get_text()) of this file: each line and each page newline-terminated.
    text = "Meeting Agenda\n1. Budget review\n2. Hiring plan\nNotes: bring laptops.\n"
    assert pdf_text(make_pdf(AGENDA)) == text


def test_compare_pdfs_scores_fuzz_ratio_of_all_text(tmp_path: Path):
    fn = metric("compare_pdfs")
    gold = write(tmp_path / "gold.pdf", make_pdf(AGENDA))
    same = write(tmp_path / "same.pdf", make_pdf(AGENDA))
    near = write(tmp_path / "near.pdf", make_pdf([[*AGENDA[0][:2], "2. Hiring plans"], AGENDA[1]]))
    wrong = write(tmp_path / "wrong.pdf", make_pdf([["Shopping list", "milk"]]))
    # Same text: fuzz.ratio 100 -> 1.0.
    assert fn(same, gold) == 1.0
    # One inserted "s" in 68 + 69 characters: ratio 2*68/137 = 0.99270... (OSWorld: 0.9927007299270073).
    assert fn(near, gold) == pytest.approx(0.9927007299270073, abs=1e-12)
    # Unrelated text: OSWorld gives 0.18604651162790697.
    assert fn(wrong, gold) == pytest.approx(0.18604651162790697, abs=1e-12)
    # A result path that does not exist: PyMuPDF raises, OSWorld logs and adds 0.
    assert fn(str(tmp_path / "missing.pdf"), gold) == 0.0
    # No result (None): fitz.open(None) is an empty document, its text "" against the gold's: ratio 0.
    assert fn(None, gold) == 0.0
    # A file that is not a PDF: the reader raises, 0.
    text = write(tmp_path / "text.pdf", b"hello")
    assert fn(text, gold) == 0.0
    # The task's own file unreadable: OSWorld adds 0; here the task is broken.
    with pytest.raises(EvaluationError, match="expected PDF"):
        fn(gold, text)


def test_compare_pdfs_lists_divide_by_expected_count(tmp_path: Path):
    fn = metric("compare_pdfs")
    gold = [write(tmp_path / f"g{i}.pdf", make_pdf([[f"Certificate for person {i}"]])) for i in range(3)]
    got = [write(tmp_path / f"r{i}.pdf", make_pdf([[f"Certificate for person {i}"]])) for i in range(3)]
    assert fn(got, gold) == 1.0
    # Two results for three expected files: zip stops at two, the sum 2 is divided by 3.
    assert fn(got[:2], gold) == pytest.approx(2 / 3, abs=1e-12)
    # One missing result among three: it adds 0 -> 2/3.
    assert fn([got[0], str(tmp_path / "none.pdf"), got[2]], gold) == pytest.approx(2 / 3, abs=1e-12)
    # One path against a list: OSWorld zips the path's characters with the files, none opens -> 0.
    assert fn(got[0], gold) == 0.0


@pytest.fixture(params=["pypdf", "pymupdf"])
def text_reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test with each text reader: pypdf (forced), PyMuPDF (the ``mupdf`` extra, else skipped)."""
    if request.param == "pymupdf":
        pytest.importorskip("pymupdf")
    else:
        monkeypatch.setattr(pdf_metrics, "_pymupdf", lambda: None)
    assert pdf_metrics.pdf_text_reader() == request.param
    return str(request.param)


def test_compare_pdfs_on_table_rows_keeps_the_verdicts(tmp_path: Path, text_reader: str):
    """Known deviation of pypdf: PyMuPDF puts each cell on its own line, pypdf joins a row with spaces.

    OSWorld's text of the gold is "Item\\nQty\\nPrice\\n..." where pypdf reads "Item Qty Price \\n...";
    identical files still score 1 and the ratios of changed files stay close (see evaluators.md).
    With the ``mupdf`` extra the numbers are OSWorld's.
    """
    fn = metric("compare_pdfs")
    osworld = text_reader == "pymupdf"
    rows: list[str | list[str]] = ["Invoice 243729", ["Item", "Qty", "Price"], ["Paper", "2", "10.00"]]
    gold = write(tmp_path / "gold.pdf", make_pdf([[*rows, ["Ink", "1", "25.50"], "Total 45.50"]]))
    same = write(tmp_path / "same.pdf", make_pdf([[*rows, ["Ink", "1", "25.50"], "Total 45.50"]]))
    near = [*rows[:2], ["Paper", "3", "15.00"], ["Ink", "1", "25.50"], "Total 40.50"]
    # OSWorld: 1.0 (same text).
    assert fn(same, gold) == 1.0
    # OSWorld: 0.9552238805970148; pypdf's trailing space per row makes it 0.9571428571428572.
    assert fn(write(tmp_path / "near.pdf", make_pdf([near])), gold) == pytest.approx(
        0.9552238805970148 if osworld else 0.9571428571428572, abs=1e-12
    )
    # OSWorld: 0.2857142857142857; pypdf 0.3137254901960784.
    wrong = make_pdf([["Receipt 1", ["Coffee", "4.00"], "Thank you"]])
    assert fn(write(tmp_path / "wrong.pdf", wrong), gold) == pytest.approx(
        0.2857142857142857 if osworld else 0.3137254901960784, abs=1e-12
    )


@needs_soffice
def test_compare_pdfs_on_a_calc_sheet_clipped_at_the_page_edge(tmp_path: Path, text_reader: str):
    """A Calc export whose last column's text runs past the page: PyMuPDF drops what lies outside.

    The sheet is 7 columns of 14 characters with a long text in G1 and a cell in H3; printed
    as it is it spans 3 pages and G1's text is cut at the edge of pages 2 and 3 (LibreOffice
    writes the whole string on both; PyMuPDF keeps the visible part, pypdf all of it twice).
    The gold is the same sheet fitted to one page (OSWorld's task aa3a8974). OSWorld's score,
    from PyMuPDF 2.0 and rapidfuzz on these files, is 0.7058823529411764.
    """
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    for index, column in enumerate("ABCDEFG"):
        sheet.column_dimensions[column].width = 14
        for row in range(1, 6):
            sheet[f"{column}{row}"] = f"r{row}c{index} value"
    sheet["G1"] = "A long trailing text in the last column that runs far past the right edge of the page"
    sheet["H3"] = "Column H beyond"
    book.save(tmp_path / "edge.xlsx")
    sheet.page_setup.fitToWidth = 1
    sheet.page_setup.fitToHeight = 1
    sheet.sheet_properties.pageSetUpPr.fitToPage = True
    book.save(tmp_path / "fit.xlsx")
    profile = tmp_path / "profile"
    clipped = soffice_convert(tmp_path / "edge.xlsx", tmp_path / "out", "pdf", profile)
    fitted = soffice_convert(tmp_path / "fit.xlsx", tmp_path / "out", "pdf", profile)
    score = metric("compare_pdfs")(str(clipped), str(fitted))
    assert score == pytest.approx(
        0.7058823529411764 if text_reader == "pymupdf" else 0.6467181467181465, abs=1e-12
    )


def test_check_pdf_pages_applies_the_operator(tmp_path: Path):
    fn = metric("check_pdf_pages")
    one = write(tmp_path / "one.pdf", make_pdf([["Resized"]]))
    two = write(tmp_path / "two.pdf", make_pdf(AGENDA))
    # The calc task's rule: 1 page, operator.eq(len(reader.pages), 1).
    assert fn(one, {"relation": "eq", "ref_value": 1}) == 1.0
    assert fn(two, {"relation": "eq", "ref_value": 1}) == 0.0
    assert fn(two, {"relation": "le", "ref_value": 2}) == 1.0
    assert fn(None, {"relation": "eq", "ref_value": 1}) == 0.0
    # pypdf's PdfReader raises on a non-PDF in OSWorld too: 0 with the reason.
    with pytest.raises(ZeroScore, match="pypdf"):
        fn(write(tmp_path / "bad.pdf", b"not a pdf"), {"relation": "eq", "ref_value": 1})
    # A relation that is no operator function: the task is broken (OSWorld raises AttributeError).
    with pytest.raises(EvaluationError, match="relation"):
        fn(one, {"relation": "equals", "ref_value": 1})


def picture(seed: int, w: int = 40, h: int = 30) -> Picture:
    rng = np.random.default_rng(seed)
    ramp = np.linspace(0, 255, w * h * 3).reshape(h, w, 3)
    return w, h, np.clip(ramp + rng.integers(-60, 60, (h, w, 3)), 0, 255).astype(np.uint8).tobytes()


def noisy(p: Picture, seed: int, amp: int) -> Picture:
    w, h, rgb = p
    a = np.frombuffer(rgb, np.uint8).reshape(h, w, 3).astype(int)
    rng = np.random.default_rng(seed)
    return w, h, np.clip(a + rng.integers(-amp, amp + 1, a.shape), 0, 255).astype(np.uint8).tobytes()


def flipped(p: Picture) -> Picture:
    w, h, rgb = p
    return w, h, np.flipud(np.frombuffer(rgb, np.uint8).reshape(h, w, 3)).tobytes()


def test_phash_bits_equal_imagehash(tmp_path: Path):
    images = pdf_images(write(tmp_path / "p.pdf", make_pdf([["x"]], {0: [picture(1), picture(2)]})))
    # str(imagehash.phash(image)) of the two images PyMuPDF extracts from this PDF.
    hexes = [np.packbits(phash(image).flatten()).tobytes().hex() for image in images]
    assert hexes == ["89316e1ef40f5e54", "aa79f30d36234d0d"]


def test_pdf_jpeg_images_are_the_stored_file(tmp_path: Path):
    # PyMuPDF's extract_image returns a DCTDecode stream's bytes, which OSWorld opens with PIL;
    # pypdf's own ``image`` re-encodes the JPEG (pixels move by up to 20 levels on
    # LibreOffice-exported photos, enough to flip phash bits), so the stored file must be used.
    w, h, rgb = picture(4, 80, 60)
    buffer = io.BytesIO()
    Image.frombytes("RGB", (w, h), rgb).save(buffer, "JPEG", quality=90)
    stored = buffer.getvalue()
    [image] = pdf_images(write(tmp_path / "j.pdf", make_pdf([["photo"]], {0: [(w, h, stored)]})))
    assert np.array_equal(np.asarray(image), np.asarray(Image.open(io.BytesIO(stored))))


def test_compare_pdf_images_share_of_close_hashes(tmp_path: Path):
    fn = metric("compare_pdf_images")
    a, b = picture(1), picture(2)
    gold = write(tmp_path / "gold.pdf", make_pdf([["Receipt"]], {0: [a, b]}))

    def pdf(name: str, pictures: list[Picture]) -> str:
        return write(tmp_path / name, make_pdf([["Receipt"]], {0: pictures} if pictures else None))

    # Same pixels: hash distances 0, 0 -> 2/2.
    assert fn(pdf("same.pdf", [a, b]), gold) == 1.0
    # Light noise on the first image: imagehash distance 2 (<= 5) -> still 1.0.
    assert fn(pdf("slight.pdf", [noisy(a, 3, 4), b]), gold) == 1.0
    # Second image upside down: distance 36 > 5 -> 1/2.
    assert fn(pdf("flip.pdf", [a, flipped(b)]), gold) == 0.5
    # One image where the gold has two: counts differ -> 0.
    assert fn(pdf("one.pdf", [a]), gold) == 0.0
    # Neither has images: OSWorld "considers it a match" -> 1.
    assert fn(pdf("none.pdf", []), pdf("none2.pdf", [])) == 1.0
    # Missing result file or None: 0.
    assert fn(str(tmp_path / "missing.pdf"), gold) == 0.0
    assert fn(None, gold) == 0.0
    # Not a PDF: extraction raises, OSWorld returns 0.
    bad = write(tmp_path / "bad.pdf", b"junk")
    assert fn(bad, gold) == 0.0
    # The expected PDF unreadable: OSWorld returns 0; here the task is broken.
    with pytest.raises(EvaluationError, match="expected PDF"):
        fn(gold, bad)


def archive(path: Path, entries: dict[str, bytes]) -> str:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return str(path)


def test_compare_zip_files_compares_pdf_entries_by_text(tmp_path: Path):
    fn = metric("compare_zip_files")
    essay = [["Recruitment and retention of health professionals across Europe", "An essay."]]
    gold = archive(tmp_path / "gold.zip", {"essay.pdf": make_pdf(essay)})
    # Other bytes (a second, empty page) but the same text: PyPDF2's text is identical, ratio 1 -> 1.
    assert fn(archive(tmp_path / "a.zip", {"essay.pdf": make_pdf([*essay, []])}), gold) == 1.0
    # One word changed: PyPDF2 texts give SequenceMatcher ratio 0.9324 < 0.95 -> 0.
    changed = [["Recruitment and retention of health professionals across Africa", "An essay."]]
    assert fn(archive(tmp_path / "b.zip", {"essay.pdf": make_pdf(changed)}), gold) == 0.0
    # In a longer essay the same one-word change is 0.98944 alike (difflib, autojunk on as in
    # OSWorld) >= 0.95 -> 1.
    sentence = "health professionals across Europe, recruitment and retention."
    essay_lines = [f"Line {i}: {sentence}" for i in range(8)]
    edited = [line.replace("Europe", "Africa") if line.startswith("Line 3") else line for line in essay_lines]
    long_gold = archive(tmp_path / "long.zip", {"essay.pdf": make_pdf([essay_lines])})
    assert fn(archive(tmp_path / "d.zip", {"essay.pdf": make_pdf([edited])}), long_gold) == 1.0
    # A PDF entry pypdf cannot read: PyPDF2 raises in OSWorld -> 0 with the reason.
    with pytest.raises(ZeroScore, match="PDF entry"):
        fn(archive(tmp_path / "c.zip", {"essay.pdf": b"%PDF-1.4 broken"}), gold)

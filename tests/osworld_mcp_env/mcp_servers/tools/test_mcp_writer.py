"""libreoffice_writer tools against a real LibreOffice; effects read back with python-docx."""

from __future__ import annotations

import io
import signal
from collections.abc import Iterator
from pathlib import Path

import docx
import pytest
from docx.enum.text import WD_ALIGN_PARAGRAPH
from mcp_sandbox import Sandbox, ToolCaller
from osworld_mcp_env.mcp_servers.tools.uno_conn import OFFICE_PROCESS_NAMES
from PIL import Image
from polling import wait_until

pytestmark = [pytest.mark.desktop, pytest.mark.timeout(90)]
HAVE_MATH = Path("/usr/lib/libreoffice/program/libsmlo.so").exists()
NS = "libreoffice_writer."


@pytest.fixture
def document(sandbox: Sandbox, request: pytest.FixtureRequest) -> Iterator[Path]:
    d = docx.Document()
    for text in ("The cat sat on the mat.", "A second cat paragraph.", "Third one, no felines."):
        d.add_paragraph(text)
    data = io.BytesIO()
    d.save(data)
    yield sandbox.open_document(f"{request.node.name}.docx", data.getvalue())


@pytest.fixture(scope="module")
def call(sandbox: Sandbox) -> ToolCaller:
    return sandbox.call


def saved(call: ToolCaller, path: Path) -> docx.Document:
    assert call.effect(NS + "save")["count"] == path.stat().st_size
    return docx.Document(str(path))


def test_find_and_replace_counts_replacements_and_zero_matches_is_zero_effect(
    call: ToolCaller, document: Path
) -> None:
    assert call.effect(NS + "find_and_replace", pattern=r"c(a)t", replacement=r"d\1g")["count"] == 2
    none = call(NS + "find_and_replace", pattern="zebra", replacement="x")
    assert none.exec_ok and none.effect["kind"] == "none"
    assert none.text.startswith("No effect:")
    assert (
        call.effect(NS + "find_and_replace", pattern="dag", replacement="cow", paragraph_indices=[1])["count"]
        == 1
    )
    paras = [p.text for p in saved(call, document).paragraphs]
    assert paras[:2] == ["The dag sat on the mat.", "A second cow paragraph."]


def test_character_and_paragraph_formatting(call: ToolCaller, document: Path) -> None:
    assert call.effect(NS + "set_color", pattern="cat", color=0xFF0000)["count"] == 2
    assert call.effect(NS + "set_font_size", font_size=20, pattern="mat")["count"] == 1
    assert call.effect(NS + "set_font", font_name="DejaVu Sans", paragraph_indices=[2])["targets"] == ["2"]
    assert call.effect(NS + "set_line_spacing", spacing_value=2.0, paragraph_indices=[0])["count"] == 1
    assert call.effect(NS + "set_paragraph_alignment", alignment="center")["count"] == 3
    assert call.effect(NS + "set_paragraph_alignment", alignment="center")["kind"] == "none"
    d = saved(call, document)
    runs = {r.text: r for p in d.paragraphs for r in p.runs}
    assert str(runs["cat"].font.color.rgb) == "FF0000" and runs["mat"].font.size.pt == 20
    assert d.paragraphs[2].runs[0].font.name == "DejaVu Sans"
    assert d.paragraphs[0].paragraph_format.line_spacing == 2.0
    assert all(p.alignment == WD_ALIGN_PARAGRAPH.CENTER for p in d.paragraphs)


def test_insertions_at_cursor(call: ToolCaller, document: Path, sandbox: Sandbox) -> None:
    assert call.effect(NS + "write_text", text="Hello ", bold=True, size=14)["count"] == 6
    png = io.BytesIO()
    Image.new("RGB", (40, 20), "red").save(png, "PNG")
    image = sandbox.put("dot.png", png.getvalue())
    assert (
        call.effect(NS + "insert_image_at_cursor", image_path=image, width=80)["details"]["height_px"] == 40
    )
    if HAVE_MATH:
        assert call.effect(NS + "insert_formula_at_cursor", formula="a^2 + b^2 = c^2")["count"] == 1
    else:
        assert "libreoffice-math" in call.error(NS + "insert_formula_at_cursor", formula="a^2")
    assert call.effect(NS + "insert_page_break", position="end_of_document")["count"] == 1
    d = saved(call, document)
    first = d.paragraphs[0]
    assert first.runs[0].text == "Hello " and first.runs[0].bold and first.runs[0].font.size.pt == 14
    assert len(d.inline_shapes) >= 1
    xml = d.element.xml
    assert not HAVE_MATH or "oMath" in xml or "oleObj" in xml or "objectEmbed" in xml
    assert 'w:type="page"' in xml or "pageBreakBefore" in xml


def test_page_numbers_default_font_and_read(call: ToolCaller, document: Path) -> None:
    assert call.effect(NS + "add_page_numbers", position="bottom_center", format="Page 1")["count"] == 1
    assert call.effect(NS + "set_default_font", font_name="DejaVu Serif", font_size=13)["count"] == 2
    assert "[1] A second cat paragraph." in call.data(NS + "env_info")
    d = saved(call, document)
    footer_xml = d.sections[0].footer._element.xml
    assert "PAGE" in footer_xml and "Page " in footer_xml
    assert d.styles["Normal"].font.name == "DejaVu Serif"


def test_export_and_errors(call: ToolCaller, document: Path) -> None:
    effect = call.effect(NS + "export_to_pdf")
    assert document.with_suffix(".pdf").read_bytes().startswith(b"%PDF") and effect["unit"] == "bytes"
    assert "Invalid regular expression" in call.error(NS + "set_color", pattern="(", color=0)
    assert "out of range" in call.error(NS + "set_font", font_name="X", paragraph_indices=[99])


def test_a_catastrophic_regex_is_stopped_and_the_office_keeps_serving(
    call: ToolCaller, document: Path
) -> None:
    """(a|aa)+$ backtracks exponentially over a run of a's: stopped at regex_timeout_s."""
    assert call.effect(NS + "find_and_replace", pattern="The cat", replacement="a" * 80)["count"] == 1
    text = call.error(NS + "set_color", pattern="(a|aa)+$", color=0xFF0000)
    assert "took over 2.0 s" in text and "simplify" in text
    assert call.effect(NS + "set_color", pattern="mat", color=0xFF0000)["count"] == 1


def test_a_killed_office_is_reported_at_once_and_a_new_one_serves(
    call: ToolCaller, document: Path, sandbox: Sandbox
) -> None:
    """No office process: the tools say so instead of retrying; the next office is reconnected to."""
    assert call.effect(NS + "set_color", pattern="cat", color=0xFF0000)["count"] == 2  # a live bridge
    auto_save = "libreoffice_impress.configure_auto_save"  # a tool that starts with a service
    assert call(auto_save, enabled=True, interval_minutes=7).exec_ok  # the Impress server's bridge
    sandbox.signal("soffice.bin", signal.SIGKILL)
    wait_until(lambda: not any(sandbox.pids(name) for name in OFFICE_PROCESS_NAMES), 60, "the office to exit")
    # Its dead bridge must not read as pyuno's "cannot get value ServiceManager".
    assert "LibreOffice is not running" in call.error(auto_save, enabled=True, interval_minutes=7)
    assert "LibreOffice is not running" in call.error(NS + "set_color", pattern="cat", color=0)
    reopened = sandbox.open_document("after_the_crash.docx", document.read_bytes())
    assert call.effect(NS + "set_color", pattern="cat", color=0x00FF00)["count"] == 2
    assert (
        str({r.text: r for p in saved(call, reopened).paragraphs for r in p.runs}["cat"].font.color.rgb)
        == "00FF00"
    )

"""libreoffice_impress tools against a real LibreOffice; effects read back with python-pptx."""

from __future__ import annotations

import io
import wave
from collections.abc import Iterator
from pathlib import Path

import docx
import pptx
import pytest
from mcp_sandbox import Sandbox, ToolCaller
from PIL import Image
from pptx.util import Inches

pytestmark = [pytest.mark.desktop, pytest.mark.timeout(90)]
NS = "libreoffice_impress."


@pytest.fixture
def deck(sandbox: Sandbox, request: pytest.FixtureRequest) -> Iterator[Path]:
    prs = pptx.Presentation()
    for title, body in (("First", "alpha\nbeta\ngamma"), ("Second", "delta")):
        s = prs.slides.add_slide(prs.slide_layouts[1])
        s.shapes.title.text = title
        s.placeholders[1].text = body
    data = io.BytesIO()
    prs.save(data)
    yield sandbox.open_document(f"{request.node.name}.pptx", data.getvalue())


@pytest.fixture(scope="module")
def call(sandbox: Sandbox) -> ToolCaller:
    return sandbox.call


def saved(call: ToolCaller, path: Path) -> pptx.Presentation:
    assert call.effect(NS + "save")["count"] == path.stat().st_size
    return pptx.Presentation(str(path))


def texts(prs: pptx.Presentation, n: int) -> list[str]:
    return [sh.text_frame.text for sh in prs.slides[n].shapes if sh.has_text_frame]


def test_read_tools(call: ToolCaller, deck: Path) -> None:
    assert call.data(NS + "get_slide_count") == 2
    info = call.data(NS + "env_info", page_indices=[2])
    assert info[0]["boxes"][0]["text"] == "Second"


def test_text_tools(call: ToolCaller, deck: Path) -> None:
    assert (
        call.effect(NS + "write_text", content="Title!", page_index=1, box_index=0, bold=True)["count"] == 1
    )
    assert (
        call.effect(NS + "write_text", content=" more", page_index=2, box_index=1, append=True)["count"] == 1
    )
    assert (
        call.effect(NS + "set_style", slide_index=2, box_index=0, italic=True, underline=True)["count"] == 2
    )
    assert call.effect(NS + "set_text_color", slide_index=2, box_index=0, color="red")["count"] == 1
    assert call.effect(NS + "set_text_color", slide_index=2, box_index=0, color="#ff0000")["kind"] == "none"
    assert call.effect(NS + "set_slide_font", slide_index=1, font_name="DejaVu Sans")["count"] == 2
    assert (
        call.effect(NS + "set_textbox_alignment", slide_index=1, box_index=1, alignment="center")["count"]
        == 3
    )
    assert call.effect(
        NS + "set_text_strikethrough", slide_index=1, box_index=1, line_numbers=[2], apply=True
    )["targets"] == ["2"]
    prs = saved(call, deck)
    assert texts(prs, 0)[0] == "Title!" and texts(prs, 1)[1] == "delta more"
    run = prs.slides[0].shapes[0].text_frame.paragraphs[0].runs[0]
    assert run.font.bold and run.font.name == "DejaVu Sans"
    run2 = prs.slides[1].shapes[0].text_frame.paragraphs[0].runs[0]
    assert run2.font.italic and run2.font.underline and str(run2.font.color.rgb) == "FF0000"
    body = prs.slides[0].shapes[1].text_frame.paragraphs
    assert body[0].alignment == pptx.enum.text.PP_ALIGN.CENTER
    assert 'strike="sngStrike"' in body[1]._p.xml and "sngStrike" not in body[0]._p.xml


def test_box_and_slide_tools(call: ToolCaller, deck: Path, sandbox: Sandbox) -> None:
    assert call.effect(NS + "set_background_color", slide_index=1, box_index=1, color="yellow")["count"] == 1
    assert call.effect(NS + "position_box", slide_index=2, box_index=0, position="bottom-right")["count"] == 1
    png = io.BytesIO()
    Image.new("RGB", (60, 30), "blue").save(png, "PNG")
    image = sandbox.put("pic.png", png.getvalue())
    assert call.effect(NS + "insert_image", slide_index=2, image_path=image, width=4)["count"] == 1
    assert call.effect(NS + "set_slide_background", slide_index=1, color="green")["count"] == 1
    assert call.effect(NS + "go_to_slide", slide_index=2)["count"] == 1
    assert call.effect(NS + "go_to_slide", slide_index=2)["kind"] == "none"
    assert call.effect(NS + "duplicate_slide", slide_index=1, target_position=1)["targets"] == ["2"]
    assert call.effect(NS + "delete_content", slide_index=2, box_index=1)["count"] == 1
    assert call.effect(NS + "set_slide_orientation", orientation="portrait")["count"] == 3
    prs = saved(call, deck)
    assert len(prs.slides) == 3 and texts(prs, 1)[0] == "First"
    assert prs.slide_height > prs.slide_width
    assert str(prs.slides[0].shapes[1].fill.fore_color.rgb) == "FFFF00"
    pictures = [sh for sh in prs.slides[2].shapes if sh.shape_type == 13]
    assert len(pictures) == 1 and abs(pictures[0].width - Inches(4 / 2.54)) < Inches(0.05)
    assert len(prs.slides[1].shapes) == 1  # the copy of slide 1 lost its body box
    assert (
        "FF00" in prs.slides[0].background._cSld.xml.upper()
        or prs.slides[0].follow_master_background is False
    )


def test_files(call: ToolCaller, deck: Path, sandbox: Sandbox) -> None:
    out = deck.with_name("copy.odp")
    assert call.effect(NS + "save_as", file_path=sandbox.inner(out))["count"] == out.stat().st_size
    assert "exists" in call.error(NS + "save_as", file_path=sandbox.inner(out))
    png = deck.with_name("slide.png")
    assert (
        call.effect(NS + "export_to_image", file_path=sandbox.inner(png), format="png", slide_index=1)[
            "count"
        ]
        == 1
    )
    assert Image.open(png).size[0] > 100
    docx_path = deck.with_name("deck.docx")
    assert (
        call.effect(NS + "convert_to_docx", output_path=sandbox.inner(docx_path))["details"]["paragraphs"]
        == 6
    )
    assert [p.text for p in docx.Document(str(docx_path)).paragraphs][:2] == ["First", "alpha"]
    effect = call.effect(NS + "configure_auto_save", enabled=True, interval_minutes=7)
    assert effect["details"]["after"] == {"Enabled": True, "TimeIntervall": 7}
    assert call.effect(NS + "configure_auto_save", enabled=True, interval_minutes=7)["kind"] == "none"
    wav = io.BytesIO()
    with wave.open(wav, "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(8000), w.writeframes(b"\0\0" * 8000)
    audio = sandbox.put("tone.wav", wav.getvalue())
    assert call.effect(NS + "insert_file", file_path=audio, slide_index=1)["count"] == 1
    assert "Slide 9 does not exist" in call.error(NS + "go_to_slide", slide_index=9)

"""One-task Impress metrics on hand-made files, with the score OSWorld's own function gives and why.

Each expected number follows OSWorld's desktop_env/evaluators/metrics/slides.py; the
comment beside it says which step of that function gives it.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import pytest
from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators import METRICS, ZeroScore
from PIL import Image
from pptx import Presentation
from pptx.dml.color import RGBColor
from pptx.enum.shapes import PP_PLACEHOLDER
from pptx.oxml import parse_xml
from pptx.presentation import Presentation as PresentationType
from pptx.util import Inches

A = "http://schemas.openxmlformats.org/drawingml/2006/main"
P = "http://schemas.openxmlformats.org/presentationml/2006/main"


def metric(name: str):
    return METRICS.get(name).fn


def xcu(path: Path, *items: tuple[str, str, str | None]) -> str:
    """A registrymodifications.xcu with (item path, prop name, value or None for no <value>) entries."""
    body = "".join(
        f'<item oor:path="{item}"><prop oor:name="{prop}" oor:op="fuse">'
        + (f"<value>{value}</value>" if value is not None else "")
        + "</prop></item>"
        for item, prop, value in items
    )
    path.write_text(f'<oor:items xmlns:oor="http://openoffice.org/2001/registry">{body}</oor:items>')
    return str(path)


START, PRESENTER = "/org.openoffice.Office.Impress/Misc/Start", "EnablePresenterScreen"
SAVE, AUTOSAVE = "/org.openoffice.Office.Common/Save/Document", "AutoSaveTimeIntervall"


def test_check_presenter_console_disable(tmp_path: Path):
    fn = metric("check_presenter_console_disable")
    # The first EnablePresenterScreen value, lowered, is "false": 1.
    assert fn(xcu(tmp_path / "a.xcu", (START, PRESENTER, "False")), None) == 1.0
    assert fn(xcu(tmp_path / "b.xcu", (START, PRESENTER, "true")), None) == 0.0
    # Only the first match counts (the loop returns at once): "true" then "false" -> 0.
    assert fn(xcu(tmp_path / "c.xcu", (START, PRESENTER, "true"), (START, PRESENTER, "false")), None) == 0.0
    # No such setting, a prop without <value> (AttributeError, caught), no file: 0.
    assert fn(xcu(tmp_path / "d.xcu", (SAVE, AUTOSAVE, "3")), None) == 0.0
    assert fn(xcu(tmp_path / "e.xcu", (START, PRESENTER, None)), None) == 0.0
    assert fn(None, None) == 0.0


def test_check_auto_saving_time(tmp_path: Path):
    fn = metric("check_auto_saving_time")
    rules = {"minutes": 3}
    assert fn(xcu(tmp_path / "a.xcu", (SAVE, AUTOSAVE, "3")), rules) == 1.0
    assert fn(xcu(tmp_path / "b.xcu", (SAVE, AUTOSAVE, "10")), rules) == 0.0
    # The last matching item wins (the break leaves only the inner loop): 10 then 3 -> 1.
    assert fn(xcu(tmp_path / "c.xcu", (SAVE, AUTOSAVE, "10"), (SAVE, AUTOSAVE, "3")), rules) == 1.0
    # Not set at all: autosave_time stays None -> 0.
    assert fn(xcu(tmp_path / "d.xcu", (START, PRESENTER, "false")), rules) == 0.0
    # A non-integer value: int() raises in OSWorld -> 0 with a reason.
    with pytest.raises(ZeroScore, match="not a number"):
        fn(xcu(tmp_path / "e.xcu", (SAVE, AUTOSAVE, "soon")), rules)
    with pytest.raises(EvaluationError, match="minutes"):
        fn(xcu(tmp_path / "f.xcu", (SAVE, AUTOSAVE, "3")), {})
    # A missing file or broken XML: OSWorld logs it and returns None (no score); 0 here.
    assert fn(str(tmp_path / "missing.xcu"), rules) == 0.0
    (tmp_path / "broken.xcu").write_text("<oor:items")
    assert fn(str(tmp_path / "broken.xcu"), rules) == 0.0
    # No path at all: ElementTree.parse(None) raises TypeError there; a folder raises too.
    with pytest.raises(ZeroScore, match="OSWorld raises TypeError"):
        fn(None, rules)
    with pytest.raises(ZeroScore, match="OSWorld raises"):
        fn(str(tmp_path), rules)


def slides(path: Path, count: int = 2, *, portrait: bool = False) -> PresentationType:
    prs = Presentation()
    if portrait:  # python-pptx's default page is 10 x 7.5 in
        prs.slide_width, prs.slide_height = Inches(7.5), Inches(10)
    for _ in range(count):
        prs.slides.add_slide(prs.slide_layouts[6])
    return prs


def save(prs: PresentationType, path: Path) -> str:
    prs.save(str(path))
    return str(path)


def test_check_transition_looks_at_the_first_transition_of_the_slide(tmp_path: Path):
    prs = slides(tmp_path)
    prs.slides[0]._element.append(
        parse_xml(f'<p:transition xmlns:p="{P}" spd="slow"><p:dissolve/></p:transition>')
    )
    prs.slides[1]._element.append(parse_xml(f'<p:transition xmlns:p="{P}"><p:fade/></p:transition>'))
    path = save(prs, tmp_path / "t.pptx")
    fn = metric("check_transition")
    # slide_idx 0 is ppt/slides/slide1.xml, whose transition holds <p:dissolve/>: 1.
    assert fn(path, {"slide_idx": 0, "transition_type": "dissolve"}) == 1.0
    # Slide 2 fades: no <p:dissolve> under its transition -> 0. No slide 3: 0.
    assert fn(path, {"slide_idx": 1, "transition_type": "dissolve"}) == 0.0
    assert fn(path, {"slide_idx": 2, "transition_type": "dissolve"}) == 0.0
    with pytest.raises(ZeroScore):
        fn(str(tmp_path / "missing.pptx"), {"slide_idx": 0, "transition_type": "dissolve"})


def test_check_slide_orientation_portrait(tmp_path: Path):
    fn = metric("check_slide_orientation_Portrait")
    # python-pptx's default 10 x 7.5 in is landscape: 0; swapped to 7.5 x 10 in: 1.
    assert fn(save(slides(tmp_path), tmp_path / "l.pptx"), None) == 0.0
    assert fn(save(slides(tmp_path, portrait=True), tmp_path / "p.pptx"), None) == 1.0


def test_evaluate_presentation_fill_to_rgb_distance(tmp_path: Path):
    fn = metric("evaluate_presentation_fill_to_rgb_distance")
    rules = {"rgb": [0, 0, 255], "original_rgb": [255, 255, 255]}

    def coloured(name: str, *colours: tuple[int, int, int] | None) -> str:
        prs = slides(tmp_path, len(colours))
        for slide, colour in zip(prs.slides, colours, strict=True):
            if colour is not None:
                slide.background.fill.solid()
                slide.background.fill.fore_color.rgb = RGBColor(*colour)
        return save(prs, tmp_path / name)

    # Both slides exactly blue: distance 0 each -> 1 - 0 = 1.
    assert fn(coloured("a.pptx", (0, 0, 255), (0, 0, 255)), rules) == 1.0
    # One slide still white (original_rgb): it counts 1 -> 1 - (0 + 1) / 2 = 0.5.
    assert fn(coloured("b.pptx", (0, 0, 255), (255, 255, 255)), rules) == 0.5
    # Black is sqrt(255^2) / sqrt(3 * 255^2) = 1/sqrt(3) from blue; the other slide has no
    # fill of its own (background -> the master, which is not solid: 1) -> 1 - (1/sqrt(3) + 1) / 2.
    assert fn(coloured("c.pptx", (0, 0, 0), None), rules) == pytest.approx(1 - (1 / math.sqrt(3) + 1) / 2)


def test_check_left_panel_finds_the_slides_view():
    fn = metric("check_left_panel")
    tree = (
        '<desktop-frame><application name="soffice"><document-frame name="{}"/></application></desktop-frame>'
    )
    assert fn(tree.format("Slides View"), None) == 1.0
    assert fn(tree.format("Outline View"), None) == 0.0
    with pytest.raises(ZeroScore, match="not XML"):
        fn("not xml", None)


def picture_bytes(colour: str) -> io.BytesIO:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 6), colour).save(buffer, "PNG")
    buffer.seek(0)
    return buffer


def test_check_image_stretch_and_center(tmp_path: Path):
    fn = metric("check_image_stretch_and_center")
    original = slides(tmp_path, 1)
    original.slides[0].shapes.add_picture(picture_bytes("red"), Inches(3), Inches(2), Inches(2), Inches(1.5))
    gold = save(original, tmp_path / "o.pptx")

    def placed(name: str, left: float, top: float, width: float, height: float, colour: str = "red") -> str:
        prs = slides(tmp_path, 1)
        prs.slides[0].shapes.add_picture(
            picture_bytes(colour), Inches(left), Inches(top), Inches(width), Inches(height)
        )
        return save(prs, tmp_path / name)

    # The same picture stretched to the 10 x 7.5 in slide, within 0.5 in everywhere: 1.
    assert fn(placed("a.pptx", 0.2, 0.1, 9.7, 7.4), gold) == 1.0
    # Stretched but off centre: left 0.7 in where (10 - 9.8) / 2 = 0.1 in is centred, 0.6 > 0.5 -> 0.
    assert fn(placed("b.pptx", 0.7, 0.0, 9.8, 7.5), gold) == 0.0
    # Not stretched: width 2 in vs 10 in -> 0.
    assert fn(placed("c.pptx", 3, 2, 2, 1.5), gold) == 0.0
    # Another picture (different bytes), even stretched: no match -> 0.
    assert fn(placed("d.pptx", 0, 0, 10, 7.5, colour="blue"), gold) == 0.0


def with_slide_number_colour(path: Path, colour: str | None) -> str:
    prs = slides(path, 1)
    if colour is not None:
        number = prs.slide_masters[0].placeholders.get(PP_PLACEHOLDER.SLIDE_NUMBER)
        assert number is not None
        rpr = number._element.xpath(".//a:fld/a:rPr")[0]
        rpr.insert(0, parse_xml(f'<a:solidFill xmlns:a="{A}"><a:srgbClr val="{colour}"/></a:solidFill>'))
    return save(prs, path)


def test_check_page_number_colors(tmp_path: Path):
    fn = metric("check_page_number_colors")
    red, blue = (
        with_slide_number_colour(tmp_path / "r.pptx", "E02020"),
        with_slide_number_colour(tmp_path / "b.pptx", "1020C0"),
    )
    # The <p:ph> elements are empty, so the colour comes from the last non-black run colour:
    # E02020 -> r 224 > g 32 + 50 and > b 32 + 50: red -> 1; 1020C0 is not red -> 0.
    assert fn(red, {"color": "red"}) == 1.0
    assert fn(blue, {"color": "red"}) == 0.0
    assert fn(blue, {"color": "blue"}) == 1.0
    # No srgbClr anywhere in python-pptx's default master: no colour found -> 0.
    assert fn(with_slide_number_colour(tmp_path / "n.pptx", None), {"color": "red"}) == 0.0
    # A colour name OSWorld does not test passes any parsed colour: 1.
    assert fn(blue, {"color": "purple"}) == 1.0

"""One-task Impress metrics (settings, transitions, backgrounds, layout), scored as OSWorld's ``slides.py``.

Presentations are read with python-pptx or as slide XML, settings from LibreOffice's
``registrymodifications.xcu``, exactly where OSWorld reads them. Where OSWorld's
function raises on the agent's file (a missing or broken file, a slide that is not
there), the check scores 0 with the reason (:class:`ZeroScore`); where it returns
None (an unparsable ``.xcu`` in ``check_auto_saving_time``) the score is 0.
"""

from __future__ import annotations

import math
import zipfile
from typing import Any
from xml.etree import ElementTree

from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE
from pptx.exc import PackageNotFoundError
from pptx.util import Inches

from osworld_mcp_env.evaluators.metrics.task_rules import rule_value
from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric

_OOR = "{http://openoffice.org/2001/registry}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_PPTX_ERRORS = (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError, OSError)


def _presentation(path: Any, metric: str) -> Any:
    if not path:
        raise ZeroScore(f"{metric}: no presentation (OSWorld raises)")
    try:
        return Presentation(path)
    except _PPTX_ERRORS as exc:
        raise ZeroScore(f"{metric}: python-pptx cannot open {path} (OSWorld raises): {exc}") from exc


@register_metric("check_presenter_console_disable")
def check_presenter_console_disable(result: Any, expected: Any, **options: Any) -> float:
    """1 when the first ``Impress/Misc/Start`` ``EnablePresenterScreen`` value is ``false`` (any case).

    An unreadable file, a missing value or no such setting: 0 (OSWorld catches every error).
    """
    if not result:
        return 0.0
    try:
        root = ElementTree.parse(result).getroot()
    except (ElementTree.ParseError, OSError):
        return 0.0
    path = (
        f".//item[@{_OOR}path='/org.openoffice.Office.Impress/Misc/Start']"
        f"/prop[@{_OOR}name='EnablePresenterScreen']"
    )
    for prop in root.iterfind(path):
        value = prop.find("value")
        text = value.text if value is not None else None
        return float(text is not None and text.lower() == "false")
    return 0.0


@register_metric("check_auto_saving_time")
def check_auto_saving_time(result: Any, expected: Any, **options: Any) -> float:
    """1 when ``AutoSaveTimeIntervall`` of ``Common/Save/Document`` equals ``rules["minutes"]``.

    The last such item wins (within it, the first such property). A property without a
    ``value`` element or with a non-integer value raises in OSWorld (0 here, with the reason).
    """
    minutes = rule_value(expected, "minutes", "check_auto_saving_time")
    if result is None:
        raise ZeroScore("check_auto_saving_time: no settings file (OSWorld raises TypeError)")
    try:
        root = ElementTree.parse(result).getroot()
    except (ElementTree.ParseError, FileNotFoundError):
        return 0.0  # OSWorld logs the error and returns None, which is no score
    except OSError as exc:
        raise ZeroScore(f"check_auto_saving_time: cannot read {result!r} (OSWorld raises): {exc}") from exc
    interval = None
    for item in root.iterfind(".//item"):
        if item.get(f"{_OOR}path") != "/org.openoffice.Office.Common/Save/Document":
            continue
        for prop in item.iterfind(".//prop"):
            if prop.get(f"{_OOR}name") == "AutoSaveTimeIntervall":
                value = prop.find(".//value")
                if value is None:
                    raise ZeroScore("check_auto_saving_time: the interval has no value (OSWorld raises)")
                interval = value.text
                break
    if interval is None:
        return 0.0
    try:
        return float(int(interval) == minutes)
    except ValueError as exc:
        raise ZeroScore(f"check_auto_saving_time: {interval!r} is not a number (OSWorld raises)") from exc


@register_metric("check_transition")
def check_transition(result: Any, expected: Any, **options: Any) -> float:
    """1 when slide ``slide_idx`` (0-based) has a transition whose element holds ``<p:{transition_type}>``.

    Only the first ``<p:transition>`` of the slide is examined; no such slide: 0.
    """
    index = rule_value(expected, "slide_idx", "check_transition")
    kind = rule_value(expected, "transition_type", "check_transition")
    if not result:
        raise ZeroScore("check_transition: no presentation (OSWorld raises)")
    try:
        with zipfile.ZipFile(result) as z:
            name = f"ppt/slides/slide{index + 1}.xml"
            if name not in z.namelist():
                return 0.0
            root = ElementTree.fromstring(z.read(name))
    except (zipfile.BadZipFile, ElementTree.ParseError, OSError) as exc:
        raise ZeroScore(f"check_transition: cannot read {result} (OSWorld raises): {exc}") from exc
    transition = root.find(f".//{_P}transition")
    return float(transition is not None and transition.find(f".//{_P}{kind}") is not None)


@register_metric("check_slide_orientation_Portrait")
def check_slide_orientation_Portrait(result: Any, expected: Any, **options: Any) -> float:
    """1 when the slides are narrower than high."""
    prs = _presentation(result, "check_slide_orientation_Portrait")
    return float(prs.slide_width < prs.slide_height)


def _rgb(color: Any) -> Any:
    """The colour's RGB, or None when it has none (a theme colour: python-pptx raises)."""
    try:
        return color.rgb
    except Exception:  # OSWorld's bare except around hasattr/rgb
        return None


def _fill_distance(slide: Any, rgb: list[int], original: list[int] | None) -> float:
    """OSWorld's distance of one slide's background to ``rgb``: 1 for anything not a solid colour."""
    fill = slide.background.fill
    if fill.type == 5:  # MSO_FILL.BACKGROUND: the master's background shows
        fill = slide.slide_layout.slide_master.background.fill
        if fill.type != 1:
            return 1.0
    elif fill.type != 1:  # not MSO_FILL.SOLID
        return 1.0
    color = _rgb(fill.fore_color)
    if color is None:
        return 1.0
    r1, g1, b1 = color
    if original is not None and (r1, g1, b1) == tuple(original):
        return 1.0
    r2, g2, b2 = rgb
    return math.sqrt((r1 - r2) ** 2 + (g1 - g2) ** 2 + (b1 - b2) ** 2) / math.sqrt(3 * 255**2)


@register_metric("evaluate_presentation_fill_to_rgb_distance")
def evaluate_presentation_fill_to_rgb_distance(result: Any, expected: Any, **options: Any) -> float:
    """1 minus the mean, over slides, of each background's RGB distance to ``rules["rgb"]``.

    Distance is Euclidean over the RGB cube's diagonal; a slide that is not a solid
    colour (its own or its master's), or still has ``original_rgb``, counts 1.
    """
    rgb = rule_value(expected, "rgb", "evaluate_presentation_fill_to_rgb_distance")
    original = expected.get("original_rgb")
    prs = _presentation(result, "evaluate_presentation_fill_to_rgb_distance")
    slides = list(prs.slides)
    if not slides:
        raise ZeroScore("evaluate_presentation_fill_to_rgb_distance: no slide (OSWorld divides by zero)")
    return 1 - sum(_fill_distance(s, rgb, original) for s in slides) / len(slides)


@register_metric("check_left_panel")
def check_left_panel(result: Any, expected: Any, **options: Any) -> float:
    """1 when the accessibility tree has a ``document-frame`` named "Slides View" (the slide pane is open)."""
    if result is None:
        return 0.0
    try:
        root = ElementTree.fromstring(result)
    except ElementTree.ParseError as exc:
        raise ZeroScore(f"check_left_panel: the tree is not XML (OSWorld raises): {exc}") from exc
    return float(any(f.get("name") == "Slides View" for f in root.iter("document-frame")))


@register_metric("check_image_stretch_and_center")
def check_image_stretch_and_center(result: Any, expected: Any, **options: Any) -> float:
    """1 when the original's first picture of slide 1 fills the result's slide 1, centred, within 0.5 in.

    The picture is found by identical image bytes (the last such picture wins);
    the slide size is the original's.
    """
    original = _presentation(expected, "check_image_stretch_and_center")
    modified = _presentation(result, "check_image_stretch_and_center")
    if not len(original.slides) or not len(modified.slides):
        raise ZeroScore("check_image_stretch_and_center: a presentation has no slide (OSWorld raises)")
    pictures = [s for s in original.slides[0].shapes if s.shape_type == MSO_SHAPE_TYPE.PICTURE]
    if not pictures:
        return 0.0
    blob = pictures[0].image.blob
    found = None
    for shape in modified.slides[0].shapes:
        if shape.shape_type == MSO_SHAPE_TYPE.PICTURE and shape.image.blob == blob:
            found = shape
    if found is None:
        return 0.0
    width, height, tolerance = original.slide_width, original.slide_height, Inches(0.5)
    off = (
        abs(found.width - width) > tolerance
        or abs(found.height - height) > tolerance
        or abs(found.left - (width - found.width) / 2) > tolerance
        or abs(found.top - (height - found.height) / 2) > tolerance
    )
    return float(not off)


def _hex_rgb(value: str | None) -> tuple[int, int, int] | None:
    if value is None:
        return None
    value = value.lstrip("#")
    if len(value) != 6:
        return None
    try:
        return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)
    except ValueError:
        return None


def _slide_number_colour(root: ElementTree.Element) -> str | None:
    """The ``srgbClr`` OSWorld takes for the slide number, searching the master as it does.

    A placeholder's ``<p:ph>`` is empty in practice, so the first two searches rarely
    succeed; then the last non-black run colour; then the last non-black fill colour;
    then the last fill colour of all.
    """
    colour_in = f".//{_A}solidFill//{_A}srgbClr"
    ph = root.find(f".//{_P}ph[@type='sldNum']")
    if ph is not None and (found := ph.find(colour_in)) is not None and found.get("val") is not None:
        return found.get("val")
    for ph in root.iterfind(f".//{_P}ph"):
        if ph.get("type") in ("sldNum", "ftr", "dt") and (found := ph.find(colour_in)) is not None:
            if found.get("val") is not None:
                return found.get("val")
            break  # OSWorld stops at the first coloured placeholder, even without a value
    for elem in reversed(root.findall(f".//{_A}rPr//{_A}solidFill//{_A}srgbClr")):
        if elem.get("val") and elem.get("val") != "000000":
            return elem.get("val")
    fills = root.findall(colour_in)
    for elem in reversed(fills):
        if elem.get("val") and elem.get("val") != "000000":
            return elem.get("val")
    return fills[-1].get("val") if fills else None


_COLOUR_TESTS = {
    "red": lambda r, g, b: r > g + 50 and r > b + 50,
    "blue": lambda r, g, b: b > g + 50 and b > r + 50,
    "green": lambda r, g, b: g > r + 50 and g > b + 50,
    "black": lambda r, g, b: r < 50 and g < 50 and b < 50,
}


@register_metric("check_page_number_colors")
def check_page_number_colors(result: Any, expected: Any, **options: Any) -> float:
    """1 when the colour OSWorld takes for the slide number (first slide master) is ``rules["color"]``.

    A colour name other than red, blue, green or black passes any parsable colour.
    """
    colour = rule_value(expected, "color", "check_page_number_colors")
    if not result:
        raise ZeroScore("check_page_number_colors: no presentation (OSWorld raises)")
    try:
        with zipfile.ZipFile(result) as z:
            root = ElementTree.fromstring(z.read("ppt/slideMasters/slideMaster1.xml"))
    except (zipfile.BadZipFile, KeyError, ElementTree.ParseError, OSError) as exc:
        raise ZeroScore(f"check_page_number_colors: no slide master (OSWorld raises): {exc}") from exc
    rgb = _hex_rgb(_slide_number_colour(root))
    if rgb is None:
        return 0.0
    test = _COLOUR_TESTS.get(colour)
    return float(test is None or test(*rgb))

"""``compare_pptx_files``: two presentations compared slide by slide, shape by shape, as OSWorld does.

Checks run in OSWorld's order and each can be switched off by its ``examine_*``
option (same defaults). Geometry is compared with a relative tolerance
(``approximately_tolerance``, default 0.005); shapes without text skip the geometry
check. Some options encode one OSWorld task each (``examine_title_bottom_position``
looks for the "Product Comparison" title on any slide, ``examine_table_bottom_position``
for a table on slide 3, ...); they are kept verbatim, thresholds included.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Mapping
from typing import Any
from xml.etree import ElementTree

from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE
from pptx.enum.text import PP_ALIGN
from pptx.exc import PackageNotFoundError

from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric

_FLAGS_ON = (
    "examine_number_of_slides",
    "examine_shape",
    "examine_text",
    "examine_indent",
    "examine_font_name",
    "examine_font_size",
    "examine_font_bold",
    "examine_font_italic",
    "examine_color_rgb",
    "examine_font_underline",
    "examine_strike_through",
    "examine_alignment",
    "examine_run_count",
    "examine_bullets",
    "examine_background_color",
    "examine_note",
)
_FLAGS_OFF = (
    "examine_title_bottom_position",
    "examine_table_bottom_position",
    "examine_right_position",
    "examine_top_position",
    "examine_shape_for_shift_size",
    "examine_image_size",
    "examine_modify_height",
)
OPTIONS = (
    *_FLAGS_ON,
    *_FLAGS_OFF,
    "approximately_tolerance",
    "enable_debug",
    "_note",
    "examine_shape_lenient_height",
)
"""Option names: the ``examine_*`` switches, the tolerance, OSWorld's debug switch, a comment key, and
``examine_shape_lenient_height``, which tasks pass but OSWorld's code never reads (ignored here too)."""

_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"


class _Opts:
    def __init__(self, options: Mapping[str, Any]) -> None:
        self.flags = {f: bool(options.get(f, True)) for f in _FLAGS_ON}
        self.flags |= {f: bool(options.get(f, False)) for f in _FLAGS_OFF}
        self.tol = float(options.get("approximately_tolerance", 0.005))

    def __getattr__(self, name: str) -> bool:
        return self.flags["examine_" + name]

    def close(self, a: float, b: float) -> bool:
        if a == b:
            return True
        if a == 0 or b == 0:
            return False
        return abs(a - b) / max(abs(a), abs(b)) <= self.tol

    def same_box(self, s1: Any, s2: Any) -> bool:
        return all(self.close(getattr(s1, k), getattr(s2, k)) for k in ("left", "top", "width", "height"))


def _background(slide: Any) -> Any:
    fill = slide.background.fill
    if fill.type == 1:
        return fill.fore_color.rgb
    if fill.type == 5:
        master = slide.slide_layout.slide_master.background.fill
        return master.fore_color.rgb if master.type == 1 else None
    return None


def _text_shapes(shapes: Any) -> list[Any]:
    out = []
    for shape in shapes:
        if hasattr(shape, "text") and hasattr(shape, "text_frame"):
            out.append(shape)
        if hasattr(shape, "shapes"):
            out += _text_shapes(shape.shapes)
    return out


def _nonempty_runs(p1: Any, p2: Any) -> tuple[list[Any], list[Any]]:
    """The runs to compare: formatting-only runs are dropped when both paragraphs are blank."""
    if (p1.text or "").strip() == "" and (p2.text or "").strip() == "":
        return [r for r in p1.runs if (r.text or "").strip()], [r for r in p2.runs if (r.text or "").strip()]
    return list(p1.runs), list(p2.runs)


def _falsy_equal(a: Any, b: Any) -> bool:
    """Bold/italic: None and False both mean "off"."""
    return a == b or (a in (None, False) and b in (None, False))


def _underline_equal(a: Any, b: Any) -> bool:
    return a == b or not ((a is not None and b is not None) or {a, b} == {None, True})


def _color_equal(r1: Any, r2: Any) -> bool:
    if hasattr(r1.font.color, "rgb") and hasattr(r2.font.color, "rgb"):
        return r1.font.color.rgb == r2.font.color.rgb
    return True


def _bullets(slide_xml: bytes) -> list[tuple[Any, ...]] | None:
    """(level, bullet char, text) of each non-blank paragraph; None where OSWorld's reading fails.

    OSWorld joins ``a:t`` texts without a None guard: an empty ``<a:t/>`` makes it skip
    the bullet comparison, so None here means "skip" too.
    """
    out = []
    for p in ElementTree.fromstring(slide_xml).iter(f"{_A}p"):
        ppr = p.find(f"{_A}pPr")
        lvl: str | None = "No Level"  # a pPr without lvl gives None, as in OSWorld
        char: str | None = "No Bullet"
        if ppr is not None:
            lvl = ppr.get("lvl")
            bu = ppr.find(f"{_A}buChar")
            char = bu.get("char") if bu is not None else "No Bullet"
        texts = [t.text for t in p.iter(f"{_A}t")]
        if None in texts:
            return None
        text = "".join(t for t in texts if t is not None)
        if text.strip():
            out.append((lvl, char, text))
    return out


def _bullets_equal(b1: list[tuple[Any, ...]] | None, b2: list[tuple[Any, ...]] | None) -> bool:
    if b1 is None or b2 is None:
        return True
    if len(b1) != len(b2):
        return False
    for (l1, c1, t1), (l2, c2, t2) in zip(b1, b2, strict=True):
        if t1 != t2 or c1 != c2:
            return False
        if (c1 != "No Bullet" or c2 != "No Bullet") and (l1 or "0") != (l2 or "0"):
            return False
    return True


def _align(p: Any) -> Any:
    return PP_ALIGN.LEFT if p.alignment is None else p.alignment


def _table_ok(t1: Any, t2: Any, o: _Opts) -> bool:
    if len(t1.rows) != len(t2.rows) or len(t1.columns) != len(t2.columns):
        return False
    for i in range(len(t1.rows)):
        for j in range(len(t1.columns)):
            ps1, ps2 = t1.cell(i, j).text_frame.paragraphs, t2.cell(i, j).text_frame.paragraphs
            if len(ps1) != len(ps2):
                return False
            for p1, p2 in zip(ps1, ps2, strict=True):
                runs1, runs2 = _nonempty_runs(p1, p2)
                if len(runs1) != len(runs2) and o.run_count:
                    return False
                for r1, r2 in zip(runs1, runs2, strict=False):
                    if o.color_rgb and not _color_equal(r1, r2):
                        return False
                    f1, f2 = r1.font, r2.font
                    if not (_falsy_equal(f1.bold, f2.bold) and _falsy_equal(f1.italic, f2.italic)):
                        return False
                    if not _underline_equal(f1.underline, f2.underline):
                        return False
    return True


def _strike(font: Any) -> str:
    return font._element.attrib.get("strike", "noStrike")


def _runs_ok(r1: Any, r2: Any, o: _Opts) -> bool:
    f1, f2 = r1.font, r2.font
    checks: list[tuple[bool, Callable[[], bool]]] = [
        (o.font_name, lambda: f1.name == f2.name),
        (o.font_size, lambda: f1.size == f2.size),
        (o.font_bold, lambda: _falsy_equal(f1.bold, f2.bold)),
        (o.font_italic, lambda: _falsy_equal(f1.italic, f2.italic)),
        (o.color_rgb, lambda: _color_equal(r1, r2)),
        (o.font_underline, lambda: _underline_equal(f1.underline, f2.underline)),
        (
            o.strike_through,
            lambda: _strike(f1) == _strike(f2),
        ),
    ]
    return all(check() for on, check in checks if on)


def _text_ok(s1: Any, s2: Any, o: _Opts) -> tuple[bool, bool]:
    """(equal, compared a run pair) for two text shapes."""
    if s1.text.strip() != s2.text.strip() and o.text:
        return False, False
    ps1, ps2 = s1.text_frame.paragraphs, s2.text_frame.paragraphs
    if len(ps1) != len(ps2):
        return False, False
    had_runs = False
    for p1, p2 in zip(ps1, ps2, strict=True):
        if o.alignment and _align(p1) != _align(p2):
            return False, had_runs
        if p1.text != p2.text and o.text:
            return False, had_runs
        if p1.level != p2.level and o.indent and not ({p1.level or 0, p2.level or 0} <= {0, 1}):
            return False, had_runs
        runs1, runs2 = _nonempty_runs(p1, p2)
        if len(runs1) != len(runs2) and o.run_count:
            return False, had_runs
        for r1, r2 in zip(runs1, runs2, strict=False):
            had_runs = True
            if not _runs_ok(r1, r2, o):
                return False, had_runs
    return True, had_runs


def _blank(shape: Any) -> bool:
    return not getattr(shape, "text", None) or (shape.text or "").strip() == ""


def _geometry_ok(s1: Any, s2: Any, slide_no: int, o: _Opts) -> bool:
    has_text = hasattr(s1, "text") and hasattr(s2, "text")
    if o.title_bottom_position:
        if has_text and s1.text == s2.text:
            if s1.text == "Product Comparison" and (s1.top <= s2.top or s1.top < 3600000):
                return False
        elif not o.same_box(s1, s2):
            return False
    if o.table_bottom_position:
        if slide_no == 3 and s1.shape_type == 19 and s2.shape_type == 19:
            if s1.top <= s2.top or s1.top < 3600000:
                return False
        elif not o.same_box(s1, s2):
            return False
    no_text = not hasattr(s1, "text") and not hasattr(s2, "text")
    if o.right_position and slide_no == 2 and no_text and (s1.left <= s2.left or s1.left < 4320000):
        return False
    pictures = s1.shape_type == 13 and s2.shape_type == 13
    if o.top_position and slide_no == 2 and pictures and (s1.top >= s2.top or s1.top > 1980000):
        return False
    placeholder = has_text and s1.text == s2.text == "Elaborate on what you want to discuss."
    if o.shape_for_shift_size and not o.same_box(s1, s2) and not placeholder:
        return False
    if o.shape and not o.same_box(s1, s2) and not (_blank(s1) and _blank(s2)):
        return False
    if o.image_size:
        if pictures:
            if not (o.close(s1.width, s2.width) and o.close(s1.height, s2.height)):
                return False
        elif not o.same_box(s1, s2):
            return False
    if o.modify_height:
        if no_text or (s1.shape_type == 5 and s2.shape_type == 5):
            if not o.close(s1.height, s2.height):
                return False
        elif not o.same_box(s1, s2):
            return False
    return True


def _notes(slide: Any) -> str:
    return slide.notes_slide.notes_text_frame.text.strip()


def _slide_ok(sl1: Any, sl2: Any, slide_no: int, o: _Opts) -> bool:
    if o.background_color and _background(sl1) != _background(sl2):
        return False
    if o.note and _notes(sl1) != _notes(sl2):
        return False
    if len(sl1.shapes) != len(sl2.shapes):
        return False
    compared_runs = False
    for s1, s2 in zip(sl1.shapes, sl2.shapes, strict=True):
        if not _geometry_ok(s1, s2, slide_no, o):
            return False
        if s1.shape_type == MSO_SHAPE_TYPE.TABLE and not _table_ok(s1.table, s2.table, o):
            return False
        if hasattr(s1, "text") and hasattr(s2, "text"):
            ok, had_runs = _text_ok(s1, s2, o)
            compared_runs |= had_runs
            if not ok:
                return False
    # OSWorld compares the bullets of the whole slide XML at every run pair; once is the same verdict.
    if o.bullets and compared_runs and not _bullets_equal(_bullets(sl1.part.blob), _bullets(sl2.part.blob)):
        return False
    t1, t2 = _text_shapes(sl1.shapes), _text_shapes(sl2.shapes)
    if len(t1) != len(t2):
        return False
    if o.alignment:
        for a, b in zip(t1, t2, strict=True):
            if a.text.strip() != b.text.strip() and o.text:
                return False
            pa, pb = a.text_frame.paragraphs, b.text_frame.paragraphs
            if len(pa) != len(pb) or any(_align(x) != _align(y) for x, y in zip(pa, pb, strict=True)):
                return False
    return True


@register_metric("compare_pptx_files", options=OPTIONS)
def compare_pptx_files(result: Any, expected: Any, **options: Any) -> float:
    """1 when the two presentations agree on everything the ``examine_*`` options switch on.

    A result that is missing or not a presentation scores 0 with a reason (OSWorld raises).
    """
    if result is None:
        raise ZeroScore("no result file (OSWorld raises on a None path)")
    try:
        p1 = Presentation(result)
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, OSError, ValueError) as exc:
        raise ZeroScore(f"result {result!r} is not a readable pptx (OSWorld raises): {exc}") from exc
    try:
        p2 = Presentation(expected)
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, OSError, ValueError) as exc:
        raise EvaluationError(f"compare_pptx_files: expected file {expected!r} is unreadable: {exc}") from exc
    o = _Opts(options)
    if len(p1.slides) != len(p2.slides) and o.number_of_slides:
        return 0.0
    pairs = zip(p1.slides, p2.slides, strict=False)  # unequal counts pass with examine_number_of_slides off
    return float(all(_slide_ok(a, b, i, o) for i, (a, b) in enumerate(pairs, start=1)))

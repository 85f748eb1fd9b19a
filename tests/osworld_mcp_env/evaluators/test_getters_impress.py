"""How ``background_image_in_slide`` finds a slide's background picture in hand-made pptx files.

Each expectation follows OSWorld's ``get_background_image_in_slide`` (getters/impress.py):
slide ``i`` is the part ``ppt/slides/slide{i+1}.xml``, its picture the first ``a:blip``
with ``r:embed`` inside a ``p:bgPr``, resolved through the slide's relationships.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from osworld_mcp_env.evaluators.getters.impress import EmbeddedPart, LinkedFile, slide_audio, slide_background

NS = (
    'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
    'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
    'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"'
)
IMAGE = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/image"
LAYOUT = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/slideLayout"
PICTURE = b"\x89PNG picture bytes"


def slide(background: str) -> str:
    return f"<p:sld {NS}><p:cSld>{background}<p:spTree/></p:cSld></p:sld>"


def picture_background(blip: str) -> str:
    return f"<p:bg><p:bgPr><a:blipFill>{blip}</a:blipFill></p:bgPr></p:bg>"


def rels(*relationships: tuple[str, str, str]) -> str:
    items = "".join(
        f'<Relationship Id="{i}" Type="{t}" Target="{target}"/>' for i, t, target in relationships
    )
    return f'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{items}</Relationships>'


def pptx(path: Path, parts: dict[str, str | bytes]) -> str:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in parts.items():
            z.writestr(name, data)
    return str(path)


def test_embedded_and_linked_backgrounds(tmp_path: Path):
    doc = pptx(
        tmp_path / "deck.pptx",
        {
            # Slide 1: a solid background, no picture.
            "ppt/slides/slide1.xml": slide("<p:bg><p:bgPr><a:solidFill/></p:bgPr></p:bg>"),
            # Slide 2: the picture ../media/image1.png; a layout relationship comes first.
            "ppt/slides/slide2.xml": slide(picture_background('<a:blip r:embed="rId2"/>')),
            "ppt/slides/_rels/slide2.xml.rels": rels(
                ("rId1", LAYOUT, "../slideLayouts/slideLayout1.xml"), ("rId2", IMAGE, "../media/image1.png")
            ),
            "ppt/media/image1.png": PICTURE,
            # Slide 3: a linked picture (LibreOffice's "link" option).
            "ppt/slides/slide3.xml": slide(picture_background('<a:blip r:embed="rId1"/>')),
            "ppt/slides/_rels/slide3.xml.rels": rels(("rId1", IMAGE, "file:///home/user/Desktop/frame.png")),
        },
    )
    assert slide_background(doc, 1) == EmbeddedPart("ppt/media/image1.png", PICTURE)
    assert slide_background(doc, 2) == LinkedFile("/home/user/Desktop/frame.png")
    # No picture in slide 1's bgPr: OSWorld's `for ... else: return None`.
    assert slide_background(doc, 0) is None
    # No slide4.xml part: None.
    assert slide_background(doc, 3) is None


def test_what_makes_osworld_give_none_or_raise_is_no_picture(tmp_path: Path):
    blip = picture_background('<a:blip r:embed="rId1"/>')
    cases = {
        # A picture shape (p:pic) is not the background, though its part exists.
        "shape": {
            "ppt/slides/slide1.xml": f"<p:sld {NS}><p:cSld><p:spTree><p:pic><p:blipFill>"
            '<a:blip r:embed="rId1"/></p:blipFill></p:pic></p:spTree></p:cSld></p:sld>',
            "ppt/slides/_rels/slide1.xml.rels": rels(("rId1", IMAGE, "../media/image1.png")),
            "ppt/media/image1.png": PICTURE,
        },
        # A background picture without the slide's relationships part.
        "no rels": {"ppt/slides/slide1.xml": slide(blip)},
        # The target names a part the zip lacks: OSWorld's extract raises KeyError.
        "missing part": {
            "ppt/slides/slide1.xml": slide(blip),
            "ppt/slides/_rels/slide1.xml.rels": rels(("rId1", IMAGE, "../media/gone.png")),
        },
        # A target neither ../ nor file://: OSWorld's assert fails.
        "other target": {
            "ppt/slides/slide1.xml": slide(blip),
            "ppt/slides/_rels/slide1.xml.rels": rels(("rId1", IMAGE, "/ppt/media/image1.png")),
            "ppt/media/image1.png": PICTURE,
        },
        # A blip with r:link only (no r:embed): OSWorld's KeyError is caught, no picture.
        "link only": {"ppt/slides/slide1.xml": slide(picture_background('<a:blip r:link="rId1"/>'))},
    }
    for name, parts in cases.items():
        assert slide_background(pptx(tmp_path / f"{name}.pptx", parts), 0) is None, name
    # Not a zip at all (OSWorld's ZipFile raises).
    text = tmp_path / "text.pptx"
    text.write_text("not a presentation")
    assert slide_background(str(text), 0) is None


AUDIO = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/audio"
MEDIA = "http://schemas.microsoft.com/office/2007/relationships/media"


def test_a_slides_sound_is_its_first_audio_relationship(tmp_path: Path):
    # OSWorld's get_audio_in_slide reads only the slide's rels: the first Type containing "audio".
    sound = b"RIFF....WAVEfmt "
    doc = pptx(
        tmp_path / "deck.pptx",
        {
            # Slide 1: LibreOffice's pair (media first: its Type lacks "audio"), then an image.
            "ppt/slides/_rels/slide1.xml.rels": rels(
                ("rId1", MEDIA, "../media/media1.wav"),
                ("rId2", AUDIO, "../media/media1.wav"),
                ("rId3", IMAGE, "../media/image1.png"),
            ),
            "ppt/media/media1.wav": sound,
            # Slide 2: a linked sound, then a second one that is never looked at.
            "ppt/slides/_rels/slide2.xml.rels": rels(
                ("rId1", AUDIO, "file:///home/user/Music/planet.wav"), ("rId2", AUDIO, "../media/media1.wav")
            ),
            # Slide 3: pictures only.
            "ppt/slides/_rels/slide3.xml.rels": rels(("rId1", IMAGE, "../media/image1.png")),
        },
    )
    assert slide_audio(doc, 0) == EmbeddedPart("ppt/media/media1.wav", sound)
    assert slide_audio(doc, 1) == LinkedFile("/home/user/Music/planet.wav")
    assert slide_audio(doc, 2) is None  # OSWorld: audio_file_path stays None
    assert slide_audio(doc, 3) is None  # no rels part for slide 4


def test_where_osworlds_audio_getter_raises_there_is_no_sound(tmp_path: Path):
    cases = {
        # The target names a part the zip lacks: extract raises KeyError.
        "missing part": rels(("rId1", AUDIO, "../media/gone.wav")),
        # Neither ../ nor file://: OSWorld's assert fails.
        "other target": rels(("rId1", AUDIO, "http://example.com/a.wav")),
        # A relationship without Type before the sound: rel.attrib['Type'] raises.
        "no type": '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId9" Target="x"/>'
        f'<Relationship Id="rId1" Type="{AUDIO}" Target="../media/media1.wav"/></Relationships>',
    }
    for name, xml in cases.items():
        parts = {"ppt/slides/_rels/slide1.xml.rels": xml, "ppt/media/media1.wav": b"wav"}
        assert slide_audio(pptx(tmp_path / f"{name}.pptx", parts), 0) is None, name

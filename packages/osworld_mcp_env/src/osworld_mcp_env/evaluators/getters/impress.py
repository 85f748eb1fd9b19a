"""Impress getters: a slide's background picture and its sound, read from the pptx as OSWorld reads them.

The pptx is read as OSWorld's getters read it, as a zip of XML parts rather than
through python-pptx: slide ``i`` is the part ``ppt/slides/slide{i+1}.xml`` (the file
name, not the presentation order), its background is the first ``a:blip`` with an
``r:embed`` inside a ``p:bgPr``, and its sound the first relationship of the slide
whose ``Type`` names ``audio``. A ``../`` target is a part inside the pptx, a
``file://`` target a file in the desktop.
"""

from __future__ import annotations

import posixpath
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any
from xml.etree import ElementTree

from osworld_mcp_env.backends.base import Desktop
from osworld_mcp_env.evaluators.getters.files import save_result, vm_file
from osworld_mcp_env.evaluators.registry import register_getter
from osworld_mcp_env.tasks.context import TaskContext

P_BG_PR = "{http://schemas.openxmlformats.org/presentationml/2006/main}bgPr"
A_BLIP = "{http://schemas.openxmlformats.org/drawingml/2006/main}blip"
R_EMBED = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}embed"
RELATIONSHIP = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"


def _background_id(slide: ElementTree.Element) -> str | None:
    """The ``r:embed`` of the first ``p:bgPr`` whose first ``a:blip`` has one."""
    for background in slide.iter(P_BG_PR):
        blip = next(background.iter(A_BLIP), None)
        if blip is not None and R_EMBED in blip.attrib:
            return blip.attrib[R_EMBED]
    return None


def _image_target(rels: ElementTree.Element, image_id: str) -> str | None:
    """The ``Target`` of the image relationship ``image_id`` (a ``Type`` naming ``image``).

    None too where OSWorld raises: a relationship before it without ``Type`` or ``Id``.
    """
    for rel in rels.findall(RELATIONSHIP):
        if "Type" not in rel.attrib or "Id" not in rel.attrib:
            return None
        if "image" in rel.attrib["Type"] and rel.attrib["Id"] == image_id:
            return rel.attrib.get("Target")
    return None


def _audio_target(rels: ElementTree.Element) -> str | None:
    """The ``Target`` of the first relationship whose ``Type`` contains ``audio``.

    None too where OSWorld raises: a relationship before it without ``Type``, or it without ``Target``.
    """
    for rel in rels.findall(RELATIONSHIP):
        if "Type" not in rel.attrib:
            return None
        if "audio" in rel.attrib["Type"]:
            return rel.attrib.get("Target")
    return None


@dataclass(frozen=True)
class EmbeddedPart:
    """A file inside the pptx: its zip ``part`` name and bytes."""

    part: str
    data: bytes


@dataclass(frozen=True)
class LinkedFile:
    """A file the pptx links to: its ``path`` in the desktop (a ``file://`` target)."""

    path: str


def _resolve(pptx: zipfile.ZipFile, names: set[str], target: str) -> EmbeddedPart | LinkedFile | None:
    """A relationship target as OSWorld resolves it; None where it raises (a missing part, another scheme)."""
    if target.startswith(".."):
        part = posixpath.normpath(posixpath.join("ppt/slides", target))
        if part not in names or part.startswith("../"):
            return None
        return EmbeddedPart(part, pptx.read(part))
    return LinkedFile(target[len("file://") :]) if target.startswith("file://") else None


def _rels_part(slide_index: int) -> str:
    return f"ppt/slides/_rels/slide{slide_index + 1}.xml.rels"


def _background_target(pptx: zipfile.ZipFile, names: set[str], slide_index: int) -> str | None:
    """The target of the slide's background picture: its XML's ``r:embed``, looked up in its relationships."""
    slide_part = f"ppt/slides/slide{slide_index + 1}.xml"
    if slide_part not in names:
        return None
    image_id = _background_id(ElementTree.fromstring(pptx.read(slide_part)))
    if image_id is None or _rels_part(slide_index) not in names:
        return None
    return _image_target(ElementTree.fromstring(pptx.read(_rels_part(slide_index))), image_id)


def _sound_target(pptx: zipfile.ZipFile, names: set[str], slide_index: int) -> str | None:
    """The target of the slide's sound: only its relationships are read, not its XML."""
    if _rels_part(slide_index) not in names:
        return None
    return _audio_target(ElementTree.fromstring(pptx.read(_rels_part(slide_index))))


def _find_in_slide(
    pptx_path: str,
    slide_index: int,
    find_target: Callable[[zipfile.ZipFile, set[str], int], str | None],
) -> EmbeddedPart | LinkedFile | None:
    """What ``find_target`` names in the slide, resolved; None where OSWorld raises or finds none."""
    try:
        with zipfile.ZipFile(pptx_path) as pptx:
            names = set(pptx.namelist())
            target = find_target(pptx, names, slide_index)
            return None if target is None else _resolve(pptx, names, target)
    except (zipfile.BadZipFile, ElementTree.ParseError, OSError):
        return None


def slide_background(pptx_path: str, slide_index: int) -> EmbeddedPart | LinkedFile | None:
    """The background picture of slide ``slide_index`` (0-based) of a local pptx, as OSWorld finds it.

    None when there is none, and wherever OSWorld's getter raises instead: no pptx, a
    ``../`` target naming a missing part, a target neither ``../`` nor ``file://``.
    """
    return _find_in_slide(pptx_path, slide_index, _background_target)


def slide_audio(pptx_path: str, slide_index: int) -> EmbeddedPart | LinkedFile | None:
    """The sound of slide ``slide_index`` (0-based) of a local pptx, as OSWorld's ``audio_in_slide`` finds it.

    Only the slide's relationships are read (not its XML): the first whose ``Type``
    contains ``audio``. None when there is none and wherever OSWorld raises.
    """
    return _find_in_slide(pptx_path, slide_index, _sound_target)


def _fetch(
    desktop: Desktop, context: TaskContext, found: EmbeddedPart | LinkedFile | None, dest: Any
) -> str | None:
    """The found file as a local path, else None.

    An embedded part is extracted to ``<work_dir>/<part>`` (OSWorld ignores ``dest``
    there), a linked file copied from the desktop to ``<work_dir>/<dest>``.
    """
    if isinstance(found, EmbeddedPart):
        return save_result(context, found.part, found.data)
    if isinstance(found, LinkedFile):
        return vm_file(desktop, context, {"path": found.path, "dest": dest})
    return None


def _local_pptx(desktop: Desktop, context: TaskContext, config: Mapping[str, Any]) -> str | None:
    """The task's pptx copied from the desktop under its own name, as OSWorld copies it."""
    ppt_path = str(config["ppt_file_path"])
    return vm_file(desktop, context, {"path": ppt_path, "dest": PurePosixPath(ppt_path).name})


@register_getter("background_image_in_slide")
def background_image_in_slide(
    desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /
) -> str | None:
    """The background picture of slide ``slide_index`` of ``ppt_file_path``, as a local file.

    The pptx is copied from the desktop; an embedded picture is then extracted to
    ``<work_dir>/ppt/media/...`` (OSWorld extracts it beside the copied pptx and ignores
    ``dest``), a linked one copied from the desktop to ``<work_dir>/<dest>``. None (a 0)
    without a pptx or a background picture (:func:`slide_background`).
    """
    local = _local_pptx(desktop, context, config)
    found = None if local is None else slide_background(local, int(config["slide_index"]))
    return _fetch(desktop, context, found, config["dest"])


@register_getter("audio_in_slide")
def audio_in_slide(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> str | None:
    """The sound of slide ``slide_index`` of ``ppt_file_path``, as a local file.

    As :func:`background_image_in_slide`: an embedded sound extracted to
    ``<work_dir>/ppt/media/...``, a linked one copied to ``<work_dir>/<dest>``, None (a 0)
    without a pptx or a sound (:func:`slide_audio`).
    """
    local = _local_pptx(desktop, context, config)
    found = None if local is None else slide_audio(local, int(config["slide_index"]))
    return _fetch(desktop, context, found, config["dest"])

"""The graphical zoom's geometry: the enlarged crop the env shows, and its way back to the screen.

A ``zoom`` (:data:`osworld_mcp_env.actions.ZOOM`) emits no input: the env crops the
region from a fresh capture of the screen and enlarges it by an integer factor, each
screen pixel becoming a ``scale`` x ``scale`` block (nearest neighbour: nothing is
invented between pixels, and every pixel of the zoomed image shows exactly one screen
pixel). The enlarged crop sits at the top left of an image of the screen's size, the
rest black, because the observation space has one fixed shape.

Both directions live here, so that the image the env builds and the mapping an agent
applies to a point read on it cannot drift apart: :func:`zoom_image` forward,
:meth:`ZoomView.to_screen` back. The guest never sees any of it (standard library and
numpy only).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

Region = tuple[int, int, int, int]  # (x1, y1, x2, y2): the top-left and bottom-right pixels, both included


@dataclass(frozen=True)
class ZoomView:
    """What a zoomed observation shows: ``info["zoom"]`` as a value.

    Attributes:
        region: The screen pixels shown, ``(x1, y1, x2, y2)``, both corners included.
        scale: The integer enlargement.
        parent_frame_id: The frame the crop was taken from (the step's own capture):
            a coordinate read on the zoomed image is guarded against its layout.
    """

    region: Region
    scale: int
    parent_frame_id: int

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)`` of the enlarged crop inside the zoomed image."""
        x1, y1, x2, y2 = self.region
        return ((x2 - x1 + 1) * self.scale, (y2 - y1 + 1) * self.scale)

    def to_screen(self, point: tuple[int, int]) -> tuple[int, int] | None:
        """The screen pixel a pixel of the zoomed image shows; None on the black margin.

        Pixel ``zx`` of the image shows screen pixel ``x1 + zx // scale`` (floor: the
        ``scale`` image pixels of one block all show the same screen pixel).
        """
        zx, zy = point
        width, height = self.size
        if not (0 <= zx < width and 0 <= zy < height):
            return None
        return (self.region[0] + zx // self.scale, self.region[1] + zy // self.scale)

    def to_info(self) -> dict[str, Any]:
        """The JSON form of ``info["zoom"]``."""
        return {
            "region": list(self.region),
            "scale": self.scale,
            "parent_frame_id": self.parent_frame_id,
            "size": list(self.size),
        }

    @classmethod
    def from_info(cls, report: Mapping[str, Any]) -> ZoomView:
        """Reads ``info["zoom"]`` back."""
        x1, y1, x2, y2 = (int(v) for v in report["region"])
        return cls((x1, y1, x2, y2), int(report["scale"]), int(report["parent_frame_id"]))


def zoom_image(pixels: np.ndarray, region: Region, scale: int) -> np.ndarray:
    """The screen-sized image showing ``region`` of ``pixels`` enlarged ``scale`` times at its top left.

    Args:
        pixels: The screen, uint8 (H, W, 3).
        region: ``(x1, y1, x2, y2)``, both corners included, inside the screen.
        scale: Integer factor; the enlarged crop must fit the screen (the validator's check).

    Returns:
        A new uint8 array of ``pixels``' shape; black outside the enlarged crop.
    """
    x1, y1, x2, y2 = region
    crop = pixels[y1 : y2 + 1, x1 : x2 + 1]
    enlarged = crop.repeat(scale, axis=0).repeat(scale, axis=1)
    out = np.zeros_like(pixels)
    out[: enlarged.shape[0], : enlarged.shape[1]] = enlarged
    return out


__all__ = ["Region", "ZoomView", "zoom_image"]

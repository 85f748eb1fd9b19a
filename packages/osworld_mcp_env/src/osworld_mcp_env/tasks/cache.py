"""Local file cache that stands in for the internet in ``download`` and ``cloud_file``.

OSWorld downloads each ``url`` on the host into ``cache/<task_id>/<uuid5(url)>_<basename>``.
Here nothing is downloaded: :class:`FileCache` looks the url up in one or more
local directories, accepting these layouts (tried in this order, per root):

1. OSWorld's: ``<root>/<task_id>/<uuid5(NAMESPACE_URL, url)>_<basename>``, where the
   basename is the destination's (OSWorld names it after the guest path) or the url's.
2. Per task, by name: ``<root>/<task_id>/<dest or basename>``.
3. A mirror of the url: ``<root>/<path after /resolve/main/>`` for Hugging Face
   dataset urls (the layout of ``xlangai/ubuntu_osworld_file_cache``), else
   ``<root>/<host>/<url path>``.
4. Flat, url-keyed: ``<root>/<uuid5(url)>_<basename>``.
5. Flat, by name: ``<root>/<basename>``.

A miss raises with the url, the task and every path tried. A candidate that would
lie outside its root (a ``..`` in the url's path, the task id or a name) is never
looked at: a task file cannot make the setup copy a host file into the desktop.
"""

from __future__ import annotations

import urllib.parse
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from osworld_mcp_env.errors import SetupStepError


class CacheMiss(SetupStepError):
    """A url is not in the local cache; ``tried`` lists every path looked at."""

    def __init__(self, url: str, task_id: str, tried: Sequence[Path]) -> None:
        listing = "\n".join(f"  - {p}" for p in tried)
        super().__init__(
            f"File for url {url!r} (task {task_id!r}) is not in the local cache; nothing is downloaded. "
            f"Put it at one of these paths:\n{listing}"
        )
        self.url = url
        self.task_id = task_id
        self.tried = tuple(tried)


def url_basename(url: str) -> str:
    """The last path segment of ``url``, percent-decoded."""
    return urllib.parse.unquote(PurePosixPath(urllib.parse.urlsplit(url).path).name)


def osworld_cache_name(url: str, basename: str) -> str:
    """OSWorld's cache file name: ``<uuid5(NAMESPACE_URL, url)>_<basename>``."""
    return f"{uuid.uuid5(uuid.NAMESPACE_URL, url)}_{basename}"


def url_mirror_path(url: str) -> PurePosixPath:
    """The relative path of ``url`` in a mirror layout (see the module docstring, layout 3)."""
    parts = urllib.parse.urlsplit(url)
    path = urllib.parse.unquote(parts.path).lstrip("/")
    marker = "/resolve/main/"
    if marker in "/" + path:
        return PurePosixPath(("/" + path).split(marker, 1)[1])
    return PurePosixPath(parts.netloc) / path


@dataclass(frozen=True)
class FileCache:
    """Read-only lookup of url contents in local directories.

    Attributes:
        roots: Cache directories, searched in order.
    """

    roots: tuple[Path, ...]

    def candidates(self, url: str, task_id: str, dest_name: str | None = None) -> list[Path]:
        """Every path inside a root where ``url`` may lie, in lookup order, without duplicates."""
        names = [n for n in (dest_name, url_basename(url)) if n]
        rel: list[PurePosixPath] = []
        rel += [PurePosixPath(task_id, osworld_cache_name(url, n)) for n in names]
        rel += [PurePosixPath(task_id, n) for n in names]
        rel.append(url_mirror_path(url))
        rel += [PurePosixPath(osworld_cache_name(url, n)) for n in names]
        rel += [PurePosixPath(n) for n in names]
        inside = [r for r in rel if r.parts and ".." not in r.parts and not r.is_absolute()]
        return list(dict.fromkeys(root / r for root in self.roots for r in inside))  # first of each, in order

    def resolve(self, url: str, task_id: str, dest_name: str | None = None) -> Path:
        """Returns the cached file for ``url``.

        Args:
            url: The url named by the task.
            task_id: The task that asks for it (OSWorld caches per task).
            dest_name: The basename of the file's destination, when it differs from the url's.

        Raises:
            CacheMiss: The file is in none of the candidate paths.
        """
        tried = self.candidates(url, task_id, dest_name)
        for path in tried:
            if path.is_file():
                return path
        raise CacheMiss(url, task_id, tried)

    def store_path(self, url: str, task_id: str) -> Path:
        """Where :meth:`resolve` finds ``url`` first when it is written there (OSWorld's layout)."""
        if not self.roots:
            raise SetupStepError("The file cache has no root directory to write to.")
        return self.roots[0] / task_id / osworld_cache_name(url, url_basename(url))

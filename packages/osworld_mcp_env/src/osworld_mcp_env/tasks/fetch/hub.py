"""Hugging Face Hub files for the file cache, through ``huggingface_hub`` (the ``fetch`` extra).

OSWorld's task files live in the dataset ``xlangai/ubuntu_osworld_file_cache`` and
are named by ``https://huggingface.co/datasets/<repo>/resolve/<revision>/<path>`` urls.
Going through ``huggingface_hub`` rather than a plain GET gives what users of the Hub
rely on: ``HF_ENDPOINT`` mirrors, ``HF_TOKEN`` for gated or private repos, redirects to
the storage backend, resumable partial downloads (``.incomplete`` files kept under
``<root>/.cache/huggingface/``) and a size check. On top of it every file is checked
against the Hub's ETag: the SHA-256 of an LFS file, the git blob id of any other.

``huggingface_hub`` is imported lazily, so the env installs and runs without it; a
Hub url then fails with the install command.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from osworld_mcp_env.errors import FetchError
from osworld_mcp_env.tasks.fetch.files import file_digests

HUB_HOST = "huggingface.co"
_RESOLVE = re.compile(
    r"^/(?:(?P<kind>datasets|spaces)/)?(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$"
)
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_GIT_SHA1 = re.compile(r"^[0-9a-f]{40}$")
INSTALL_HINT = "huggingface_hub is not installed: pip install 'osworld-mcp-env[fetch]'"


@dataclass(frozen=True)
class HubFile:
    """One file of a Hub repository, as a ``/resolve/`` url names it.

    Attributes:
        repo_type: ``model``, ``dataset`` or ``space``.
        repo_id: ``<namespace>/<name>``.
        revision: Branch, tag or commit.
        filename: Path inside the repository.
    """

    repo_type: str
    repo_id: str
    revision: str
    filename: str


def parse_hub_url(url: str) -> HubFile | None:
    """The Hub file a ``https://huggingface.co/.../resolve/...`` url names; None for any other url."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "https" or parts.netloc != HUB_HOST or parts.query:
        return None
    match = _RESOLVE.match(parts.path)
    if match is None:
        return None
    kind = {"datasets": "dataset", "spaces": "space"}.get(match["kind"] or "", "model")
    filename = urllib.parse.unquote(match["file"])
    if ".." in PurePosixPath(filename).parts:
        return None
    return HubFile(kind, match["repo"], urllib.parse.unquote(match["rev"]), filename)


@dataclass(frozen=True)
class HubMetadata:
    """What the Hub says of a file before it is downloaded.

    Attributes:
        size: Bytes, when announced.
        etag: SHA-256 (LFS) or git blob id, without quotes.
        commit: The commit the revision resolved to.
    """

    size: int | None
    etag: str | None
    commit: str | None


def _hub() -> tuple[Any, tuple[type[BaseException], ...]]:
    """The ``huggingface_hub`` module and the exceptions its downloads raise.

    Its HTTP client changed across versions (requests, httpx, httpx2); the client's
    base error is always a base class of ``HfHubHTTPError``, so it is taken from there.
    """
    try:
        import huggingface_hub
        from huggingface_hub.errors import HfHubHTTPError
    except ImportError:
        raise FetchError(INSTALL_HINT) from None
    http_error = HfHubHTTPError
    return huggingface_hub, (OSError, ValueError, http_error, *http_error.__bases__)


def _reason(exc: BaseException) -> str:
    """A short reason for a failed Hub request: the status code first where there is one."""
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"HTTP {status}: {first_line}" if status else f"{type(exc).__name__}: {first_line}"


def hub_metadata(ref: HubFile, *, endpoint: str | None, token: str | None, timeout_s: float) -> HubMetadata:
    """Asks the Hub (or the ``endpoint`` mirror) for the file's size, ETag and commit.

    Raises:
        FetchError: Not installed, not found, refused or unreachable.
    """
    hub, errors = _hub()
    url = hub.hf_hub_url(
        ref.repo_id, ref.filename, repo_type=ref.repo_type, revision=ref.revision, endpoint=endpoint
    )
    try:
        meta = hub.get_hf_file_metadata(url, token=token, timeout=timeout_s, endpoint=endpoint)
    except errors as exc:
        raise FetchError(_reason(exc)) from None
    return HubMetadata(meta.size, meta.etag, meta.commit_hash)


def verify(path: Path, meta: HubMetadata) -> tuple[int, str]:
    """Checks a downloaded file against the Hub's size and ETag; returns ``(size, sha256)``.

    Raises:
        FetchError: The size or the checksum differs (the file is removed).
    """
    size, sha256, blob = file_digests(path)
    problem = ""
    if meta.size is not None and size != meta.size:
        problem = f"size {size}, the Hub says {meta.size}"
    elif meta.etag and _SHA256.match(meta.etag) and sha256 != meta.etag:
        problem = f"sha256 {sha256}, the Hub says {meta.etag}"
    elif meta.etag and _GIT_SHA1.match(meta.etag) and blob != meta.etag:
        problem = f"git blob {blob}, the Hub says {meta.etag}"
    if problem:
        path.unlink(missing_ok=True)
        raise FetchError(f"checksum mismatch: {problem}")
    return size, sha256


def hub_download(
    ref: HubFile, local_dir: Path, *, endpoint: str | None, token: str | None, timeout_s: float
) -> tuple[HubMetadata, int, str]:
    """Downloads ``ref`` to ``local_dir / ref.filename`` (resuming a partial download) and verifies it.

    Returns:
        The Hub's metadata, the file's size and its SHA-256.

    The revision is pinned to the commit the metadata request resolved, so the file
    and its ETag come from one commit even when the branch moves meanwhile.

    Raises:
        FetchError: The reason, in a few words.
    """
    hub, errors = _hub()
    meta = hub_metadata(ref, endpoint=endpoint, token=token, timeout_s=timeout_s)
    try:
        path = hub.hf_hub_download(
            ref.repo_id,
            ref.filename,
            repo_type=ref.repo_type,
            revision=meta.commit or ref.revision,
            local_dir=local_dir,
            cache_dir=local_dir / ".cache" / "huggingface" / "hub",
            endpoint=endpoint,
            token=token,
            etag_timeout=timeout_s,
        )
    except errors as exc:
        raise FetchError(_reason(exc)) from None
    size, sha256 = verify(Path(path), meta)
    return meta, size, sha256

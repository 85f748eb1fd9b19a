"""Plain HTTP(S) downloads for the file cache: a size limit, timeouts, a checksum, no partial files.

``urllib`` from the standard library is enough here: one GET per file, redirects
followed (http and https only), the body streamed to a temporary file and hashed on
the way. A body longer than ``max_bytes`` (by its ``Content-Length`` or as it
arrives), a body shorter than its ``Content-Length``, a socket idle past
``timeout_s`` or a file that takes longer than ``deadline_s`` in all each fail with a
:class:`~osworld_mcp_env.errors.FetchError` that says which, and leave nothing behind.
"""

from __future__ import annotations

import hashlib
import http.client
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from osworld_mcp_env.errors import FetchError
from osworld_mcp_env.tasks.fetch.files import CHUNK, atomic_writer

USER_AGENT = "osworld-mcp-fetch/1"


@dataclass(frozen=True)
class Downloaded:
    """What one download wrote.

    Attributes:
        size: Bytes written.
        sha256: Their SHA-256, hex.
    """

    size: int
    sha256: str


def _check_scheme(url: str) -> None:
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme not in ("http", "https"):
        raise FetchError(f"only http and https urls are fetched, got {scheme or 'no'} scheme")


def _open(url: str, method: str, timeout_s: float) -> http.client.HTTPResponse:
    request = urllib.request.Request(
        url, method=method, headers={"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
    )
    try:
        response: http.client.HTTPResponse = urllib.request.urlopen(request, timeout=timeout_s)
    except urllib.error.HTTPError as exc:
        exc.close()
        raise FetchError(f"HTTP {exc.code} {exc.reason}") from None
    except TimeoutError:
        raise FetchError(f"no answer within {timeout_s:g} s") from None
    except urllib.error.URLError as exc:
        reason = "timed out" if isinstance(exc.reason, TimeoutError) else exc.reason
        raise FetchError(f"cannot connect: {reason}") from None
    return response


def content_length(response: http.client.HTTPResponse) -> int | None:
    """The announced body size, or None when absent or unreadable."""
    value = response.headers.get("Content-Length")
    return int(value) if value is not None and value.isdigit() else None


def head_size(url: str, timeout_s: float) -> int | None:
    """The size a HEAD request announces (for ``--dry-run``); None when the server does not say.

    Raises:
        FetchError: The url is not http(s), or the server answered an error or nothing.
    """
    _check_scheme(url)
    with _open(url, "HEAD", timeout_s) as response:
        return content_length(response)


def download(
    url: str,
    target: Path,
    *,
    max_bytes: int,
    timeout_s: float,
    deadline_s: float,
    progress: Callable[[int], None] = lambda n: None,
) -> Downloaded:
    """Downloads ``url`` into ``target`` (replaced only when the whole body arrived).

    Args:
        url: An http or https url.
        target: The cache file to write.
        max_bytes: The largest body accepted.
        timeout_s: How long the connection may stay silent (connect, each read).
        deadline_s: How long the whole download may take.
        progress: Called with each chunk's byte count.

    Raises:
        FetchError: The reason, in a few words; ``target`` is untouched.
    """
    _check_scheme(url)
    end = time.monotonic() + deadline_s
    with _open(url, "GET", timeout_s) as response:
        expected = content_length(response)
        if expected is not None and expected > max_bytes:
            raise FetchError(f"{expected} bytes announced, over the {max_bytes}-byte limit")
        digest, size = hashlib.sha256(), 0
        with atomic_writer(target) as out:
            while True:
                try:
                    chunk = response.read(CHUNK)
                except TimeoutError:
                    raise FetchError(
                        f"the server sent nothing for {timeout_s:g} s ({size} bytes read)"
                    ) from None
                except http.client.IncompleteRead as exc:
                    raise FetchError(f"truncated: {size + len(exc.partial)} of {expected} bytes") from None
                except (http.client.HTTPException, OSError) as exc:
                    raise FetchError(f"connection lost after {size} bytes: {exc}") from None
                if not chunk:
                    break
                size += len(chunk)
                if size > max_bytes:
                    raise FetchError(f"body passed the {max_bytes}-byte limit")
                if time.monotonic() > end:
                    raise FetchError(f"not finished within {deadline_s:g} s ({size} bytes read)")
                digest.update(chunk)
                out.write(chunk)
                progress(len(chunk))
            if expected is not None and size != expected:
                raise FetchError(f"truncated: {size} of {expected} bytes")
    return Downloaded(size, digest.hexdigest())

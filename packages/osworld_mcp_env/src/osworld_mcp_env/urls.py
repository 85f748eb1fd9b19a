"""OSWorld's url equality (``compare_urls``), shared by the Chromium setup steps and metrics.

OSWorld normalises both urls with ``tldextract`` (the public-suffix list) and then
compares them whole: the scheme is kept, a missing scheme means ``http``, the port
and user info are dropped, a lone ``www`` subdomain is dropped, the public suffix is
dropped (``airbnb.com`` equals ``airbnb.com.sg``), a path of ``/`` is empty, and
(``full``) params, query and fragment count.

Deviation: without the public-suffix list here (no network, no new dependency), the
suffix is the last label, or the last two where the second-to-last is a generic
second-level label (``co``, ``com``, ``org``, ... before a two-letter country code).
Hosts that are an IP address, a single label (``localhost``) or under a reserved
name (``.local``, ``.test``, ...) have no suffix, as in the list.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import ParseResult, urlparse, urlunparse

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+\-.]*://")
_SECOND_LEVEL = frozenset({"co", "com", "org", "net", "ac", "gov", "edu", "or", "ne", "go"})
_NOT_PUBLIC = frozenset({"local", "localhost", "test", "invalid", "example", "internal", "lan", "home"})


def _host_without_suffix(netloc: str) -> str:
    host = netloc.rpartition("@")[2]
    host = host[1 : host.index("]")] if host.startswith("[") and "]" in host else host.partition(":")[0]
    host = host.strip(".")
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    labels = host.split(".") if host else []
    if len(labels) < 2 or labels[-1] in _NOT_PUBLIC:
        kept = labels
    elif len(labels) >= 3 and labels[-2] in _SECOND_LEVEL and len(labels[-1]) == 2:
        kept = labels[:-2]
    else:
        kept = labels[:-1]
    if len(kept) == 2 and kept[0] == "www":
        kept = kept[1:]
    return ".".join(kept)


def normalize_url(url: str, *, full: bool = True) -> str:
    """The form in which OSWorld compares urls (see the module docstring)."""
    parsed = urlparse(url if _SCHEME.match(url) else f"http://{url}")
    return urlunparse(
        ParseResult(
            scheme=parsed.scheme.lower(),
            netloc=_host_without_suffix(parsed.netloc.lower()),
            path=parsed.path if parsed.path != "/" else "",
            params=parsed.params if full else "",
            query=parsed.query if full else "",
            fragment=parsed.fragment if full else "",
        )
    )


def compare_urls(url1: str | None, url2: str | None, *, full: bool = True) -> bool:
    """OSWorld's ``compare_urls``: equal after :func:`normalize_url`; None equals only None."""
    if url1 is None or url2 is None:
        return url1 == url2
    return normalize_url(url1, full=full) == normalize_url(url2, full=full)

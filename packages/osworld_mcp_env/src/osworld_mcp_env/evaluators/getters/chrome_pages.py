"""Chromium getters that read web pages: the shown tab's url parts and elements, and pages loaded anew.

The shown tab is found as OSWorld finds it: its address bar text with
``goto_prefix`` before it (:func:`~osworld_mcp_env.evaluators.getters.chrome.active_url`),
then the open tab whose url equals that, percent-decoded and without trailing
slashes. A site whose host has no ``www.`` thus matches no tab under the usual
``goto_prefix`` of ``https://www.``, and the getter answers ``{}`` there as well.

Elements are read in the page over DevTools (:func:`osworld_mcp_env.devtools.evaluate_in`)
with Playwright's meaning of each read: ``text_content()`` is ``textContent``,
``inner_text()`` is ``innerText``, ``input_value()`` is ``value``; CSS selectors
also match inside open shadow roots, as Playwright's do. Whatever the page does,
a read that fails reads as no element, as OSWorld's ``safely_*`` helpers do.

``page_info`` and ``pdf_from_url`` load their url in a fresh browser context, as
Playwright's ``browser.new_page()`` does: without the profile's cookies.
"""

from __future__ import annotations

import itertools
import json
import logging
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from osworld_mcp_env import devtools
from osworld_mcp_env.backends.base import Desktop
from osworld_mcp_env.devtools import Tab
from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators.getters.chrome import DEVTOOLS_WAIT_S, PAGE_LOAD_S, active_url
from osworld_mcp_env.evaluators.getters.files import save_result
from osworld_mcp_env.evaluators.registry import register_getter
from osworld_mcp_env.tasks.context import TaskContext

logger = logging.getLogger(__name__)

# How long a page loaded anew may take (OSWorld's Playwright timeout: 60 s).
VISIT_LOAD_S = 60.0
EMPTY_PDF = b"%PDF-1.4\n%EOF\n"
"""What OSWorld writes when ``pdf_from_url`` cannot print the page."""

# Runs in the page: one list of reads per query, or null for a selector the page refuses.
_READ_ELEMENTS = """(() => {
  const queries = %s;
  let all = null;
  const deep = (root, out) => {
    for (const el of root.querySelectorAll("*")) {
      out.push(el);
      if (el.shadowRoot) deep(el.shadowRoot, out);
    }
    return out;
  };
  const find = (q) => {
    if (q.xpath) {
      const r = document.evaluate(q.selector, document, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null);
      return Array.from({length: r.snapshotLength}, (_, i) => r.snapshotItem(i));
    }
    all = all || deep(document, []);
    return all.filter((el) => el.matches(q.selector));
  };
  const inner = (el, tag, how) => {
    const child = el.querySelector(tag);
    return child ? (how === "inner" ? child.innerText : child.textContent) : null;
  };
  const read = {
    text: (el) => el.textContent,
    direct: (el) => Array.from(el.childNodes).filter((n) => n.nodeType === Node.TEXT_NODE)
      .map((n) => n.textContent.trim()).filter(Boolean),
    h3: (el) => inner(el, "h3", "text"),
    span: (el) => inner(el, "span", "inner"),
    value: (el) => (typeof el.value === "string" ? el.value : null),
  };
  return JSON.stringify(queries.map((q) => {
    try { return find(q).map(read[q.read]); } catch (e) { return null; }
  }));
})()"""


def _normalized(url: str) -> str:
    return urllib.parse.unquote(url).rstrip("/")


def _target(desktop: Desktop, config: Mapping[str, Any]) -> tuple[str, Tab | None] | None:
    """(the active url as OSWorld reads it, the open tab with that url or None); None: no shown tab."""
    found = active_url(desktop, config)
    if found is None:
        return None
    url, open_tabs = found
    match = next((t for t in open_tabs if _normalized(t.url) == _normalized(url)), None)
    return url, match


def read_elements(desktop: Desktop, tab: Tab, queries: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    """For each query ``{selector, xpath, read}``, what ``read`` gives for each element it finds.

    A query the page could not run, or a page that did not answer, gives ``[]``.
    """
    value = devtools.evaluate_in(desktop, tab.id, _READ_ELEMENTS % json.dumps(list(queries)))
    try:
        answer = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        answer = None
    if not isinstance(answer, list) or len(answer) != len(queries):
        return [[] for _ in queries]
    return [found if isinstance(found, list) else [] for found in answer]


def _texts(found: list[Any], *, strip: bool = True) -> list[str]:
    """The string reads (a missing child reads as no element, as OSWorld's list comprehensions skip it)."""
    return [f.strip() if strip else f for f in found if isinstance(f, str)]


def _at(texts: Sequence[Any], index: Any) -> Any:
    position = int(index)
    return texts[position] if len(texts) > position else ""


def html_parse_queries(config: Mapping[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """The element reads a config asks for: ``(config key, name in it, query)``, in OSWorld's order."""
    category = config.get("category")
    reads: list[tuple[str, str, dict[str, Any]]] = []

    def css(key: str, read: str, suffix: str = "") -> None:
        for name in config.get(key, {}):
            reads.append((key, name, {"selector": f".{name}{suffix}", "xpath": False, "read": read}))

    if category == "class":
        css("class_multiObject", "text")
        css("class_multiObject_child", "direct")
        css("class_multiObject_only_child", "h3")
        css("class_multiObject_search_exist", "text")
        css("class_singleObject", "text")
    elif category in ("xpath", "input"):
        key = "xpathObject" if category == "xpath" else "inputObject"
        for xpath in config.get(key, {}):
            reads.append(
                (
                    key,
                    xpath,
                    {"selector": xpath, "xpath": True, "read": "text" if category == "xpath" else "value"},
                )
            )
    elif category == "class&url":
        css("class_multiObject", "text")
        css("class_multiObject_li", "span", " li.catAllProducts")
    elif category == "label":
        raise EvaluationError(
            "active_tab_html_parse: category 'label' (Playwright's text= selector) is not implemented"
        )
    return reads


def html_parse_result(config: Mapping[str, Any], page_url: str, found: Sequence[list[Any]]) -> dict[str, Any]:
    """OSWorld's ``active_tab_html_parse`` answer from the reads of :func:`html_parse_queries`."""
    out: dict[str, Any] = {}
    category = config.get("category")
    for (key, name, _query), raw in zip(html_parse_queries(config), found, strict=True):
        spec = config[key][name]
        if key in ("class_multiObject", "class_multiObject_only_child") and category == "class":
            texts = _texts(raw)
            for index, field in spec.items():
                out[field] = _at(texts, index)
        elif key == "class_multiObject_child":
            # OSWorld keeps the direct text nodes of the first element only.
            first = raw[0] if raw and isinstance(raw[0], list) else []
            for index, field in spec.items():
                out[field] = _at(_texts(first, strip=False), index)
        elif key == "class_multiObject_search_exist":
            texts = _texts(raw)
            for wanted in spec:
                if wanted != "is_other_exist":
                    out[wanted] = wanted in texts
            if "is_other_exist" in spec:
                out["is_other_exist"] = out.get("is_other_exist", False) or any(t not in spec for t in texts)
        elif key == "class_singleObject":
            texts = _texts(raw)
            out[spec] = texts[0] if texts else ""
        elif key in ("xpathObject", "inputObject"):
            match = raw[0] if raw else None
            out[spec] = match.strip() if isinstance(match, str) else ""
        else:  # class&url: class_multiObject, class_multiObject_li
            texts = _texts(raw)
            for wanted in spec:
                if any(wanted.lower() == t.lower() for t in texts):
                    out[wanted.lower()] = True
            other = any(all(t.lower() not in item.lower() for item in spec) for t in texts)
            out["is_other_exist"] = out.get("is_other_exist", False) or other
    if category == "class&url":
        url = page_url.lower()
        for wanted in config.get("url_include_expected", []):
            out.setdefault(wanted.lower(), wanted.lower() in url)
        for part, field in config.get("url_include_expected_multichoice", {}).items():
            out.setdefault(field.lower(), part.lower() in url)
    return out


@register_getter("active_tab_html_parse")
def active_tab_html_parse(
    desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /
) -> dict[str, Any] | None:
    """Texts, input values and flags of the shown tab's elements, keyed as the config names them.

    ``category`` picks the reads: ``class`` (by class name: the n-th element's text,
    the first element's own text nodes, the n-th ``h3``, which names are present),
    ``xpath`` (the first match's text), ``input`` (the first match's value) or
    ``class&url`` (names present among the elements and in the url). A missing
    element reads as ``""``. None when no tab is shown; ``{}`` when no open tab has
    the url OSWorld reads, or for a category OSWorld does not know.
    """
    target = _target(desktop, config)
    if target is None:
        return None
    _url, tab = target
    if tab is None:
        return {}
    queries = html_parse_queries(config)
    found = read_elements(desktop, tab, [q for _key, _name, q in queries]) if queries else []
    return html_parse_result(config, tab.url, found)


def url_query(url: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """OSWorld's ``active_tab_url_parse`` of ``url``: the first value of each ``parse_keys`` query key.

    A missing key reads as ``""``; ``replace`` renames keys (moving them last);
    ``split_list`` splits every value on commas.
    """
    params = urllib.parse.parse_qs(urllib.parse.urlparse(url).query)
    out: dict[str, Any] = {key: params.get(key, [""])[0] for key in config["parse_keys"]}
    for old, new in config.get("replace", {}).items():
        out[new] = out.pop(old)
    if config.get("split_list", False):
        out = {key: value.split(",") for key, value in out.items()}
    return out


@register_getter("active_tab_url_parse")
def active_tab_url_parse(
    desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /
) -> dict[str, Any] | None:
    """:func:`url_query` of the shown tab's url as OSWorld reads it; None when no tab is shown."""
    found = active_url(desktop, config)
    return url_query(found[0], config) if found else None


def url_dash_part(url: str, config: Mapping[str, Any]) -> Any:
    """OSWorld's ``url_dashPart``: the ``partIndex``-th ``/``-separated part of ``url``.

    ``needDeleteId`` drops its query; ``returnType`` ``string`` gives the part,
    ``json`` gives ``{key: part}``. None for an index past the end or an unknown type.
    """
    try:
        index = int(config["partIndex"])
    except (TypeError, ValueError):
        return None
    parts = url.split("/")
    if not -len(parts) <= index < len(parts):
        return None
    part = parts[index]
    if config.get("needDeleteId", False):
        part = part.split("?")[0]
    if config["returnType"] == "string":
        return part
    if config["returnType"] == "json":
        return {config["key"]: part}
    return None


@register_getter("url_dashPart")
def url_dashpart(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> Any:
    """:func:`url_dash_part` of the shown tab's url as OSWorld reads it; None when no tab is shown."""
    found = active_url(desktop, config)
    return url_dash_part(found[0], config) if found else None


_FIFTY_OFF = "50_PERCENT_ off & more"


def macys_path(url: str, parse_keys: Sequence[str]) -> dict[str, Any]:
    """OSWorld's ``url_path_parse`` (its Macy's product-listing reader) of ``url``.

    The path's first pair of comma lists (``a,b/x,y``) maps names to values; the
    answer flags ``mens_clothing``, ``shirts`` and ``short_sleeve`` (True or None)
    and gives each of ``parse_keys`` found in the pairs, the discount as whether it
    is 50 % or more and nothing smaller.
    """
    path = urllib.parse.unquote(urllib.parse.urlparse(url).path)
    parts = path.strip("/").split("/")
    pairs: dict[str, Any] = {}
    shirts, short_sleeve = "shirts" in path, "short-sleeve" in path
    for names, values in itertools.pairwise(parts):
        if "," in names and "," in values:
            for name, value in zip(
                (n.strip() for n in names.split(",")), (v.strip() for v in values.split(",")), strict=False
            ):
                if name == "Price_discount_range":
                    pairs[name] = [item.strip() for item in value.split("|")] if value else None
                else:
                    pairs[name] = value or None
                shirts = shirts or (name == "Product_department" and value in ("shirts", "Shirts", "Shirt"))
                short_sleeve = short_sleeve or (
                    name == "Sleeve_length" and value in ("short-sleeve", "Short Sleeve")
                )
            break
    for name in ("Men_regular_size_t", "Price_discount_range"):
        pairs.setdefault(name, None)
    out: dict[str, Any] = {
        "mens_clothing": True if "mens-clothing" in path else None,
        "shirts": True if shirts else None,
        "short_sleeve": True if short_sleeve else None,
    }
    for key in parse_keys:
        if key not in pairs:
            continue
        if key == "Price_discount_range":
            ranges = pairs[key] or []
            only_fifty = _FIFTY_OFF in ranges and not {
                "30_PERCENT_ off & more",
                "20_PERCENT_ off & more",
            } & set(ranges)
            out[key] = _FIFTY_OFF if only_fifty else "not_" + _FIFTY_OFF
        else:
            out[key] = pairs[key]
    return out


@register_getter("url_path_parse")
def url_path_parse(
    desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /
) -> dict[str, Any] | None:
    """:func:`macys_path` of the shown tab's url as OSWorld reads it; None when no tab is shown."""
    found = active_url(desktop, config)
    return macys_path(found[0], config["parse_keys"]) if found else None


@register_getter("page_info")
def page_info(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> dict[str, str]:
    """``{title, url, content}`` of ``url`` loaded in a fresh browser context.

    A page that fails to load (a network error, no Chromium) reads as OSWorld's
    ``{"title": "Connection failed", "url": url, "content": ""}``.
    """
    url = str(config["url"])
    page = devtools.visit(desktop, url, read="page", wait_s=DEVTOOLS_WAIT_S, load_s=VISIT_LOAD_S)
    if page is None or page.error:
        logger.warning("page_info: %s did not load: %s", url, page.error if page else "no Chromium")
        return {"title": "Connection failed", "url": url, "content": ""}
    return {"title": page.title, "url": page.url, "content": page.content}


@register_getter("pdf_from_url")
def pdf_from_url(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> str:
    """``path`` (a url) printed to PDF in a fresh browser context, saved as ``dest``; returns the file.

    A page that cannot be printed gives OSWorld's stand-in, an empty PDF.
    """
    url = str(config["path"])
    page = devtools.visit(desktop, url, read="pdf", wait_s=DEVTOOLS_WAIT_S, load_s=VISIT_LOAD_S)
    if page is None or page.pdf is None:
        logger.warning("pdf_from_url: %s was not printed: %s", url, page.error if page else "no Chromium")
        return save_result(context, str(config["dest"]), EMPTY_PDF)
    if not page.idle:
        logger.warning("pdf_from_url: %s printed before its network went quiet", url)
    return save_result(context, str(config["dest"]), page.pdf)


@register_getter("info_from_website")
def info_from_website(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> Any:
    """Texts and attributes read on ``url`` in a new tab (:func:`osworld_mcp_env.devtools.scrape`).

    When any read fails (no element within 10 s, a page that does not load, no
    Chromium) the answer is the config's ``backups``, as OSWorld's: the values the
    task's author read on the site.
    """
    values = devtools.scrape(
        desktop, str(config["url"]), config.get("infos", []), wait_s=DEVTOOLS_WAIT_S, load_s=VISIT_LOAD_S
    )
    return config.get("backups") if values is None else values


__all__ = [
    "PAGE_LOAD_S",
    "html_parse_queries",
    "html_parse_result",
    "macys_path",
    "url_dash_part",
    "url_query",
]

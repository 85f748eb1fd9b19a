"""History, cookie, cart and desktop-shortcut metrics on hand-made getter rows, with OSWorld's verdicts."""

from __future__ import annotations

import pytest
from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators import METRICS, ZeroScore

history_deleted = METRICS.get("check_history_deleted").fn
cookie_deleted = METRICS.get("is_cookie_deleted").fn
steam_cart = METRICS.get("is_added_to_steam_cart").fn
shortcut = METRICS.get("is_shortcut_on_desktop").fn

# Rows as Chromium's History database gives them: (url, title, last_visit_time).
HISTORY = [
    ("https://www.wikipedia.org/", "Wikipedia", 13350000000000000),
    ("https://news.ycombinator.com/item?id=1", "HN", 13350000000000001),
]


def test_history_passes_only_when_no_url_holds_a_keyword():
    rule = {"type": "keywords", "keywords": ["youtube"]}
    assert history_deleted(HISTORY, rule) == 1.0
    with_youtube = [*HISTORY, ("https://www.youtube.com/watch?v=x", "video", 1)]
    assert history_deleted(with_youtube, rule) == 0.0
    # A case-sensitive substring of the url: the title does not count, "YouTube" in a url does not match.
    assert history_deleted([("https://example.org/", "youtube fan page", 1)], rule) == 1.0
    assert history_deleted([("https://YouTube.com/", "", 1)], rule) == 1.0
    assert history_deleted([], rule) == 1.0  # an emptied history


def test_history_rule_type_and_missing_rows():
    with pytest.raises(EvaluationError, match="keywords"):
        history_deleted(HISTORY, {"type": "urls", "urls": []})
    with pytest.raises(ZeroScore, match="OSWorld raises"):
        history_deleted(None, {"type": "keywords", "keywords": ["x"]})


def cookie(host: str) -> tuple[object, ...]:
    # Chromium's cookies table: creation_utc, host_key, top_frame_site_key, name, value, ...
    return (13350000000000000, host, "", "session-id", "v")


def test_cookie_hosts_compare_as_osworld_compares_urls():
    rule = {"type": "domains", "domains": [".amazon.com"]}
    assert cookie_deleted([cookie(".google.com"), cookie("github.com")], rule) == 1.0
    for host in (".amazon.com", "amazon.com", "www.amazon.com"):
        assert cookie_deleted([cookie(".google.com"), cookie(host)], rule) == 0.0, host
    # Another subdomain is another site for compare_urls.
    assert cookie_deleted([cookie("smile.amazon.com")], rule) == 1.0
    with pytest.raises(EvaluationError):
        cookie_deleted([], {"type": "names", "names": ["x"]})


def test_steam_cart_needs_every_item_in_the_page_text():
    rule = {"items": ["The Dota 2 Official Soundtrack"]}
    page = {"title": "Shopping Cart", "url": "https://store.steampowered.com/cart/"}
    assert steam_cart({**page, "content": "Your cart: The Dota 2 Official Soundtrack $9.99"}, rule) == 1.0
    assert steam_cart({**page, "content": "Your cart is empty."}, rule) == 0.0
    assert (
        steam_cart(
            {**page, "content": "The Dota 2 Official Soundtrack"}, {"items": ["The Dota", "Half-Life"]}
        )
        == 0.0
    )
    with pytest.raises(ZeroScore):
        steam_cart(page, rule)  # no content: OSWorld's KeyError


def test_shortcut_needs_the_exact_name_line():
    rule = {"type": "name", "name": "Play Puzzle Game 2048"}
    launcher = (
        "[Desktop Entry]\nVersion=1.0\nName=Play Puzzle Game 2048\nExec=chromium --app=https://play2048.co/\n"
    )
    assert shortcut({"/home/user/Desktop/2048.desktop": launcher}, rule) == 1.0
    assert shortcut({"/home/user/Desktop/a.desktop": launcher.replace("2048\n", "2048 Pro\n")}, rule) == 0.0
    # The line must end: a name at the very end of the file without a newline does not count.
    assert (
        shortcut({"/home/user/Desktop/a.desktop": "[Desktop Entry]\nName=Play Puzzle Game 2048"}, rule) == 0.0
    )
    assert shortcut({}, rule) == 0.0
    with pytest.raises(EvaluationError):
        shortcut({}, {"type": "url", "url": "https://play2048.co/"})  # OSWorld: "not support yet"

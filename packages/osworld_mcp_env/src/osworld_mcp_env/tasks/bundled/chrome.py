"""Chromium templates: local pages opened in tabs, then a tab, a bookmark, a setting or a value.

Pages are seeded HTML files the setup uploads (no network); the setup starts
``google-chrome`` (Chromium with DevTools on 1337) and opens them with OSWorld's
``chrome_open_tabs`` step, which waits for each page's load, so the last page is the
active tab when the episode starts. Checks use OSWorld's Chromium getters: the active
tab over DevTools, the profile's ``Bookmarks`` and ``Preferences``. Chromium writes
those files a few seconds after a change, so the evaluator's postconfig first closes
Chromium's window (its normal exit writes them) and waits for it to exit,
as OSWorld's settings tasks ``pkill`` Chromium before reading the file.

The GUI oracles use keyboard shortcuts and, in Chromium's own dialogs, clicks at
the places Chromium 156 draws them on a maximized 1920x1080 window.
"""

from __future__ import annotations

import html
import random

from osworld_mcp_env.tasks.bundled.os import terminal_setup
from osworld_mcp_env.tasks.templates import (
    DONE,
    HOME,
    NAMES,
    WORDS,
    Call,
    Instance,
    gui,
    key,
    pick,
    register_template,
    task_dict,
    tool,
    type_text,
    wait,
)

PREFERENCES = f"{HOME}/.config/chromium/Default/Preferences"
# Chromium writes Bookmarks and Preferences seconds after a change; closing its window
# ends it the normal way, which writes them (SIGTERM lost a bookmark made just before).
FLUSH_PROFILE = [
    {"type": "close_window", "parameters": {"window_name": "chromium", "by_class": True}},
    {
        "type": "execute",
        "parameters": {
            "command": "for i in $(seq 150); do pgrep -x chromium >/dev/null || break; sleep 0.2; done",
            "shell": True,
        },
    },
]
# Chromium may take the focus back after the terminal's activate_window step (it maps
# its window late): poll until the terminal is the active window, asking while it is not.
FOCUS_TERMINAL = {
    "type": "execute",
    "parameters": {
        "command": "for i in $(seq 150); do xdotool getactivewindow getwindowname 2>/dev/null "
        "| grep -q Terminal && break; "
        "xdotool search --onlyvisible --class xfce4-terminal windowactivate 2>/dev/null; sleep 0.2; done",
        "shell": True,
    },
}
# The bookmark bubble's folder list and its "Done" button (Chromium 156, 1920x1080).
FOLDER_LIST = (1701, 208)
BOOKMARKS_BAR_ITEM = (1688, 247)
BUBBLE_DONE = (1768, 270)
PROFILE_NAME_FIELD = (816, 275)
TOPICS = ("Garden", "Budget", "Travel", "Recipes", "Cycling", "Physics", "Poetry", "Chess", "Pottery")


def page(title: str, paragraphs: list[str]) -> bytes:
    """A small HTML page whose ``<title>`` is ``title``."""
    body = "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head>"
        f"<body><h1>{html.escape(title)}</h1>{body}</body></html>"
    ).encode()


def site(rng: random.Random, n: int) -> tuple[str, list[str], list[str]]:
    """``n`` seeded pages in one folder: the folder, their titles and their ``file://`` urls."""
    folder = f"{HOME}/{rng.choice(('Sites', 'Pages', 'Saved', 'Offline'))}"
    titles = [
        f"{topic} {word.capitalize()}"
        for topic, word in zip(pick(rng, TOPICS, n), pick(rng, WORDS, n), strict=True)
    ]
    urls = [f"file://{folder}/{t.split()[1].lower()}_{i}.html" for i, t in enumerate(titles, 1)]
    return folder, titles, urls


def chrome_setup(urls: list[str]) -> list[dict]:
    """Start Chromium and open ``urls`` in tabs, the last one active."""
    return [
        {"type": "launch", "parameters": {"command": ["google-chrome"]}},
        {"type": "chrome_open_tabs", "parameters": {"urls_to_open": urls}},
    ]


def pages(titles: list[str], urls: list[str], rng: random.Random) -> dict[str, bytes]:
    """The uploaded page files, each with a seeded line of text."""
    return {
        u.removeprefix("file://"): page(t, [f"Notes by {rng.choice(NAMES)}, {rng.randint(2, 28)} May."])
        for t, u in zip(titles, urls, strict=True)
    }


def switch_to(index: int) -> Call:
    """GUI route to the ``index``-th tab (1-based): Ctrl+<index>."""
    return key("ctrl", str(index))


@register_template("chrome-switch-tab", "chrome", tools=True)
def switch_tab(rng: random.Random, task_id: str) -> Instance:
    """The tab with a given title becomes the active one (never the last, which is active at first)."""
    n = rng.randint(3, 5)
    _folder, titles, urls = site(rng, n)
    target, decoy = rng.sample(range(n - 1), 2)
    task = task_dict(
        task_id,
        "chrome",
        f'Several pages are open in Chromium. Switch to the tab titled "{titles[target]}".',
        chrome_setup(urls),
        {
            "func": "is_expected_active_tab",
            "result": {"type": "active_tab_info"},
            "expected": {"type": "rule", "rules": {"type": "url", "url": urls[target]}},
        },
        ["chrome"],
    )
    return Instance(
        task=task,
        inputs=pages(titles, urls, rng),
        gold={},
        gui=[switch_to(target + 1), DONE],
        tools=[tool("google_chrome.chrome_open_tabs_setup", url=urls[target]), DONE],
        near_miss=[switch_to(decoy + 1), DONE],
    )


def bookmark_to_bar(index: int) -> list[Call]:
    """GUI route: show the tab, Ctrl+D, pick "Bookmarks bar" in the bubble, Done."""
    return [
        switch_to(index),
        key("ctrl", "d"),
        gui("left_click", coordinate=list(FOLDER_LIST)),
        gui("left_click", coordinate=list(BOOKMARKS_BAR_ITEM)),
        gui("left_click", coordinate=list(BUBBLE_DONE)),
        DONE,
    ]


@register_template("chrome-bookmark-to-bar", "chrome", tools=False)
def bookmark_to_bar_task(rng: random.Random, task_id: str) -> Instance:
    """One of the open pages bookmarked on the bookmarks bar (the bar holds exactly it)."""
    n = rng.randint(2, 4)
    _folder, titles, urls = site(rng, n)
    target, decoy = rng.sample(range(n), 2)
    task = task_dict(
        task_id,
        "chrome",
        f'Bookmark the page "{titles[target]}", open in a Chromium tab, on the bookmarks bar.',
        chrome_setup(urls),
        {
            "func": "is_expected_bookmarks",
            "result": {"type": "bookmarks"},
            "expected": {
                "type": "rule",
                "rules": {"type": "bookmark_bar_websites_urls", "urls": [urls[target]]},
            },
            "postconfig": FLUSH_PROFILE,
        },
        ["chrome"],
    )
    # The bookmarks bar is shown, as the agent needs to see it to check its work.
    prefs = b'{"bookmark_bar": {"show_on_all_tabs": true}}'
    return Instance(
        task=task,
        inputs={**pages(titles, urls, rng), PREFERENCES: prefs},
        gold={},
        gui=bookmark_to_bar(target + 1),
        tools=None,
        near_miss=bookmark_to_bar(decoy + 1),
    )


def rename_profile(name: str) -> list[Call]:
    """GUI route: the profile page in the current tab, its name field replaced, Tab to commit."""
    return [
        key("ctrl", "l"),
        type_text("chrome://settings/manageProfile\n"),
        # The settings page lays itself out after the screen first goes quiet (a click
        # 2 s after the url missed the field in 2 of 6 runs on a busy machine).
        wait(4),
        gui("left_click", coordinate=list(PROFILE_NAME_FIELD)),
        key("ctrl", "a"),
        type_text(name + "\t"),
        # Tab commits the name; Chromium saves it a moment later.
        wait(1),
        DONE,
    ]


@register_template("chrome-profile-name", "chrome", tools=False)
def profile_name(rng: random.Random, task_id: str) -> Instance:
    """The Chromium profile renamed (OSWorld's ``profile_name`` task, with a seeded name)."""
    _folder, titles, urls = site(rng, 1)
    first, other = pick(rng, NAMES, 2)
    name = f"{first} {rng.choice(WORDS).capitalize()}"
    task = task_dict(
        task_id,
        "chrome",
        f'I go by "{name}" now. Change the name of my Chromium profile to exactly that.',
        chrome_setup(urls),
        {
            "func": "exact_match",
            "result": {"type": "profile_name"},
            "expected": {"type": "rule", "rules": {"expected": name}},
            "postconfig": FLUSH_PROFILE,
        },
        ["chrome"],
    )
    return Instance(
        task=task,
        inputs=pages(titles, urls, rng),
        gold={},
        gui=rename_profile(name),
        tools=None,
        near_miss=rename_profile(f"{other} {name.split()[1]}"),
    )


@register_template("chrome-page-value-to-file", "chrome", tools=False)
def page_value_to_file(rng: random.Random, task_id: str) -> Instance:
    """A number read on a local page, written to a text file from the terminal."""
    codes = [f"{w[:3].upper()}-{rng.randint(100, 999)}" for w in pick(rng, WORDS, 4)]
    amounts = rng.sample(range(120, 9900), 4)
    target, decoy = rng.sample(range(4), 2)
    _folder, titles, urls = site(rng, 1)
    rows = "".join(f"<tr><td>{c}</td><td>{a}</td></tr>" for c, a in zip(codes, amounts, strict=True))
    title = f"Orders {titles[0].split()[1]}"
    body = (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head>"
        f"<body><h1>{title}</h1><table border='1'><tr><th>Order</th><th>Amount</th></tr>{rows}</table>"
        "</body></html>"
    ).encode()
    answer = f"{HOME}/{rng.choice(('answer', 'amount', 'total'))}_{rng.randint(10, 99)}.txt"
    task = task_dict(
        task_id,
        "chrome",
        f'The page "{title}" is open in Chromium. Write the amount of order {codes[target]} '
        f"(the number only) into the file {answer}.",
        [*chrome_setup(urls), *terminal_setup(HOME), FOCUS_TERMINAL],
        {
            "func": "exact_match",
            "result": {"type": "vm_command_line", "command": f"tr -d '[:space:]' < {answer}", "shell": True},
            "expected": {"type": "rule", "rules": {"expected": str(amounts[target])}},
        },
        ["chrome", "os", "terminal"],
    )

    def write(value: int) -> list[Call]:
        # No click first: the terminal has the focus; a click beside it would give it to Chromium.
        return [type_text(f"echo {value} > {answer}\n"), wait(1), DONE]

    return Instance(
        task=task,
        inputs={urls[0].removeprefix("file://"): body},
        gold={},
        gui=write(amounts[target]),
        tools=None,
        near_miss=write(amounts[decoy]),
    )


def open_in_new_tabs(urls: list[str]) -> list[Call]:
    """GUI route: each url in a new tab (Ctrl+T, then Ctrl+L once the new tab page has the focus)."""
    calls: list[Call] = []
    for url in urls:
        calls += [key("ctrl", "t"), wait(1), key("ctrl", "l"), type_text(url + "\n")]
    return [*calls, DONE]


@register_template("chrome-open-pages", "chrome", tools=True)
def open_pages(rng: random.Random, task_id: str) -> Instance:
    """Two more local pages opened in new tabs, the first tab kept, the last one opened active."""
    folder, titles, urls = site(rng, 4)
    first, wanted, other = urls[0], urls[1:3], urls[3]
    names = [u.rsplit("/", 1)[1] for u in wanted]
    task = task_dict(
        task_id,
        "chrome",
        f"Keep the open tab and open the pages {names[0]} and then {names[1]} from {folder} in new "
        f"Chromium tabs, leaving {names[1]} as the active tab.",
        chrome_setup([first]),
        {
            "func": ["is_expected_tabs", "is_expected_active_tab"],
            "conj": "and",
            "result": [{"type": "open_tabs_info"}, {"type": "active_tab_info"}],
            "expected": [
                {"type": "rule", "rules": {"type": "url", "urls": [first, *wanted]}},
                {"type": "rule", "rules": {"type": "url", "url": wanted[1]}},
            ],
        },
        ["chrome"],
    )
    return Instance(
        task=task,
        inputs=pages(titles, urls, rng),
        gold={},
        gui=open_in_new_tabs(wanted),
        tools=[*(tool("google_chrome.chrome_open_tabs_setup", url=u) for u in wanted), DONE],
        near_miss=open_in_new_tabs([wanted[0], other]),
    )

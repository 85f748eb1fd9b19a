"""OSWorld website tasks as episodes of the env, against loopback stand-ins of their sites (``-m desktop``).

Each task's own JSON (from the shipped corpus) is reset in one internet-mode env whose
stand-in hosts send the sites' names to a TLS server on the host's loopback
(:mod:`stand_in_sites`); the one change to a task is that its Chromium launch trusts
that server's certificate. Two episodes per task, both scored by the env's evaluator
when the agent terminates: the no-op (terminate at once) scores 0, the oracle scores 1.

An oracle does what the instruction asks through the agent's own actions: it brings
Chromium's window forward (``xdotool`` in the bash channel), types the address a
correct episode ends on into the address bar (``computer_use`` keys and text), and
waits in the bash channel until DevTools lists that page. A stand-in page holds what
the real site shows there, in the classes, paths and query keys the task's getters
read; dates are computed here with the standard library. Tasks that read Chromium's
files (history, cookies) or the desktop's launchers are solved as a user at a shell
would solve them, and say so beside their oracle.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import shlex
import shutil
import sqlite3
import subprocess
import tarfile
import zoneinfo
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import gymnasium as gym
import openpyxl
import pytest
from osworld_mcp_env.tasks import read_task_file
from polling import wait_until
from stand_in_sites import Page, StandIn, stand_in_env, stand_in_sites, trusting
from task_data import OSWORLD_EXAMPLES, fill_stand_in_cache

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the stand-ins' certificate"),
]

HOSTS = [
    "www.cars.com",
    "www.apple.com",
    "www.delta.com",
    "www.rentalcars.com",
    "www.kohls.com",
    "shopping.google.com",
    "www.google.com",
    "www.tripadvisor.com",
    "www.budget.com",
    "store.steampowered.com",
    "www.dota2.com",
    "www.amazon.com",
    "www.mathsisfun.com",
    "lilianweng.github.io",
    "scholar.google.com",
    "en.wikipedia.org",
    "pytorch.org",
    "releases.ubuntu.com",
]
DEVTOOLS_LIST = "http://127.0.0.1:1337/json/list"


def _today(zone: str | None = None) -> datetime.date:
    now = datetime.datetime.now(datetime.UTC)
    return (now.astimezone(zoneinfo.ZoneInfo(zone)) if zone else now.astimezone()).date()


def _ahead(days: int, zone: str | None = None) -> datetime.date:
    return _today(zone) + datetime.timedelta(days=days)


def _next_month(day: int) -> datetime.date:
    today = _today()
    return datetime.date(today.year + today.month // 12, today.month % 12 + 1, day)


def gui(action: str, **arguments) -> dict:
    return {"name": "computer_use", "arguments": {"action": action, **arguments}}


def bash(command: str, timeout: float | None = None) -> dict:
    """A command in the bash channel; ``timeout``: longer than the channel's default 30 s."""
    arguments: dict = {"command": command} | ({"timeout": timeout} if timeout else {})
    return {"name": "bash", "arguments": arguments}


def terminate() -> dict:
    return gui("terminate", status="success")


def wait_listed(fragment: str) -> dict:
    """Waits (60 s at most) until DevTools lists a page whose url holds ``fragment``."""
    check = f"curl -sf {DEVTOOLS_LIST} | grep -qF -- {shlex.quote(fragment)}"
    return bash(f"timeout 60 sh -c {shlex.quote(f'until {check}; do sleep 0.2; done')}", timeout=90)


def navigate(url: str, listed: str | None = None) -> list[dict]:
    """What a user does to reach ``url``: focus Chromium, type the address, Enter, wait for the page."""
    return [
        bash("xdotool search --onlyvisible --class chromium windowactivate --sync"),
        gui("key", keys=["ctrl", "l"]),
        gui("type", text=url),
        gui("key", keys=["Delete"]),  # whatever the address bar completed inline
        gui("key", keys=["Return"]),
        wait_listed(listed or url),
    ]


SEATS_XPATH = (
    "/html/body/div[6]/div[2]/div[1]/div/div/div[2]/section[1]/div[1]/form/div[1]/div[1]/div[2]/div/a"
)


def _at_xpath(xpath: str, text: str) -> str:
    """HTML that puts ``text`` at ``xpath`` under ``/html/body`` (empty siblings before each n-th step)."""
    html = text
    for step in reversed(xpath.removeprefix("/html/body/").split("/")):
        tag, _, index = step.partition("[")
        html = f"<{tag}></{tag}>" * (int(index.rstrip("]") or 1) - 1) + f"<{tag}>{html}</{tag}>"
    return html


STEAM_ADD = "/cart/addtocart?subid=dota2-official-soundtrack"
CART: list[str] = []  # the stand-in Steam store's cart (the site's state, not the browser's)
MATHSISFUN = ("www.mathsisfun.com", "/games/2048.html")
GAME_PAGE = "<html><head><title>Play Puzzle Game 2048</title></head><body><h1>2048</h1></body></html>"
LILLOG = ("lilianweng.github.io", "/posts/2023-06-23-agent/")
LILLOG_PAGE = (
    "<html><head><title>LLM Powered Autonomous Agents | Lil'Log</title></head><body>"
    "<h1>LLM Powered Autonomous Agents</h1><p>Agent System Overview</p><p>Planning</p>"
    "<p>Memory</p><p>Tool Use</p></body></html>"
)
SEARCHED = "nereida"
PRINT_PDF = r"""out="$HOME/Desktop/LLM Powered Autonomous Agents _ Lil'Log.pdf" && mkdir -p ~/Desktop \
&& /usr/bin/chromium --headless=new --user-data-dir="$(mktemp -d)" \
  --ignore-certificate-errors-spki-list={SPKI} \
  --no-pdf-header-footer --print-to-pdf="$out" https://lilianweng.github.io/posts/2023-06-23-agent/ \
&& test -s "$out"
"""

QUIT_CHROMIUM = "pkill chrome; while ps -C chromium -o stat= | grep -qv '^Z'; do sleep 0.1; done"
PROFILE = "$HOME/.config/chromium/Default"
DELETE_COOKIES = f"""python3 - <<'EOF'
import os, sqlite3
db = sqlite3.connect(os.path.expandvars("{PROFILE}/Cookies"))
db.execute("DELETE FROM cookies WHERE host_key = 'amazon.com' OR host_key LIKE '%.amazon.com'")
db.commit()
EOF"""
DELETE_HISTORY = f"""python3 - <<'EOF'
import os, sqlite3
db = sqlite3.connect(os.path.expandvars("{PROFILE}/History"))
db.execute("DELETE FROM visits WHERE url IN (SELECT id FROM urls WHERE url LIKE '%youtube%')")
db.execute("DELETE FROM urls WHERE url LIKE '%youtube%'")
db.commit()
EOF"""
SHORTCUT = r"""mkdir -p ~/Desktop && title=$(curl -sf http://127.0.0.1:1337/json/list | python3 -c '
import json, sys
print(next(t["title"] for t in json.load(sys.stdin) if t["type"] == "page"))') && printf '%s\n' \
'[Desktop Entry]' 'Version=1.0' 'Terminal=false' 'Type=Application' "Name=$title" \
'Exec=google-chrome --app=https://www.mathsisfun.com/games/2048.html' > ~/Desktop/chrome-2048-Default.desktop
"""


@dataclass(frozen=True)
class Case:
    """One task: its file, the pages its oracle ends on, and the oracle's actions."""

    task: str  # "<domain>/<id>"
    oracle: list[dict]
    pages: dict[tuple[str, str], str | Page] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return OSWORLD_EXAMPLES / f"{self.task}.json"


def _delta_results(start: str, end: str, day: datetime.date) -> str:
    return (
        "<html><body><div class='mach-flight-context-info__wrapper__info--separator'>"
        f"{start}<div class='aura-separator'></div>{end}</div>"
        f"<span class='mach-flight-context-info__wrapper--date'> {day.strftime('%a, %b %d, %Y')} </span>"
        "</body></html>"
    )


def _cases() -> dict[str, Case]:
    cases: list[Case] = []
    cars = (
        "https://www.cars.com/shopping/results/?list_price_max=50000&maximum_distance=50&zip=10001"
        "&fuel_slugs[]=electric"
    )
    cases.append(Case("chrome/82279c77-8fc6-46f6-9622-3ba96f61b477", navigate(cars, "zip=10001")))
    apple = "https://www.apple.com/iphone/compare/?modelList=iphone-15-pro-max,iphone-14-pro-max,iphone-13-pro-max"
    cases.append(Case("chrome/f5d96daf-83a8-4c86-9686-bada31fc66ab", navigate(apple, "modelList=")))
    delta = "https://www.delta.com/flight-search/search-results?cacheKeySuffix=jfk-ord"
    cases.append(
        Case(
            "chrome/fc6d8143-9452-4171-9459-7f515143419a",
            navigate(delta),
            {
                ("www.delta.com", delta.removeprefix("https://www.delta.com")): _delta_results(
                    "JFK", "ORD", _ahead(1)
                )
            },
        )
    )
    zurich = "Europe/Zurich"
    monday = _ahead(7 - _today(zurich).weekday(), zurich)
    friday = monday + datetime.timedelta(days=4)
    rentalcars = (
        "https://www.rentalcars.com/search-results?locationName=Z%C3%BCrich&dropLocationName=Z%C3%BCrich"
        f"&puDay={monday.day}&puMonth={monday.month}&puYear={monday.year}"
        f"&doDay={friday.day}&doMonth={friday.month}&doYear={friday.year}"
        "&filterCriteria_carCategory=large&filterCriteria_sortBy=PRICE"
    )
    cases.append(Case("chrome/1704f00f-79e6-43a7-961b-cedd3724d5fd", navigate(rentalcars, "sortBy=PRICE")))
    kohls = "/catalog/kids-spider-man-toys.jsp?CN=Character:Spider-Man+Department:Toys+Gender:Kids&S=4"
    crumbs = "".join(
        f"<li class='catAllProducts'><span>{t}</span></li>" for t in ("Spider-Man", "Toys", "Kids")
    )
    kohls_page = (
        f"<html><body><ul class='pmpSearch_breadcrumb'>{crumbs}</ul><ul class='sbSelector'>"
        "<li class='catAllProducts'><span>Price Low-High</span></li></ul></body></html>"
    )
    cases.append(
        Case(
            "chrome/cabb3bae-cccb-41bd-9f5d-0f3a9fecd825",
            navigate(f"https://www.kohls.com{kohls}", "S=4"),
            {("www.kohls.com", kohls): kohls_page},
        )
    )
    # Google Shopping's results live on www.google.com (the getters read the shown tab there).
    shopping = (
        "/search?q=drip+coffee+maker&tbm=shop&tbs=mr:1,sales:1,price:1,ppr_min:25,ppr_max:60,color:black"
    )
    chips = "".join(f"<span class='fT28tf'>{t}</span>" for t in ("Black", "$25 - $60", "On sale"))
    cases.append(
        Case(
            "chrome/7f52cab9-535c-4835-ac8c-391ee64dc930",
            navigate(f"https://www.google.com{shopping}", "tbm=shop"),
            {("www.google.com", shopping): f"<html><body><div>{chips}</div></body></html>"},
        )
    )
    new_york = "America/New_York"
    saturday = _ahead(12 - _today(new_york).weekday(), new_york)
    sunday = saturday + datetime.timedelta(days=1)
    hotels = "/Hotels-g60763-New_York_City_New_York-Hotels.html"

    def stay(which: str, day: datetime.date) -> str:
        return (
            f"<button data-automation='{which}'><div class='Wh'><span>{day.strftime('%a, %b %d')}</span>"
            "</div></button>"
        )

    tripadvisor_page = (
        "<html><body><h2 data-automation='header_geo_title'>New York City Hotels</h2>"
        f"{stay('checkin', saturday)}{stay('checkout', sunday)}"
        "<button data-automation='roomsandguests'><div class='Wh'>Rooms/Guests1 Room, 2 Guests</div></button>"
        "<button aria-label='PRICE_LOW_TO_HIGH: Price (low to high)'><div class='biGQs SewaP'>"
        "Price (low to high)</div></button></body></html>"
    )
    cases.append(
        Case(
            "chrome/b7895e80-f4d1-4648-bee0-4eb45a6f1fa8",
            navigate(f"https://www.tripadvisor.com{hotels}"),
            {("www.tripadvisor.com", hotels): tripadvisor_page},
        )
    )

    budget = "/en/reservation#/vehicles"
    task = json.loads((OSWORLD_EXAMPLES / "chrome/47543840-672a-467d-80df-8f7c3b9788c9.json").read_text())
    where = task["evaluator"]["expected"][1]["rules"]["expected"]  # the site's own texts, whitespace and all
    when = [d.strftime("%a, %b %d, 12:00 PM") for d in (_next_month(10), _next_month(11))]
    budget_page = (  # the rank's element first: the divs before it count in its xpath
        "<html><body>"
        + _at_xpath(SEATS_XPATH, "Number of Seats (High to Low)")
        + "<div>"
        + "".join(f"<div class='location-info'>{where[k]}</div>" for k in ("start_location", "end_location"))
        + "".join(f"<div class='day-time-info'>{w}</div>" for w in when)
        + "</div></body></html>"
    )
    cases.append(
        Case(
            "chrome/47543840-672a-467d-80df-8f7c3b9788c9",
            navigate(f"https://www.budget.com{budget}", "reservation#/vehicles"),
            {("www.budget.com", budget.split("#")[0]): budget_page},
        )
    )
    # Steam: the game's page, then what its DLC's "Add to Cart" button requests; the cart is the site's.
    cases.append(
        Case(
            "chrome/121ba48f-9e17-48ce-9bc6-a4fb17a7ebba",
            [
                *navigate("https://store.steampowered.com/app/570/Dota_2/"),
                *navigate(f"https://store.steampowered.com{STEAM_ADD}"),
            ],
        )
    )
    # Chrome's "Create shortcut" writes a launcher named by the page's title on the desktop; so does this.
    shortcut = Case("chrome/35253b65-1c19-4304-8aa4-6884b8218fc0", [bash(SHORTCUT)], {MATHSISFUN: GAME_PAGE})
    cases.append(shortcut)
    # Amazon's cookies: with Chromium closed, its Cookies database loses every amazon.com row.
    cookies = [bash(QUIT_CHROMIUM), bash(DELETE_COOKIES)]
    cases.append(Case("chrome/7b6c7e24-c58a-49fc-a5bb-d57b80e5b4c3", cookies))
    # YouTube's history: with Chromium closed, its History loses every youtube row.
    cases.append(
        Case("chrome/44ee5668-ecd5-4366-a6ce-c1c9b8d4e938", [bash(QUIT_CHROMIUM), bash(DELETE_HISTORY)])
    )
    # The page printed to PDF on the Desktop under Chrome's default name, without header and footer.
    printed = Case("chrome/e1e75309-3ddb-4d09-92ec-de869c928143", [bash(PRINT_PDF)], {LILLOG: LILLOG_PAGE})
    cases.append(printed)
    # B6 of the stand-in sheet (Nereida) searched in Chromium's address bar (Google is its search engine).
    cases.append(
        Case("multi_apps/f8cfa149-d1c1-4215-8dac-4a0932bad3c2", navigate(SEARCHED, "search?q=nereida"))
    )
    # The first link of the latest mail in Bills (Amazon's site) opened in a new tab.
    new_tab = navigate("https://www.amazon.com/", "www.amazon.com")
    new_tab.insert(1, gui("key", keys=["ctrl", "t"]))
    cases.append(Case("multi_apps/58565672-7bfe-48ab-b828-db349231de6b", new_tab))
    return {case.task.split("/")[1][:8]: case for case in cases}


CASES = _cases()


def _dynamic(host: str, path: str) -> Page | None:
    """The stand-ins with state: Steam's cart, and Amazon's pages, which set a year-long cookie."""
    if host == "store.steampowered.com" and path == STEAM_ADD:
        CART.append("The Dota 2 Official Soundtrack")
    if host == "store.steampowered.com" and path.startswith("/cart/"):
        items = "".join(f"<div class='cart_item'>{item}</div>" for item in CART)
        return Page(f"<html><body><h2>Your Shopping Cart</h2>{items}</body></html>")
    if host == "store.steampowered.com" and path.startswith("/app/570/"):
        return Page(
            "<html><head><title>Dota 2 on Steam</title></head><body><h2>Content For This Game</h2>"
            f"<a href='{STEAM_ADD}'>The Dota 2 Official Soundtrack: Add to Cart</a></body></html>"
        )
    if host == "www.amazon.com":
        cookie = "session-id=131-0000001-0000001; Domain=.amazon.com; Path=/; Max-Age=31536000; Secure"
        return Page(
            "<html><head><title>Amazon.com</title></head><body>Amazon</body></html>",
            headers=[("Set-Cookie", cookie)],
        )
    return None


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[StandIn]:
    pages = {key: page for case in CASES.values() for key, page in case.pages.items()}
    with stand_in_sites(tmp_path_factory.mktemp("tls"), HOSTS, pages, _dynamic) as stand_in:
        yield stand_in


def _empty_history(folder: Path) -> bytes:
    """An empty History database (OSWorld's history_empty.sqlite is one), made by Chromium itself."""
    history = folder / "Default" / "History"
    chromium = subprocess.Popen(
        ["chromium", "--headless=new", "--no-sandbox", f"--user-data-dir={folder}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:  # Chromium holds the database until it exits, and writes its schema by then
        wait_until(history.exists, 60, "Chromium's History database")
    finally:
        chromium.terminate()
        chromium.wait(30)
    with contextlib.closing(sqlite3.connect(history)) as db, db:
        assert db.execute("SELECT name FROM sqlite_master WHERE name = 'visits'").fetchall()
        db.execute("DELETE FROM visits")
        db.execute("DELETE FROM urls")
    return history.read_bytes()


def _stand_in_files(tmp: Path) -> dict[str, bytes]:
    """The cached files these tasks read, by destination name: made here (the tests have no internet)."""
    book = openpyxl.Workbook()
    book.active["B6"] = "Nereida"
    sheet = io.BytesIO()
    book.save(sheet)
    profile = io.BytesIO()
    with tarfile.open(fileobj=profile, mode="w:gz") as tar:
        entry = tarfile.TarInfo(".thunderbird")
        entry.type, entry.mode = tarfile.DIRTYPE, 0o700
        tar.addfile(entry)
    return {
        "history_empty.sqlite": _empty_history(tmp / "chromium"),
        "cell_search.xls": sheet.getvalue(),  # Calc opens it by its content
        "thunderbird-profile.tar.gz": profile.getvalue(),
    }


@pytest.fixture(scope="module")
def file_cache(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cache")
    files = _stand_in_files(tmp_path_factory.mktemp("made"))
    for case in CASES.values():
        fill_stand_in_cache(root, read_task_file(case.path), files.__getitem__)
    return root


@pytest.fixture(scope="module")
def env(site: StandIn, file_cache: Path) -> Iterator[gym.Env]:
    env = stand_in_env(site, HOSTS, file_cache)
    yield env
    env.close()


def run_episode(env: gym.Env, task: dict, actions: list[dict]) -> tuple[float, dict]:
    _obs, info = env.reset(options={"task": task})
    assert info["task_id"] == task["id"]
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        assert "error" not in info, info["error"]
        assert info.get("tool_call", {}).get("returncode", 0) == 0, (action, obs["tool_result"])
        if terminated or truncated:
            assert "eval_error" not in info, info["eval_error"]
            return reward, info
    raise AssertionError("the actions did not end the episode")


def _task(case: Case, site: StandIn) -> dict:
    return trusting(json.loads(case.path.read_text()), site.spki)


@pytest.mark.parametrize("short_id", sorted(CASES))
def test_website_task_no_op_0_oracle_1(env, site, short_id: str):
    case = CASES[short_id]
    CART.clear()
    oracle = json.loads(json.dumps(case.oracle).replace("{SPKI}", site.spki))
    reward, info = run_episode(env, _task(case, site), [terminate()])
    assert reward == 0.0, info.get("evaluation")
    reward, info = run_episode(env, _task(case, site), [*oracle, terminate()])
    assert reward == 1.0, info.get("evaluation")

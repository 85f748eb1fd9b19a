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

import datetime
import json
import shlex
import shutil
import zoneinfo
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import gymnasium as gym
import pytest
from stand_in_sites import Page, StandIn, stand_in_sites, trusting
from task_data import OSWORLD_EXAMPLES

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


def bash(command: str) -> dict:
    return {"name": "bash", "arguments": {"command": command}}


def terminate() -> dict:
    return gui("terminate", status="success")


def wait_listed(fragment: str) -> dict:
    """Waits (60 s at most) until DevTools lists a page whose url holds ``fragment``."""
    check = f"curl -sf {DEVTOOLS_LIST} | grep -qF -- {shlex.quote(fragment)}"
    return bash(f"timeout 60 sh -c {shlex.quote(f'until {check}; do sleep 0.2; done')}")


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
    return {case.task.split("/")[1][:8]: case for case in cases}


CASES = _cases()


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[StandIn]:
    pages = {key: page for case in CASES.values() for key, page in case.pages.items()}
    with stand_in_sites(tmp_path_factory.mktemp("tls"), HOSTS, pages) as stand_in:
        yield stand_in


@pytest.fixture(scope="module")
def env(site: StandIn) -> Iterator[gym.Env]:
    network = {"mode": "internet", "hosts": {h: f"127.0.0.1:{site.port}" for h in HOSTS}}
    env = gym.make(
        "osworld_mcp_env:OSWorldMCP-v0",
        enable_bash=True,
        enable_mcp=False,
        step_timeout_s=120,
        network=network,
    )
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
    reward, info = run_episode(env, _task(case, site), [terminate()])
    assert reward == 0.0, info.get("evaluation")
    reward, info = run_episode(env, _task(case, site), [*case.oracle, terminate()])
    assert reward == 1.0, info.get("evaluation")

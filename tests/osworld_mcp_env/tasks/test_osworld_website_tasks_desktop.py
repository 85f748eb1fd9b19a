"""OSWorld website tasks end to end on the real desktop, against loopback stand-ins of their sites.

Each task's own JSON runs as written: its setup (Chromium, ``chrome_open_tabs`` of the
site's https url), then its evaluator, once on the untouched start page (a no-op
agent: 0) and once after an oracle brought the tab where the task wants it (1).
The sites are TLS servers on the host's loopback, reached by their real names
through internet mode's stand-in hosts (``network={"hosts": ...}``). Their
certificate is self-signed; the one change to a task is that Chromium's launch
also names that certificate's key (``--ignore-certificate-errors-spki-list``,
which Chromium honours with an explicit ``--user-data-dir``: the default one).

An oracle page holds what the real site shows at the end of a correct episode,
in the classes, paths and query keys the task's getters read; the dates are
computed here with the standard library for the day the test runs.
"""

from __future__ import annotations

import calendar
import datetime
import io
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass

import openpyxl
import pytest
from osworld_mcp_env import devtools
from osworld_mcp_env.backends.local.desktop import LocalDesktop, LocalDesktopConfig
from osworld_mcp_env.evaluators import GETTERS, evaluate
from osworld_mcp_env.tasks import TaskContext, TaskRunConfig, load_task, run_setup
from osworld_mcp_env.tasks.cache import osworld_cache_name
from osworld_mcp_env.tasks.coverage import cache_urls
from polling import wait_until
from stand_in_sites import HOME, StandIn, stand_in_sites, trusting
from task_data import OSWORLD_EXAMPLES

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the stand-ins' certificate"),
]

HOSTS = ["www.macys.com", "www.ryanair.com", "www.delta.com", "www.accuweather.com", "www.mbta.com"]
HOSTS += ["www.qatarairways.com", "www.nba.com", "store.nba.com"]
HOSTS += ["scholar.google.com"]
HOSTS += ["outlook.office365.com"]  # where MBTA's booking page lives (Microsoft Bookings)


def _today() -> datetime.date:
    return datetime.datetime.now().astimezone().date()  # no timezone in these rules: the host's own


def _next_month(day: int) -> datetime.date:
    today = _today()
    return datetime.date(today.year + today.month // 12, today.month % 12 + 1, day)


def _first_monday_eight_months_on() -> datetime.date:
    today = _today()
    first = datetime.date(today.year + (today.month + 8 > 12), (today.month + 7) % 12 + 1, 1)
    return first + datetime.timedelta(days=-first.weekday() % 7)


@dataclass(frozen=True)
class WebsiteTask:
    """A task, its site, and where a correct episode ends: a path (on ``oracle_host``) and its page."""

    task_id: str
    host: str
    oracle_path: str
    oracle_page: str
    oracle_host: str = ""

    @property
    def oracle_url(self) -> str:
        return f"https://{self.oracle_host or self.host}{self.oracle_path}"


def _tasks() -> list[WebsiteTask]:
    in_five = _next_month(5)
    ryanair_date = _next_month(10)
    mbta_day = _first_monday_eight_months_on()
    month = calendar.month_name[_today().month].lower()
    monday = _today() + datetime.timedelta(days=7 - _today().weekday())
    return [
        WebsiteTask(
            "2888b4e6-5b47-4b57-8bf5-c73827890774",
            "www.macys.com",
            "/shop/mens-clothing/mens-shirts/Men_regular_size_t,Price_discount_range,Sleeve_length/"
            "L,50_PERCENT_%20off%20%26%20more,Short%20Sleeve?id=20626",
            HOME,
        ),
        WebsiteTask(
            "f79439ad-3ee8-4f99-a518-0eb60e5652b0",
            "www.ryanair.com",
            "/gb/en/trip/flights/select?adults=2&teens=0&originIata=DUB&destinationIata=VIE&isReturn=false"
            f"&tpAdults=2&tpTeens=0&tpChildren=0&tpStartDate={ryanair_date.year}-{ryanair_date.month:02d}-"
            f"{ryanair_date.day}",
            HOME,
        ),
        WebsiteTask(
            "6c4c23a1-42a4-43cc-9db1-2f86ff3738cc",
            "www.delta.com",
            "/flight-search/search-results?cacheKeySuffix=a1",
            "<html><body><div class='mach-flight-context-info__wrapper__info--separator'>SEA"
            "<div class='aura-separator'></div>NYC</div>"
            "<span class='mach-flight-context-info__wrapper--date'>"
            f" {in_five.strftime('%a, %b %d, %Y')} </span>"
            "<a class='mach-global-tabs-small__wrapper__tab--active'>Miles</a></body></html>",
        ),
        WebsiteTask(
            "368d9ba4-203c-40c1-9fa3-da2f1430ce63",
            "www.accuweather.com",
            f"/en/gb/manchester/m15-6/{month}-weather/329260",
            HOME,
        ),
        WebsiteTask(
            "82bc8d6a-36eb-4d2d-8801-ef714fb1e55a",
            "www.qatarairways.com",
            "/app/booking/flight-selection?widget=QR&searchType=F&tripType=O&fromStation=BOM&toStation=ARN"
            f"&departing={monday.isoformat()}&adults=1",
            HOME,
        ),
        WebsiteTask(
            "9f3f70fc-5afc-4958-a7b7-3bb4fcb01805",
            "www.nba.com",
            "/womens/jerseys/nike/o-4567+t-36+d-1249+z-9-1442296519?sortOption=TopSellers",
            "<html><body><ul>"
            + "".join(
                f"<li><a class='filter-selector-link'>{f}</a></li>" for f in ("Women", "Jerseys", "Nike")
            )
            + "<li><a class='filter-selector-link'>Over $60</a></li></ul></body></html>",
            "store.nba.com",
        ),
        WebsiteTask(
            "da46d875-6b82-4681-9284-653b0c7ae241",
            "www.mbta.com",
            "/book/CharlieCardStoreAppointments@mbta.com/",
            "<html><body><div></div><div><div><form>"
            + "<div></div>" * 6
            + "<div><div><div><div><input value='James Smith'><input value='james.smith@gmail.com'>"
            "</div></div></div></div></form></div></div>"
            "<div class='HAZ16'><h3>Apply for Transportation Access Pass (TAP) CharlieCard non-auto approval"
            "</h3></div>"
            f"<div class='HAZ16'><h3>{mbta_day.strftime('%B %d')}, 10:15 AM</h3></div></body></html>",
            "outlook.office365.com",
        ),
    ]


@pytest.fixture(scope="module")
def tasks() -> list[WebsiteTask]:
    if _today().month == 4:
        pytest.skip("da46d875: OSWorld's 'first monday eight months later' crashes in April")
    return _tasks()


@pytest.fixture(scope="module")
def site(tasks, tmp_path_factory) -> Iterator[StandIn]:
    pages = {(t.oracle_host or t.host, t.oracle_path): t.oracle_page for t in tasks}
    pages[("scholar.google.com", SCHOLAR)] = SCHOLAR_PAGE
    pages[("scholar.google.com", PAPER[0])] = PAPER[1]
    with stand_in_sites(tmp_path_factory.mktemp("tls"), HOSTS, pages) as stand_in:
        yield stand_in


@pytest.fixture(scope="module")
def online(site) -> Iterator[LocalDesktop]:
    network = {"mode": "internet", "hosts": {h: f"127.0.0.1:{site.port}" for h in HOSTS}}
    desk = LocalDesktop(LocalDesktopConfig(libreoffice_template=False, network=network))
    try:
        yield desk
    finally:
        desk.close()


SCHOLAR = "/citations?user=WLN3QrAAAAAJ&hl=en"
SCHOLAR_PAGE = (
    "<html><body><div id='gsc_prf_in'>Yann LeCun</div><table id='gsc_rsb_st'><tbody>"
    "<tr><td>Citations</td><td>400123</td></tr><tr><td>h-index</td><td>150</td></tr>"
    "<tr><td>i10-index</td><td>380</td></tr></tbody></table><table><tbody id='gsc_a_b'>"
    "<tr><td class='gsc_a_t'><a href='/citations?view_op=view_citation&amp;citation_for_view=1'>"
    "Deep learning</a></td></tr></tbody></table></body></html>"
)
PAPER = (
    "/citations?view_op=view_citation&citation_for_view=1",
    "<html><body><div id='gsc_oci_title_gg'><div><a href='https://hal.science/x/document'>[PDF]</a></div></div>"
    "</body></html>",
)
SCHOLAR_ROW = ["Yann LeCun", "400123", "150", "380", "Deep learning", "https://hal.science/x/document"]


def _go(desktop: LocalDesktop, url: str) -> None:
    """The oracle: the shown tab navigates to ``url`` (as the agent's last click would)."""
    shown = [t for t in devtools.tabs(desktop, wait_s=30) or () if t.visible]
    assert shown, "no shown tab"
    devtools.evaluate_in(desktop, shown[0].id, f"location.href = {json.dumps(url)}")
    wait_until(
        lambda: any(t.url == url and t.ready == "complete" for t in devtools.tabs(desktop) or ()), 60, url
    )


@pytest.mark.parametrize(
    "index", range(7), ids=["macys", "ryanair", "delta", "accuweather", "qatar", "nba", "mbta"]
)
def test_no_op_scores_0_and_the_oracle_scores_1(online, site, tasks, index, tmp_path):
    case = tasks[index]
    path = next(OSWORLD_EXAMPLES.glob(f"chrome/{case.task_id}.json"))
    task = load_task(trusting(json.loads(path.read_text()), site.spki))
    ctx = TaskContext(task.id, tmp_path)
    online.execute(["pkill", "chrome"])
    wait_until(lambda: online.execute(["pgrep", "-x", "chromium"]).returncode == 1, 60, "Chromium to exit")
    run_setup(task, online, ctx)
    start = [t.url for t in devtools.tabs(online) or () if t.visible]
    assert start and start[0].startswith(f"https://{case.host}/"), start
    no_op = evaluate(task, online, ctx)
    assert no_op.score == 0.0, no_op
    _go(online, case.oracle_url)
    oracle = evaluate(task, online, ctx)
    assert oracle.score == 1.0, oracle


def test_scholar_task_5990457f_reads_the_site_and_the_workbook(online, site, tmp_path):
    """info_from_website clicks through the stand-in Scholar; content_from_vm_file reads the last row."""
    path = next(OSWORLD_EXAMPLES.glob("multi_apps/5990457f-*.json"))
    task = load_task(trusting(json.loads(path.read_text()), site.spki))
    [(url, name)] = cache_urls(task)
    book = openpyxl.Workbook()
    book.active.append(["Name", "Citations", "h-index", "i10-index", "Top paper", "PDF"])
    book.active.append(["Geoffrey Hinton", 900000, 190, 450, "ImageNet classification", "https://x/y.pdf"])
    cache = tmp_path / "cache"
    (cache / task.id).mkdir(parents=True)
    book.save(cache / task.id / osworld_cache_name(url, name))
    ctx = TaskContext(task.id, tmp_path / "work", TaskRunConfig(cache_roots=(cache,)))
    online.execute(["pkill", "chrome"])
    wait_until(lambda: online.execute(["pgrep", "-x", "chromium"]).returncode == 1, 60, "Chromium to exit")
    run_setup(task, online, ctx)
    assert evaluate(task, online, ctx).score == 0.0  # the table's last row is still Hinton's
    expected = task.evaluator.checks[0].expected
    assert GETTERS.get("info_from_website")(online, ctx, expected.config) == SCHOLAR_ROW
    book.active.append([SCHOLAR_ROW[0], 400123, 150, 380, *SCHOLAR_ROW[4:]])  # the oracle's new row
    data = io.BytesIO()
    book.save(data)
    online.upload_file("/home/user/Desktop/researchers.xlsx", data.getvalue())
    assert evaluate(task, online, ctx).score == 1.0
    # A page without the elements: OSWorld's backups, the author's reading of the site.
    missing = dict(expected.config) | {"url": "https://scholar.google.com/nothing"}
    assert GETTERS.get("info_from_website")(online, ctx, missing) == expected.config["backups"]

"""The pure halves of the page getters and ``rule_relativeTime``, against hand-computed answers.

Each case is a configuration an OSWorld task uses (its id in the test name) with a
url or page reads made by hand; the answers follow OSWorld's getter code read line
by line (``getters/chrome.py``, ``getters/misc.py``).
"""

from __future__ import annotations

import datetime

import pytest
from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators.getters.chrome_pages import (
    html_parse_queries,
    html_parse_result,
    macys_path,
    url_dash_part,
    url_query,
)
from osworld_mcp_env.evaluators.getters.relative_time import fill_date, relative_rules, today_in

SATURDAY = datetime.date(2026, 12, 5)  # weekday 5


def test_fill_date_fills_each_placeholder_once():
    # 2026-03-05 is a Thursday.
    day = datetime.date(2026, 3, 5)
    assert fill_date("{DoW}, {Month} {Day0D}, {Year}", day) == "Thu, Mar 05, 2026"
    assert fill_date("{Year}-{Month0D}-{DayD}", day) == "2026-03-5"
    assert fill_date("{MonthFull} {Day0D}, 10:15 AM", day) == "March 05, 10:15 AM"
    assert fill_date("{month}-weather", day) == "march-weather"
    assert fill_date("{DayD}/{DayD}", day) == "5/{DayD}"  # OSWorld replaces the first only


def test_tomorrow_crosses_the_year_fc6d8143():
    rules = {"relativeTime": {"from": "tomorrow"}, "expected": {"time": "{DoW}, {Month} {Day0D}, {Year}"}}
    filled = relative_rules(rules, datetime.date(2026, 12, 31))
    assert filled["expected"]["time"] == "Fri, Jan 01, 2027"
    assert rules["expected"]["time"] == "{DoW}, {Month} {Day0D}, {Year}"  # the task's rules stay as they were


def test_next_monday_split_to_next_friday_split_1704f00f():
    rules = {
        "relativeTime": {"from": "next Monday split", "to": "next Friday split"},
        "timezone": "Europe/Zurich",
        "expected": {"puDay": "{DayD}", "puMonth": "{MonthD}", "puYear": "{Year}"}
        | {"doDay": "{DayD}", "doMonth": "{MonthD}", "doYear": "{Year}"},
    }
    filled = relative_rules(rules, SATURDAY)["expected"]
    # Saturday 5 Dec: Monday is the 7th, its Friday the 11th.
    assert filled == {
        "puDay": "7",
        "puMonth": "12",
        "puYear": "2026",
        "doDay": "11",
        "doMonth": "12",
        "doYear": "2026",
    }


def test_next_monday_on_a_monday_is_a_week_ahead_82bc8d6a():
    rules = {"relativeTime": {"from": "next Monday"}, "expected": {"time": ["{Year}-{Month0D}-{Day0D}"]}}
    # The task's list of templates: each is filled (OSWorld's getter raises on the list).
    assert relative_rules(rules, datetime.date(2026, 12, 7))["expected"]["time"] == ["2026-12-14"]
    rules["expected"]["time"] = "{Year}-{Month0D}-{Day0D}"
    assert relative_rules(rules, datetime.date(2026, 12, 7))["expected"]["time"] == "2026-12-14"


def test_next_week_weekend_b7895e80_and_next_months_days_47543840():
    week = {"relativeTime": {"from": "next week Saturday", "to": "next week Sunday"}}
    week["expected"] = {"from": "{DoW}, {Month} {Day0D}", "to": "{DoW}, {Month} {Day0D}", "city": "x"}
    filled = relative_rules(week, SATURDAY)["expected"]
    assert (filled["from"], filled["to"], filled["city"]) == ("Sat, Dec 12", "Sun, Dec 13", "x")
    friday = relative_rules(
        week | {"relativeTime": {"from": "next week Friday", "to": "next week Sunday"}}, SATURDAY
    )
    assert (friday["expected"]["from"], friday["expected"]["to"]) == ("Fri, Dec 11", "Sun, Dec 13")
    months = {"relativeTime": {"from": "10th next month", "to": "11th next month"}}
    months["expected"] = {"from": "{Year}-{Month0D}-{Day0D}", "to": "{Year}-{Month0D}-{Day0D}"}
    assert relative_rules(months, SATURDAY)["expected"] == {"from": "2027-01-10", "to": "2027-01-11"}


def test_first_monday_eight_months_later_and_osworlds_april_crash_da46d875():
    rules = {
        "relativeTime": {"from": "first monday eight months later"},
        "expected": {"time": "{MonthFull} {Day0D}"},
    }
    # May 2026 -> January 2027, whose 1st is a Friday: the first Monday is the 4th.
    assert relative_rules(rules, datetime.date(2026, 5, 20))["expected"]["time"] == "January 04"
    with pytest.raises(EvaluationError, match="month 0 in April"):
        relative_rules(rules, datetime.date(2026, 4, 1))


def test_a_phrase_osworld_does_not_know_is_an_evaluator_error():
    with pytest.raises(EvaluationError, match="no time 'next week Saturday'"):
        relative_rules({"relativeTime": {"from": "next week Saturday"}, "expected": {"time": ""}}, SATURDAY)
    with pytest.raises(EvaluationError, match="no range end 'someday'"):
        relative_rules({"relativeTime": {"from": "tomorrow", "to": "someday"}, "expected": {}}, SATURDAY)


def test_today_in_a_zone():
    late = datetime.datetime(2026, 12, 5, 23, 30, tzinfo=datetime.UTC)
    assert today_in("Europe/Zurich", late) == datetime.date(2026, 12, 6)
    assert today_in("America/New_York", late) == datetime.date(2026, 12, 5)
    assert today_in("Not/AZone", late) == datetime.date(2026, 12, 5)  # UTC, as OSWorld falls back


def test_url_query_renames_and_splits_f79439ad_f5d96daf():
    url = (
        "https://www.ryanair.com/ie/en/trip/flights/select?adults=2&tpStartDate=2027-01-10&originIata=DUB&x=1"
    )
    config = {"parse_keys": ["originIata", "tpStartDate", "tpTeens"], "replace": {"tpStartDate": "time"}}
    assert url_query(url, config) == {"originIata": "DUB", "tpTeens": "", "time": "2027-01-10"}
    assert list(url_query(url, config)) == ["originIata", "tpTeens", "time"]
    cars = "https://www.cars.com/shopping/results/?modelList=toyota-camry%2Ctoyota-corolla&zip=10001"
    assert url_query(cars, {"parse_keys": ["modelList"], "split_list": True}) == {
        "modelList": ["toyota-camry", "toyota-corolla"]
    }


def test_url_dash_part_368d9ba4():
    url = "https://www.accuweather.com/en/us/new-york/10021/december-weather/349727"
    config = {"partIndex": -2, "needDeleteId": False, "returnType": "json", "key": "time"}
    assert url_dash_part(url, config) == {"time": "december-weather"}
    assert (
        url_dash_part(url + "?id=3", config | {"partIndex": -1, "needDeleteId": True, "returnType": "string"})
        == "349727"
    )
    assert url_dash_part(url, config | {"partIndex": 9}) is None
    assert url_dash_part(url, config | {"returnType": "xml"}) is None


def test_macys_path_2888b4e6():
    url = (
        "https://www.macys.com/shop/mens-clothing/mens-shirts/"
        "Men_regular_size_t,Price_discount_range,Sleeve_length/L,50_PERCENT_%20off%20%26%20more,Short%20Sleeve?id=20626"
    )
    keys = ["mens_clothing", "shirts", "Men_regular_size_t", "Price_discount_range", "short_sleeve"]
    assert macys_path(url, keys) == {
        "mens_clothing": True,
        "shirts": True,
        "short_sleeve": True,
        "Men_regular_size_t": "L",
        "Price_discount_range": "50_PERCENT_ off & more",
    }
    smaller = url.replace(
        "50_PERCENT_%20off%20%26%20more", "50_PERCENT_%20off%20%26%20more|20_PERCENT_%20off%20%26%20more"
    )
    assert macys_path(smaller, keys)["Price_discount_range"] == "not_50_PERCENT_ off & more"
    assert macys_path("https://www.macys.com/shop/womens", keys) == {
        "mens_clothing": None,
        "shirts": None,
        "short_sleeve": None,
        "Men_regular_size_t": None,
        "Price_discount_range": "not_50_PERCENT_ off & more",
    }


def test_html_parse_class_reads_6c4c23a1():
    config = {
        "category": "class",
        "class_singleObject": {"date": "time", "tab--active": "category"},
        "class_multiObject_child": {"separator": {"0": "start", "1": "end"}},
    }
    queries = html_parse_queries(config)
    assert [(key, q["selector"], q["read"]) for key, _name, q in queries] == [
        ("class_multiObject_child", ".separator", "direct"),
        ("class_singleObject", ".date", "text"),
        ("class_singleObject", ".tab--active", "text"),
    ]
    # The first .separator's own text nodes (trimmed in the page), one .date, no .tab--active.
    found = [[["SEA", "NYC"], ["LAX"]], ["  Sat, Jan 05, 2027 \n"], []]
    assert html_parse_result(config, "https://www.united.com/", found) == {
        "start": "SEA",
        "end": "NYC",
        "time": "Sat, Jan 05, 2027",
        "category": "",
    }


def test_html_parse_class_multi_only_child_and_search_exist():
    config = {
        "category": "class",
        "class_multiObject": {"info": {"0": "a", "3": "d"}},
        "class_multiObject_only_child": {"HAZ16": {"0": "content", "1": "time"}},
        "class_multiObject_search_exist": {"chip": ["Black", "On sale", "is_other_exist"]},
    }
    # only_child reads each element's h3 (None: the element has none, skipped as OSWorld does).
    found = [[" x ", "y"], [None, " Pass ", "May 03 "], ["Black", " Red "]]
    assert html_parse_result(config, "", found) == {
        "a": "x",
        "d": "",
        "content": "Pass",
        "time": "May 03",
        "Black": True,
        "On sale": False,
        "is_other_exist": True,
    }


def test_html_parse_xpath_and_input_da46d875():
    xpath = {"category": "xpath", "xpathObject": {"//h2": "city", "//nothing": "rank"}}
    assert [q["xpath"] for *_k, q in html_parse_queries(xpath)] == [True, True]
    assert html_parse_result(xpath, "", [[" New York City Hotels ", "b"], []]) == {
        "city": "New York City Hotels",
        "rank": "",
    }
    inputs = {"category": "input", "inputObject": {"/html/body/input[1]": "name", "/html/body/div": "mail"}}
    assert [q["read"] for *_k, q in html_parse_queries(inputs)] == ["value", "value"]
    assert html_parse_result(inputs, "", [[" Ann "], [None]]) == {"name": "Ann", "mail": ""}


def test_html_parse_class_and_url_cabb3bae():
    config = {
        "category": "class&url",
        "class_multiObject_li": {
            "pmpSearch_breadcrumb": ["Spider-Man", "Toys", "Kids"],
            "sbSelector": ["Price Low-High"],
        },
        "url_include_expected_multichoice": {
            "Spider-Man": "Spider-Man",
            "spiderman": "Spider-Man",
            "S=4": "Price Low-High",
        },
    }
    queries = html_parse_queries(config)
    assert [q["selector"] for *_k, q in queries] == [
        ".pmpSearch_breadcrumb li.catAllProducts",
        ".sbSelector li.catAllProducts",
    ]
    found = [["Spider-Man", "toys", " Kids "], ["Price Low-High"]]
    url = "https://www.kohls.com/search.jsp?search=spiderman&S=4"
    # The url's first multichoice entry ("spider-man" absent) sets the key; the later "spiderman" does not.
    assert html_parse_result(config, url, found) == {
        "spider-man": True,
        "toys": True,
        "kids": True,
        "price low-high": True,
        "is_other_exist": False,
    }
    # One element naming none of the wanted texts: another filter is on.
    assert (
        html_parse_result(config, url, [["Spider-Man", "Toys", "Kids", "Girls"], []])["is_other_exist"]
        is True
    )


def test_html_parse_class_and_url_in_the_url_9f3f70fc():
    config = {
        "category": "class&url",
        "class_multiObject": {"filter-selector-link": ["over $60", "women", "jerseys", "nike"]},
        "url_include_expected": ["over $60", "women", "jerseys", "nike"],
    }
    url = "https://store.nba.com/women/jerseys/brand-nike/over-$60"
    assert html_parse_result(config, url, [["Women", "Jerseys"]]) == {
        "women": True,
        "jerseys": True,
        "is_other_exist": False,
        "over $60": False,
        "nike": True,
    }


def test_html_parse_unknown_category_reads_nothing_and_label_is_refused():
    assert html_parse_queries({"category": "tables"}) == []
    assert html_parse_result({"category": "tables"}, "", []) == {}
    with pytest.raises(EvaluationError, match="label"):
        html_parse_queries({"category": "label", "labelObject": {"Name": "n"}})


def test_the_two_preferences_getters_of_the_settings_tasks_9656a811_3299584d():
    from osworld_mcp_env.evaluators.getters.chrome import from_preferences

    assert from_preferences("enable_safe_browsing", b'{"safebrowsing": {"enabled": true}}') == "true"
    assert (
        from_preferences("enable_safe_browsing", b'{"safebrowsing": {"enhanced": 1, "enabled": false}}')
        == "true"
    )
    assert from_preferences("enable_safe_browsing", b'{"safebrowsing": {}}') == "false"
    assert from_preferences("enable_safe_browsing", None) == "false"
    # No "session" at all is Chromium's fresh start, the new tab page: "true".
    assert from_preferences("new_startup_page", b"{}") == "true"
    assert from_preferences("new_startup_page", b'{"session": {"restore_on_startup": 5}}') == "true"
    assert from_preferences("new_startup_page", b'{"session": {"restore_on_startup": 1}}') == "false"
    assert from_preferences("new_startup_page", b"broken") == "Google"  # OSWorld's fallback, as is

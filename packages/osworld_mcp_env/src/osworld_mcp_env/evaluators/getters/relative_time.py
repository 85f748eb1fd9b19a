"""``rule_relativeTime``: a rule whose expected dates are named relative to today.

Website tasks ask for "next Monday" or "the 10th of next month"; the expected
values hold placeholders (``{Year}-{Month0D}-{Day0D}``) that OSWorld fills with the
date each phrase means on the day of evaluation, in the rule's ``timezone``. The
phrases, their arithmetic and the placeholders are OSWorld's (``getters/misc.py``),
quirks included: "next Monday" is 1 to 7 days ahead, "next Friday" after "next
Monday" is that Monday plus 4, and "first monday eight months later" takes the
month ``(month + 8) % 12``, which is 0 in April; OSWorld crashes there, and so
does this getter (an :class:`~osworld_mcp_env.errors.EvaluationError`).

One deviation: an expected value that is a list of templates (task 82bc8d6a's
``"time": ["{Year}-{Month0D}-{Day0D}"]``, read with ``expect_in_result``) has each
item filled. OSWorld's getter (January 2026) calls ``str.replace`` on the list and
raises, so that task could never score; later adaptations of it fill each item.

Without a ``timezone`` OSWorld asks a geolocation service where its host is; here
the host's own local time zone stands for that answer (no service is asked).
"""

from __future__ import annotations

import copy
import datetime
import zoneinfo
from collections.abc import Callable, Mapping
from typing import Any

from osworld_mcp_env.backends.base import Desktop
from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators.registry import register_getter
from osworld_mcp_env.tasks.context import TaskContext

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTHS_FULL = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def fill_date(template: str, day: datetime.date) -> str:
    """``template`` with OSWorld's date placeholders filled, each at its first occurrence only."""
    values = (
        ("{DoW}", _DAYS[day.weekday()]),
        ("{Month}", _MONTHS[day.month - 1]),
        ("{DayD}", str(day.day)),
        ("{Year}", str(day.year)),
        ("{Month0D}", f"{day.month:02d}"),
        ("{month}", _MONTHS_FULL[day.month - 1].lower()),
        ("{MonthFull}", _MONTHS_FULL[day.month - 1]),
        ("{Day0D}", f"{day.day:02d}"),
        ("{MonthD}", str(day.month)),
    )
    for key, value in values:
        template = template.replace(key, value, 1)
    return template


def _fill(value: Any, day: datetime.date) -> Any:
    """:func:`fill_date` of a template, or of each template of a list."""
    return [fill_date(v, day) for v in value] if isinstance(value, list) else fill_date(value, day)


def _next_month_day(today: datetime.date, day: int) -> datetime.date:
    return datetime.date(today.year + (today.month == 12), today.month % 12 + 1, day)


def _first_monday(today: datetime.date, months: int, next_year_from: int) -> datetime.date:
    month = (today.month + months) % 12
    try:
        first = datetime.date(today.year + (today.month >= next_year_from), month, 1)
    except ValueError as exc:
        raise EvaluationError(
            f"rule_relativeTime: OSWorld's month arithmetic gives month {month} in "
            f"{_MONTHS_FULL[today.month - 1]} (it crashes there too)"
        ) from exc
    return first + datetime.timedelta(days=(7 - first.weekday()) % 7)


def _ahead(days: Callable[[int], int]) -> Callable[[datetime.date], datetime.date]:
    return lambda today: today + datetime.timedelta(days=days(today.weekday()))


# Phrase -> its date, from today (weekday 0 is Monday), as OSWorld computes each.
_FROM: dict[str, Callable[[datetime.date], datetime.date]] = {
    "tomorrow": _ahead(lambda w: 1),
    "5th next month": lambda t: _next_month_day(t, 5),
    "10th next month": lambda t: _next_month_day(t, 10),
    "this month": lambda t: t,
    "next Monday": _ahead(lambda w: 7 - w),
    "next Monday split": _ahead(lambda w: 7 - w),
    "first monday four months later": lambda t: _first_monday(t, 4, 9),
    "first monday eight months later": lambda t: _first_monday(t, 8, 5),
    "this Saturday": _ahead(lambda w: 5 - w),
    "next Friday": _ahead(lambda w: 4 - w if w < 4 else 7 if w == 4 else 11 - w),
    "next Saturday": _ahead(lambda w: 5 - w if w < 5 else 7 if w == 5 else 6),
    "next week Friday": _ahead(lambda w: 11 - w),
    "next week Saturday": _ahead(lambda w: 12 - w),
    "next week Sunday": _ahead(lambda w: 13 - w),
}
# A range's start that a single time does not know (OSWorld's first branch lacks them).
_RANGE_ONLY_FROM = {
    "next Monday split",
    "this Saturday",
    "next Friday",
    "next Saturday",
    "next week Friday",
    "next week Saturday",
}
_SINGLE_ONLY = {
    "5th next month",
    "this month",
    "first monday four months later",
    "first monday eight months later",
}


def _to_date(phrase: str, start_phrase: str, start: datetime.date, today: datetime.date) -> datetime.date:
    """The end of a range, which OSWorld computes from the start's phrase for some pairs."""
    w = today.weekday()
    if phrase == "tomorrow":
        return today + datetime.timedelta(days=1)
    if phrase == "this Sunday":
        return today + datetime.timedelta(days=6 - w)
    if phrase == "11th next month":
        return _next_month_day(today, 11)
    if phrase in ("next Friday", "next Friday split"):
        if start_phrase in ("next Monday", "next Monday split"):
            return start + datetime.timedelta(days=4)
        return today + datetime.timedelta(days=4 - w if w < 4 else 11 - w)
    if phrase == "next Sunday":
        if start_phrase in ("next Friday", "next Saturday"):
            return start + datetime.timedelta(days=6 - start.weekday())
        return today + datetime.timedelta(days=6 - w if w < 6 else 7)
    if phrase == "next week Sunday":
        if start_phrase in ("next week Friday", "next week Saturday"):
            return start + datetime.timedelta(days=6 - start.weekday())
        return today + datetime.timedelta(days=13 - w)
    raise EvaluationError(f"rule_relativeTime: OSWorld knows no range end {phrase!r}")


def relative_rules(rules: Mapping[str, Any], today: datetime.date) -> dict[str, Any]:
    """A copy of ``rules`` with the placeholders of ``rules["expected"]`` filled for ``today``.

    One time (``relativeTime`` has only ``from``) fills ``expected["time"]``; a range
    fills ``from`` and ``to`` (or the ``pu*``/``do*`` day, month and year of the
    "split" phrases).

    Raises:
        EvaluationError: A phrase OSWorld does not know (its getter crashes on it).
    """
    out = copy.deepcopy(dict(rules))
    relative, expected = out["relativeTime"], out["expected"]
    start_phrase = relative["from"]
    single = "to" not in relative
    if start_phrase not in _FROM or start_phrase in (_RANGE_ONLY_FROM if single else _SINGLE_ONLY):
        what = "time" if single else "range start"
        raise EvaluationError(f"rule_relativeTime: OSWorld knows no {what} {start_phrase!r}")
    start = _FROM[start_phrase](today)
    if single:
        expected["time"] = _fill(expected["time"], start)
        return out
    end = _to_date(relative["to"], start_phrase, start, today)
    if start_phrase == "next Monday split":
        for key in ("puDay", "puMonth", "puYear"):
            expected[key] = _fill(expected[key], start)
    else:
        expected["from"] = _fill(expected["from"], start)
    if relative["to"] == "next Friday split":
        for key in ("doDay", "doMonth", "doYear"):
            expected[key] = _fill(expected[key], end)
    else:
        expected["to"] = _fill(expected["to"], end)
    return out


def today_in(timezone: str | None, now: datetime.datetime | None = None) -> datetime.date:
    """Today's date in ``timezone`` (the host's own zone when None; UTC for an unknown name, as OSWorld)."""
    moment = now or datetime.datetime.now(datetime.UTC)
    if timezone is None:
        return moment.astimezone().date()
    try:
        zone: datetime.tzinfo = zoneinfo.ZoneInfo(timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        zone = datetime.UTC
    return moment.astimezone(zone).date()


@register_getter("rule_relativeTime")
def rule_relative_time(
    desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /
) -> dict[str, Any]:
    """``config["rules"]`` with its expected dates filled for today in ``rules["timezone"]``."""
    rules = config["rules"]
    timezone = rules.get("timezone")
    return relative_rules(rules, today_in(str(timezone) if timezone is not None else None))

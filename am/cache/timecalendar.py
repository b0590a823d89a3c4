"""The calendar arithmetic behind time phrases: days, weeks, months, parts of a day, weekdays, numbers.

Pure functions of a moment ``now`` (am/cache/timephrases.py reads the phrases and calls them);
each returns a half-open range ``(since, until)`` in ``now``'s time zone.

Decisions: docs/decisions/recall.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime, time, timedelta, tzinfo

from am.clock import wall

_Bounds = tuple[datetime | None, datetime | None]
_Builder = Callable[[re.Match[str], datetime], _Bounds]


# --- calendar arithmetic ---------------------------------------------------


def _midnight(day: date, tz: tzinfo | None) -> datetime:
    # combine() rather than now - timedelta: a day is not always 24 hours (DST).
    return wall(datetime.combine(day, time(0)), tz)




def _days_ago(n: int, now: datetime) -> _Bounds:
    day = now.date() - timedelta(days=n)
    return _midnight(day, now.tzinfo), _midnight(day + timedelta(days=1), now.tzinfo)


def _weeks_ago(n: int, now: datetime) -> _Bounds:
    monday = now.date() - timedelta(days=now.weekday() + 7 * n)
    return _midnight(monday, now.tzinfo), _midnight(monday + timedelta(days=7), now.tzinfo)


def _month_start(year: int, month0: int, tz: tzinfo | None) -> datetime:
    carry, month0 = divmod(month0, 12)
    return _midnight(date(year + carry, month0 + 1, 1), tz)


def _months_ago(n: int, now: datetime) -> _Bounds:
    month0 = now.month - 1 - n
    return (
        _month_start(now.year, month0, now.tzinfo),
        _month_start(now.year, month0 + 1, now.tzinfo),
    )


def _years_ago(n: int, now: datetime) -> _Bounds:
    year = now.year - n
    return _midnight(date(year, 1, 1), now.tzinfo), _midnight(date(year + 1, 1, 1), now.tzinfo)


def _past_days(n: int, now: datetime) -> _Bounds:
    if n < 1:
        raise ValueError("past 0 days is empty")
    return _midnight(now.date() - timedelta(days=n - 1), now.tzinfo), now


def _hours_ago(n: int, now: datetime) -> _Bounds:
    # The clock hour n hours back, as "3 days ago" is the calendar day: [13:00, 14:00) at 15:30 for 2.
    hour = (now - timedelta(hours=n)).replace(minute=0, second=0, microsecond=0)
    return hour, hour + timedelta(hours=1)


def _past_hours(n: int, now: datetime) -> _Bounds:
    if n < 1:
        raise ValueError("past 0 hours is empty")
    return now - timedelta(hours=n), now


# Parts of a day, as hours after the day's midnight (a night runs into the next morning).
_PARTS = {"morning": (6, 12), "afternoon": (12, 18), "evening": (18, 24), "night": (18, 30)}


def _part_of_day(days_back: int, part: str) -> _Builder:
    start, end = _PARTS[part]

    def build(_m: re.Match[str], now: datetime) -> _Bounds:
        day = _midnight(now.date() - timedelta(days=days_back), now.tzinfo)
        return _at_hour(day, start), _at_hour(day, end)

    return build


def _at_hour(midnight: datetime, hours: int) -> datetime:
    # combine() on the right calendar day keeps wall-clock hours right across a DST change.
    extra, hour = divmod(hours, 24)
    return datetime.combine(midnight.date() + timedelta(days=extra), time(hour), tzinfo=midnight.tzinfo)


_EN_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "七": 6}
_JA_WEEKDAYS = {"月": 0, "火": 1, "水": 2, "木": 3, "金": 4, "土": 5, "日": 6}


def _weekday_of(m: re.Match[str]) -> int:
    names = m.groupdict()
    if names.get("wd"):
        return _EN_WEEKDAYS.index(m["wd"].lower())
    if names.get("zwd"):
        return _ZH_WEEKDAYS[m["zwd"]]
    return _JA_WEEKDAYS[m["jwd"]]


def _weekday_in_week(weeks_back: int) -> _Builder:
    """That weekday of the calendar week ``weeks_back`` weeks before this one (上周五: last week's Friday)."""

    def build(m: re.Match[str], now: datetime) -> _Bounds:
        monday = now.date() - timedelta(days=now.weekday() + 7 * weeks_back)
        day = monday + timedelta(days=_weekday_of(m))
        return _midnight(day, now.tzinfo), _midnight(day + timedelta(days=1), now.tzinfo)

    return build


def _weekday_before(strictly: bool) -> _Builder:
    """The latest such weekday before today (``strictly``: "last Friday") or on or before it ("Friday")."""

    def build(m: re.Match[str], now: datetime) -> _Bounds:
        back = (now.weekday() - _weekday_of(m)) % 7
        if strictly and back == 0:
            back = 7
        day = now.date() - timedelta(days=back)
        return _midnight(day, now.tzinfo), _midnight(day + timedelta(days=1), now.tzinfo)

    return build


# A weekday alone ("Friday", 周五, 金曜日) is as often what a question is about ("are deploys allowed on
# Friday?") as when something was written; it is a time phrase only with a modifier or as a range's
# end ("since Monday", 周一以来, 月曜日から, "between Monday and Wednesday"): the latest such day.
_BARE_WEEKDAY = _weekday_before(False)


_EN_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def _month_day(m: re.Match[str], now: datetime) -> _Bounds:
    """A month and day (Nov 17, 11月17日): in the year given, else the latest one not after today."""
    month_word = m["mon"]
    month = _EN_MONTHS.index(month_word[:3].lower()) + 1 if month_word.isascii() and month_word.isalpha() \
        else _number(month_word)
    dom = _number(m["dom"])
    if m["year"]:
        day = date(int(m["year"]), month, dom)
    else:
        for year in range(now.year, now.year - 9, -1):
            try:
                day = date(year, month, dom)
            except ValueError:
                continue  # 29 February: the latest leap year
            if day <= now.date():
                break
        else:
            raise ValueError("no such day")
    return _midnight(day, now.tzinfo), _midnight(day + timedelta(days=1), now.tzinfo)


def _hours(m: re.Match[str], now: datetime) -> _Bounds:
    return _hours_ago(_number(m["n"]), now)


def _past_h(m: re.Match[str], now: datetime) -> _Bounds:
    return _past_hours(_number(m["n"]), now)


_UNIT_BUILDERS: dict[str, Callable[[int, datetime], _Bounds]] = {
    "day": _days_ago,
    "week": _weeks_ago,
    "month": _months_ago,
    "year": _years_ago,
}


# --- numbers ---------------------------------------------------------------

_EN_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
    "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
}  # fmt: skip
_CJK_DIGITS = {
    "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9,
}  # fmt: skip


def _number(word: str) -> int:
    lowered = word.lower()
    if lowered in _EN_NUMBERS:
        return _EN_NUMBERS[lowered]
    if "十" in word:
        tens, _, units = word.partition("十")
        return (_CJK_DIGITS[tens] if tens else 1) * 10 + (_CJK_DIGITS[units] if units else 0)
    if word in _CJK_DIGITS:
        return _CJK_DIGITS[word]
    return int(word)  # int() reads full-width digits as well

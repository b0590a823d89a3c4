"""Tests for am.cache.timephrases with a fixed clock: Sunday 2026-11-29 15:30 at +08:00."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from am.errors import UsageError
from am.cache.timephrases import ParsedQuery, TimeRange, parse_query, parse_time

TZ = timezone(timedelta(hours=8))
NOW = datetime(2026, 11, 29, 15, 30, tzinfo=TZ)  # a Sunday


def day(year: int, month: int, dom: int) -> datetime:
    return datetime(year, month, dom, tzinfo=TZ)


TODAY = (day(2026, 11, 29), day(2026, 11, 30))
YESTERDAY = (day(2026, 11, 28), day(2026, 11, 29))
DAY_BEFORE = (day(2026, 11, 27), day(2026, 11, 28))
THREE_DAYS_AGO = (day(2026, 11, 26), day(2026, 11, 27))
THIS_WEEK = (day(2026, 11, 23), day(2026, 11, 30))
LAST_WEEK = (day(2026, 11, 16), day(2026, 11, 23))
TWO_WEEKS_AGO = (day(2026, 11, 9), day(2026, 11, 16))
THIS_MONTH = (day(2026, 11, 1), day(2026, 12, 1))
LAST_MONTH = (day(2026, 10, 1), day(2026, 11, 1))
TWO_MONTHS_AGO = (day(2026, 9, 1), day(2026, 10, 1))
THREE_MONTHS_AGO = (day(2026, 8, 1), day(2026, 9, 1))
THIS_YEAR = (day(2026, 1, 1), day(2027, 1, 1))
LAST_YEAR = (day(2025, 1, 1), day(2026, 1, 1))
TWO_YEARS_AGO = (day(2024, 1, 1), day(2025, 1, 1))
PAST_7_DAYS = (day(2026, 11, 23), NOW)
PAST_3_DAYS = (day(2026, 11, 27), NOW)

Bounds = tuple[datetime | None, datetime | None]

# (query, expected range, remaining text, phrase as found)
CASES: list[tuple[str, Bounds, str, str]] = [
    # English
    ("today", TODAY, "", "today"),
    ("Today", TODAY, "", "Today"),
    ("yesterday", YESTERDAY, "", "yesterday"),
    ("the day before yesterday", DAY_BEFORE, "", "the day before yesterday"),
    ("this week", THIS_WEEK, "", "this week"),
    ("last week", LAST_WEEK, "", "last week"),
    ("LAST  WEEK", LAST_WEEK, "", "LAST WEEK"),
    ("this month", THIS_MONTH, "", "this month"),
    ("last month", LAST_MONTH, "", "last month"),
    ("this year", THIS_YEAR, "", "this year"),
    ("last year", LAST_YEAR, "", "last year"),
    ("3 days ago", THREE_DAYS_AGO, "", "3 days ago"),
    ("1 day ago", YESTERDAY, "", "1 day ago"),
    ("0 days ago", TODAY, "", "0 days ago"),
    ("three days ago", THREE_DAYS_AGO, "", "three days ago"),
    ("a day ago", YESTERDAY, "", "a day ago"),
    ("a week ago", LAST_WEEK, "", "a week ago"),
    ("one week ago", LAST_WEEK, "", "one week ago"),
    ("2 weeks ago", TWO_WEEKS_AGO, "", "2 weeks ago"),
    ("Two Weeks Ago", TWO_WEEKS_AGO, "", "Two Weeks Ago"),
    ("3 months ago", THREE_MONTHS_AGO, "", "3 months ago"),
    ("a month ago", LAST_MONTH, "", "a month ago"),
    ("ten days ago", (day(2026, 11, 19), day(2026, 11, 20)), "", "ten days ago"),
    ("2 years ago", TWO_YEARS_AGO, "", "2 years ago"),
    ("past 7 days", PAST_7_DAYS, "", "past 7 days"),
    ("last 7 days", PAST_7_DAYS, "", "last 7 days"),
    ("past three days", PAST_3_DAYS, "", "past three days"),
    ("past 1 day", (day(2026, 11, 29), NOW), "", "past 1 day"),
    # ISO dates and ranges (a range includes its last day)
    ("2026-11-03", (day(2026, 11, 3), day(2026, 11, 4)), "", "2026-11-03"),
    ("2026-11-01..2026-11-15", (day(2026, 11, 1), day(2026, 11, 16)), "", "2026-11-01..2026-11-15"),
    ("2026-11-01 to 2026-11-15", (day(2026, 11, 1), day(2026, 11, 16)), "", "2026-11-01 to 2026-11-15"),
    ("2026-11-15..2026-11-01", (day(2026, 11, 1), day(2026, 11, 16)), "", "2026-11-15..2026-11-01"),
    ("2026-11-01~2026-11-15", (day(2026, 11, 1), day(2026, 11, 16)), "", "2026-11-01~2026-11-15"),
    ("2026-11-01至2026-11-15", (day(2026, 11, 1), day(2026, 11, 16)), "", "2026-11-01至2026-11-15"),
    ("2026-11-01から2026-11-15まで", (day(2026, 11, 1), day(2026, 11, 16)), "", "2026-11-01から2026-11-15まで"),
    ("since 2026-11-01", (day(2026, 11, 1), None), "", "since 2026-11-01"),
    ("Since 2026-11-01", (day(2026, 11, 1), None), "", "Since 2026-11-01"),
    ("before 2026-11-01", (None, day(2026, 11, 1)), "", "before 2026-11-01"),
    ("after 2026-11-01", (day(2026, 11, 2), None), "", "after 2026-11-01"),
    # modifiers work on any phrase
    ("since last week", (LAST_WEEK[0], None), "", "since last week"),
    ("before yesterday", (None, YESTERDAY[0]), "", "before yesterday"),
    ("after yesterday", (TODAY[0], None), "", "after yesterday"),
    ("上周以来", (LAST_WEEK[0], None), "", "上周以来"),
    ("昨天之后", (TODAY[0], None), "", "昨天之后"),
    ("昨天以后", (TODAY[0], None), "", "昨天以后"),
    ("上个月之前", (None, LAST_MONTH[0]), "", "上个月之前"),
    ("先週から", (LAST_WEEK[0], None), "", "先週から"),
    ("先月以降", (LAST_MONTH[0], None), "", "先月以降"),
    ("先週まで", (None, LAST_WEEK[1]), "", "先週まで"),
    ("昨日より前", (None, YESTERDAY[0]), "", "昨日より前"),
    # Chinese
    ("今天", TODAY, "", "今天"),
    ("昨天", YESTERDAY, "", "昨天"),
    ("前天", DAY_BEFORE, "", "前天"),
    ("大前天", THREE_DAYS_AGO, "", "大前天"),
    ("本周", THIS_WEEK, "", "本周"),
    ("这周", THIS_WEEK, "", "这周"),
    ("这个星期", THIS_WEEK, "", "这个星期"),
    ("上周", LAST_WEEK, "", "上周"),
    ("上星期", LAST_WEEK, "", "上星期"),
    ("上周末", LAST_WEEK, "", "上周末"),
    ("上上周", TWO_WEEKS_AGO, "", "上上周"),
    ("本月", THIS_MONTH, "", "本月"),
    ("这个月", THIS_MONTH, "", "这个月"),
    ("上个月", LAST_MONTH, "", "上个月"),
    ("上月", LAST_MONTH, "", "上月"),
    ("上上个月", TWO_MONTHS_AGO, "", "上上个月"),
    ("今年", THIS_YEAR, "", "今年"),
    ("去年", LAST_YEAR, "", "去年"),
    ("3天前", THREE_DAYS_AGO, "", "3天前"),
    ("３天前", THREE_DAYS_AGO, "", "３天前"),
    ("3 天前", THREE_DAYS_AGO, "", "3 天前"),
    ("三天前", THREE_DAYS_AGO, "", "三天前"),
    ("两天前", DAY_BEFORE, "", "两天前"),
    ("一天前", YESTERDAY, "", "一天前"),
    ("十天前", (day(2026, 11, 19), day(2026, 11, 20)), "", "十天前"),
    ("十三天前", (day(2026, 11, 16), day(2026, 11, 17)), "", "十三天前"),
    ("二十天前", (day(2026, 11, 9), day(2026, 11, 10)), "", "二十天前"),
    ("3天以前", THREE_DAYS_AGO, "", "3天以前"),
    ("2周前", TWO_WEEKS_AGO, "", "2周前"),
    ("两周前", TWO_WEEKS_AGO, "", "两周前"),
    ("一周前", LAST_WEEK, "", "一周前"),
    ("两个星期前", TWO_WEEKS_AGO, "", "两个星期前"),
    ("3个月前", THREE_MONTHS_AGO, "", "3个月前"),
    ("三个月前", THREE_MONTHS_AGO, "", "三个月前"),
    ("两年前", TWO_YEARS_AGO, "", "两年前"),
    ("最近7天", PAST_7_DAYS, "", "最近7天"),
    ("最近七天", PAST_7_DAYS, "", "最近七天"),
    ("近7天", PAST_7_DAYS, "", "近7天"),
    ("过去三天", PAST_3_DAYS, "", "过去三天"),
    ("最近7天内", PAST_7_DAYS, "", "最近7天内"),
    # Japanese
    ("今日", TODAY, "", "今日"),
    ("昨日", YESTERDAY, "", "昨日"),
    ("一昨日", DAY_BEFORE, "", "一昨日"),
    ("今週", THIS_WEEK, "", "今週"),
    ("先週", LAST_WEEK, "", "先週"),
    ("先々週", TWO_WEEKS_AGO, "", "先々週"),
    ("今月", THIS_MONTH, "", "今月"),
    ("先月", LAST_MONTH, "", "先月"),
    ("昨年", LAST_YEAR, "", "昨年"),
    ("一昨年", TWO_YEARS_AGO, "", "一昨年"),
    ("3日前", THREE_DAYS_AGO, "", "3日前"),
    ("三日前", THREE_DAYS_AGO, "", "三日前"),
    ("2週間前", TWO_WEEKS_AGO, "", "2週間前"),
    ("二週間前", TWO_WEEKS_AGO, "", "二週間前"),
    ("3ヶ月前", THREE_MONTHS_AGO, "", "3ヶ月前"),
    ("3か月前", THREE_MONTHS_AGO, "", "3か月前"),
    ("3カ月前", THREE_MONTHS_AGO, "", "3カ月前"),
    ("過去7日間", PAST_7_DAYS, "", "過去7日間"),
    # mixed with other words, anywhere in the query
    ("rate limit last week", LAST_WEEK, "rate limit", "last week"),
    ("last week rate limit", LAST_WEEK, "rate limit", "last week"),
    ("what changed yesterday in alpha", YESTERDAY, "what changed in alpha", "yesterday"),
    ("yesterday's deploy", YESTERDAY, "deploy", "yesterday"),
    ("alpha 3 days ago getUser", THREE_DAYS_AGO, "alpha getUser", "3 days ago"),
    ("上周的限流", LAST_WEEK, "限流", "上周"),
    ("限流3天前", THREE_DAYS_AGO, "限流", "3天前"),
    ("主分支昨天限流", YESTERDAY, "主分支 限流", "昨天"),
    ("getUser昨天", YESTERDAY, "getUser", "昨天"),
    ("alpha 去年 决策", LAST_YEAR, "alpha 决策", "去年"),
    ("先週のデプロイで障害", LAST_WEEK, "デプロイで障害", "先週"),
    ("今日にリリース", TODAY, "リリース", "今日"),
    ("障害3日前", THREE_DAYS_AGO, "障害", "3日前"),
    ("deploy 2026-11-03 alpha", (day(2026, 11, 3), day(2026, 11, 4)), "deploy alpha", "2026-11-03"),
    ("上周以来的限流", (LAST_WEEK[0], None), "限流", "上周以来"),
    # a calendar date with 前 (before it), not "13 days ago"
    ("11月13日前", (None, day(2026, 11, 13)), "", "11月13日前"),
]


@pytest.mark.parametrize(("query", "bounds", "text", "phrase"), CASES)
def test_parse_query(query: str, bounds: Bounds, text: str, phrase: str) -> None:
    parsed = parse_query(query, now=NOW)
    assert parsed == ParsedQuery(text=text, range=TimeRange(bounds[0], bounds[1], phrase))


@pytest.mark.parametrize(
    "query",
    [
        "rate limit",
        "",
        "   ",
        "todays",  # part of a longer word
        "yesterdays",
        "event-yesterday",  # an id
        "today-notes",
        "last weekend",
        "2026-02-30",  # not a date
        "2026-13-01",
        "2026-11-03T10:00",  # a datetime is not a day phrase
        "f-2026-11-03",
        "past 0 days",
        "99999999 days ago",  # out of range: left alone, no error
        "3 days",
        "days ago",
        "限流",
    ],
)
def test_no_phrase_leaves_query_alone(query: str) -> None:
    parsed = parse_query(query, now=NOW)
    assert parsed.range is None
    assert parsed.text == " ".join(query.split())
    assert parsed.ignored == ()


def test_only_the_first_phrase_applies_and_all_are_removed() -> None:
    parsed = parse_query("yesterday alpha last week 上周", now=NOW)
    assert parsed.range == TimeRange(*YESTERDAY, "yesterday")
    assert parsed.text == "alpha"
    assert parsed.ignored == ("last week", "上周")


def test_longer_phrase_at_the_same_place_wins() -> None:
    assert parse_query("一昨日", now=NOW).range == TimeRange(*DAY_BEFORE, "一昨日")
    assert parse_query("上上周", now=NOW).range == TimeRange(*TWO_WEEKS_AGO, "上上周")


def test_removing_a_phrase_cannot_leave_a_new_one_behind() -> None:
    parsed = parse_query("last today week", now=NOW)
    assert parsed.range == TimeRange(*TODAY, "today")
    assert parsed.text == ""
    assert parsed.ignored == ("last week",)
    # CJK phrases are replaced by a space, so their neighbours do not join.
    parsed = parse_query("昨昨天天", now=NOW)
    assert parsed.text == "昨 天"
    assert parse_query(parsed.text, now=NOW).range is None


def test_month_and_year_arithmetic_wraps() -> None:
    january = datetime(2026, 1, 15, 9, 0, tzinfo=TZ)
    assert parse_query("last month", now=january).range == TimeRange(
        day(2025, 12, 1), day(2026, 1, 1), "last month"
    )
    assert parse_query("13个月前", now=january).range == TimeRange(
        day(2024, 12, 1), day(2025, 1, 1), "13个月前"
    )
    assert parse_query("this month", now=datetime(2026, 12, 31, 23, 59, tzinfo=TZ)).range == (
        TimeRange(day(2026, 12, 1), day(2027, 1, 1), "this month")
    )


def test_week_starts_on_monday() -> None:
    monday = datetime(2026, 11, 23, 0, 0, tzinfo=TZ)
    assert parse_query("this week", now=monday).range == TimeRange(*THIS_WEEK, "this week")
    assert parse_query("last week", now=monday).range == TimeRange(*LAST_WEEK, "last week")


def test_ranges_use_the_timezone_of_now() -> None:
    utc_now = NOW.astimezone(timezone.utc)  # 07:30 UTC, still 2026-11-29
    late = datetime(2026, 11, 29, 23, 30, tzinfo=timezone(timedelta(hours=-5)))
    assert parse_query("today", now=utc_now).range == TimeRange(
        datetime(2026, 11, 29, tzinfo=timezone.utc), datetime(2026, 11, 30, tzinfo=timezone.utc), "today"
    )
    found = parse_query("today", now=late).range
    assert found is not None and found.since is not None
    assert found.since.isoformat() == "2026-11-29T00:00:00-05:00"


def test_days_follow_the_calendar_across_a_dst_change() -> None:
    zoneinfo = pytest.importorskip("zoneinfo")
    try:
        new_york = zoneinfo.ZoneInfo("America/New_York")
    except zoneinfo.ZoneInfoNotFoundError:
        pytest.skip("no time zone database")
    now = datetime(2026, 11, 2, 12, 0, tzinfo=new_york)  # DST ended 2026-11-01 02:00
    found = parse_query("yesterday", now=now).range
    assert found is not None and found.since is not None and found.until is not None
    assert found.since.isoformat() == "2026-11-01T00:00:00-04:00"
    assert found.until.isoformat() == "2026-11-02T00:00:00-05:00"
    # Same-tzinfo subtraction is wall-clock time in Python; compare in UTC.
    elapsed = found.until.astimezone(timezone.utc) - found.since.astimezone(timezone.utc)
    assert elapsed == timedelta(hours=25)


def test_naive_now_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        parse_query("today", now=datetime(2026, 11, 29, 15, 30))


def test_describe_and_contains() -> None:
    found = parse_query("last week", now=NOW).range
    assert found is not None
    assert found.describe() == (
        "2026-11-16T00:00:00+08:00 .. 2026-11-23T00:00:00+08:00 (last week)"
    )
    assert found.contains(day(2026, 11, 16))
    assert found.contains(datetime(2026, 11, 22, 23, 59, 59, tzinfo=TZ))
    assert not found.contains(day(2026, 11, 23))
    assert not found.contains(datetime(2026, 11, 15, 23, 59, tzinfo=TZ))
    open_range = parse_query("since 2026-11-01", now=NOW).range
    assert open_range is not None
    assert open_range.describe() == "2026-11-01T00:00:00+08:00 .. * (since 2026-11-01)"
    assert open_range.contains(datetime(2999, 1, 1, tzinfo=TZ))


# --- parse_time ------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-11-03", day(2026, 11, 3)),
        (" 2026-11-03 ", day(2026, 11, 3)),
        ("2026-11-03T14:00", datetime(2026, 11, 3, 14, 0, tzinfo=TZ)),
        ("2026-11-03 14:00:05", datetime(2026, 11, 3, 14, 0, 5, tzinfo=TZ)),
        ("2026-11-03T14:00:00+00:00", datetime(2026, 11, 3, 14, 0, tzinfo=timezone.utc)),
        ("2026-11-03T14:00:00Z", datetime(2026, 11, 3, 14, 0, tzinfo=timezone.utc)),
        ("today", TODAY[0]),
        ("yesterday", YESTERDAY[0]),
        ("last week", LAST_WEEK[0]),
        ("3 days ago", THREE_DAYS_AGO[0]),
        ("past 7 days", PAST_7_DAYS[0]),
        ("since 2026-11-01", day(2026, 11, 1)),
        ("2026-11-01..2026-11-15", day(2026, 11, 1)),
        ("昨天", YESTERDAY[0]),
        ("上周", LAST_WEEK[0]),
        ("3天前", THREE_DAYS_AGO[0]),
        ("先週", LAST_WEEK[0]),
        ("3日前", THREE_DAYS_AGO[0]),
    ],
)
def test_parse_time(value: str, expected: datetime) -> None:
    moment = parse_time(value, now=NOW)
    assert moment == expected
    assert moment.utcoffset() == expected.utcoffset()


@pytest.mark.parametrize(
    "value", ["", "soon", "yesterday alpha", "today yesterday", "2026-13-01", "2026-11-03T25:00"]
)
def test_parse_time_rejects_with_the_accepted_forms(value: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_time(value, now=NOW)
    message = str(caught.value)
    assert repr(value) in message
    assert "ISO date (2026-11-03)" in message and "3 days ago" in message and "上周" in message
    assert caught.value.exit_code == 2


def test_parse_time_rejects_a_range_without_a_start() -> None:
    with pytest.raises(UsageError, match="has no start"):
        parse_time("before 2026-11-01", now=NOW)


# --- properties ------------------------------------------------------------

PHRASE_SAMPLES = [case[0] for case in CASES if case[2] == ""]


@given(query=st.text(max_size=80))
def test_parse_query_never_raises_and_leaves_no_phrase(query: str) -> None:
    parsed = parse_query(query, now=NOW)
    assert parsed.text == " ".join(parsed.text.split())
    assert parse_query(parsed.text, now=NOW).range is None
    if parsed.range is not None:
        assert parsed.range.phrase in " ".join(query.split())
        if parsed.range.since is not None and parsed.range.until is not None:
            assert parsed.range.since < parsed.range.until


@given(
    query=st.lists(
        st.one_of(st.sampled_from(PHRASE_SAMPLES), st.text(max_size=6)), max_size=6
    ).map(" ".join)
)
def test_parse_query_on_phrase_rich_text(query: str) -> None:
    parsed = parse_query(query, now=NOW)
    assert parse_query(parsed.text, now=NOW).range is None
    if parsed.range is not None:
        assert parsed.range.phrase in " ".join(query.split())


WORDS = ["alpha", "rate", "limit", "getUser", "限流", "查询", "デプロイ", "障害", "f-2026"]


@given(
    before=st.lists(st.sampled_from(WORDS), max_size=3),
    phrase=st.sampled_from(PHRASE_SAMPLES),
    after=st.lists(st.sampled_from(WORDS), max_size=3),
)
def test_phrase_among_words_is_found_and_removed(
    before: list[str], phrase: str, after: list[str]
) -> None:
    parsed = parse_query(" ".join([*before, phrase, *after]), now=NOW)
    expected = parse_query(phrase, now=NOW).range
    assert parsed.range == expected
    assert parsed.text == " ".join([*before, *after])
    assert phrase.lower() not in parsed.text.lower()

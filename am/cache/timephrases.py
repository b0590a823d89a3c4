"""Find time phrases in a search query and turn them into a date range.

A query such as ``"last week rate limit"``, ``"上周的限流"`` or ``"先週のデプロイ"``
carries its own date range; ``parse_query`` takes the phrase out of the text
and returns the range, so the search narrows by date before it ranks by words.

Semantics, all computed in the timezone of ``now``:

- A day phrase (today, yesterday, 昨天, 前天, 一昨日, "3 days ago", 3天前, 3日前,
  an ISO date ``2026-11-03``) is that whole calendar day: [00:00, next day 00:00).
- Weeks start on Monday. "this week" / 本周 / 今週 is [this Monday, next Monday);
  "last week" / 上周 / 先週 is the Monday..Monday before it. "N weeks ago" /
  N周前 / N週間前 is the calendar week N weeks before this one, so "a week ago"
  is the same range as "last week". A trailing 末 (上周末, 今週末) is taken with
  the phrase and the range stays the whole week.
- Months and years are calendar months and years; "N months ago" / N个月前 /
  Nヶ月前 is the calendar month N months back, "N years ago" likewise.
- "past N days" / "last N days" / 最近N天(内) / 近N天 / 过去N天 / 過去N日(間) is
  [00:00 of the day N-1 days ago, now): today counts as one of the N days.
- An ISO range ``2026-11-01..2026-11-15`` (also ``to``, ``~``, 至, 到, から)
  includes both end days: [2026-11-01 00:00, 2026-11-16 00:00). Reversed ends
  are swapped.
- A modifier turns any phrase into an open range: "since X", X以来, X以降, Xから
  start at X's start; "after X", X之后, X以后 start at X's end; "before X",
  X之前, X以前, Xより前 end at X's start; Xまで ends at X's end.
- Only the first (leftmost) phrase narrows the range. Every recognised phrase is
  removed from the text, so none is searched for as a word; the later ones are
  listed in ``ParsedQuery.ignored`` for the caller to mention. A particle glued
  to a phrase (上周的, 先週の, 今日に, yesterday's) is removed with it.
- English phrases are case-insensitive and must stand apart from ASCII letters,
  digits, ``_`` and ``-`` (so an id such as ``event-yesterday`` is left alone);
  Chinese and Japanese phrases may be glued to any text (``限流3天前``).
- Numbers are digits (ASCII or full-width), English words one..ten and "a"/"an",
  or Chinese/Japanese numerals 一二两三四五六七八九十 up to 九十九.

Decisions: docs/decisions/recall.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from am.clock import wall
from am.cache.timecalendar import (  # noqa: F401 - the rules below name them
    _BARE_WEEKDAY,
    _CJK_DIGITS,
    _EN_MONTHS,
    _EN_NUMBERS,
    _EN_WEEKDAYS,
    _JA_WEEKDAYS,
    _PARTS,
    _UNIT_BUILDERS,
    _ZH_WEEKDAYS,
    _at_hour,
    _days_ago,
    _hours,
    _hours_ago,
    _midnight,
    _month_day,
    _month_start,
    _months_ago,
    _number,
    _part_of_day,
    _past_days,
    _past_h,
    _past_hours,
    _weekday_before,
    _weekday_in_week,
    _weekday_of,
    _weeks_ago,
    _years_ago,
)
from am.errors import UsageError

__all__ = ["TimeRange", "ParsedQuery", "parse_query", "parse_time"]


@dataclass(frozen=True)
class TimeRange:
    """A half-open range of moments, [since, until); None leaves that side open."""

    since: datetime | None
    until: datetime | None
    phrase: str
    # A calendar date ("August 11", "2026-11-03", "before 11月17日"): search ranks records by their
    # closeness to it instead of cutting at it (what was said that day is often about days before).
    soft: bool = field(default=False, compare=False)

    def describe(self) -> str:
        """Return the range and the phrase it came from, for people."""
        start = "*" if self.since is None else self.since.isoformat()
        end = "*" if self.until is None else self.until.isoformat()
        return f"{start} .. {end} ({self.phrase})"

    def contains(self, moment: datetime) -> bool:
        """Return whether a timezone-aware moment falls inside the range."""
        if self.since is not None and moment < self.since:
            return False
        return self.until is None or moment < self.until


@dataclass(frozen=True)
class ParsedQuery:
    """A search query split into its words and the date range it names."""

    text: str
    range: TimeRange | None
    ignored: tuple[str, ...] = ()


_Bounds = tuple[datetime | None, datetime | None]
_Builder = Callable[[re.Match[str], datetime], _Bounds]


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    build: _Builder


@dataclass(frozen=True)
class _Found:
    start: int
    end: int
    phrase: str
    since: datetime | None
    until: datetime | None
    raw: _Bounds = (None, None)  # the phrase's own range, before a modifier opened it
    modifier: str | None = None
    weak: bool = False  # a phrase only with a modifier or in a range (a bare weekday)
    absolute: bool = False  # a calendar date in words (August 11, 11月17日): ranked by closeness, not cut


# --- patterns --------------------------------------------------------------

# English phrases must not be part of a longer ASCII word or id.
_EN_BEFORE = r"(?<![0-9A-Za-z_-])"
_EN_AFTER = r"(?![0-9A-Za-z_-])"
_EN_NUM = r"[0-9]+|an?|one|two|three|four|five|six|seven|eight|nine|ten"
# The look-behind keeps "13" in "11月13日前" or "1.5天前" from being read as "3".
_CJK_NUM = (
    r"(?<![0-9０-９.月])"
    r"(?:[0-9０-９]+|[一二两三四五六七八九]?十[一二三四五六七八九]?|[一二两三四五六七八九十])"
)
_PREFIX = r"(?:" + _EN_BEFORE + r"(?P<pre>since|before|after|until|till)\s+)?"
_SUFFIX = r"(?P<suf>以来|以降|から|之后|以后|之前|以前|より前|まで|前)?"
# Particles that glue a phrase to the next word; removed with the phrase so
# "上周的限流" searches for "限流", not "的限流".
_PARTICLE = r"(?P<part>的|の|には|に|['’]s(?![0-9A-Za-z]))?"
_ISO_DATE = r"(?P<y{0}>[0-9]{{4}})-(?P<m{0}>[0-9]{{2}})-(?P<d{0}>[0-9]{{2}})"
_ISO_BEFORE = r"(?<![0-9A-Za-z_-])"
_ISO_AFTER = r"(?![0-9A-Za-z_:-])"


def _en(words: str) -> str:
    return _EN_BEFORE + words.replace(" ", r"\s+") + _EN_AFTER


def _fixed(build: Callable[[int, datetime], _Bounds], n: int) -> _Builder:
    return lambda _m, now: build(n, now)


def _ago(m: re.Match[str], now: datetime) -> _Bounds:
    unit = m["unit"].lower()
    if unit.startswith(("day", "天", "日")):
        key = "day"
    elif unit.startswith(("week", "周", "週", "星期", "礼拜", "个星期", "个礼拜")):
        key = "week"
    elif unit.startswith("year") or unit == "年":
        key = "year"
    else:
        key = "month"
    return _UNIT_BUILDERS[key](_number(m["n"]), now)


def _past(m: re.Match[str], now: datetime) -> _Bounds:
    return _past_days(_number(m["n"]), now)


def _iso_day(m: re.Match[str], suffix: str) -> date:
    return date(int(m["y" + suffix]), int(m["m" + suffix]), int(m["d" + suffix]))


def _iso(m: re.Match[str], now: datetime) -> _Bounds:
    day = _iso_day(m, "1")
    return _midnight(day, now.tzinfo), _midnight(day + timedelta(days=1), now.tzinfo)


def _iso_range(m: re.Match[str], now: datetime) -> _Bounds:
    first, last = sorted((_iso_day(m, "1"), _iso_day(m, "2")))
    return _midnight(first, now.tzinfo), _midnight(last + timedelta(days=1), now.tzinfo)


_EN_WD = r"(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_ZH_WD = r"(?:周|週|星期|礼拜|禮拜)(?P<zwd>[一二三四五六日天])"
_JA_WD = r"(?P<jwd>[月火水木金土日])曜日?"
# "每周一次" (once a week), "两周一": a bare 周 after a number or 每 is not a weekday.
_ZH_WD_ALONE = r"(?<![0-9０-９一二两三四五六七八九十每上下本这這个個])" + _ZH_WD
_EN_MON = (r"(?P<mon>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
           r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_EN_DOM = r"(?P<dom>[0-9]{1,2})(?:st|nd|rd|th)?"
_CJK_MON = r"(?P<mon>[0-9０-９]{1,2}|十[一二]?|[一二三四五六七八九])"
_CJK_DOM = r"(?P<dom>[0-9０-９]{1,2}|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九])"

_RANGE_JOIN = r"(?:\s*(?:\.\.|~|～|〜|至|到|から)\s*|\s+to\s+)"

_BODIES: list[tuple[str, _Builder]] = [
    # English
    (_en("the day before yesterday"), _fixed(_days_ago, 2)),
    (_en("today"), _fixed(_days_ago, 0)),
    (_en("yesterday"), _fixed(_days_ago, 1)),
    (_en("this week"), _fixed(_weeks_ago, 0)),
    (_en("last week"), _fixed(_weeks_ago, 1)),
    (_en("this month"), _fixed(_months_ago, 0)),
    (_en("last month"), _fixed(_months_ago, 1)),
    (_en("this year"), _fixed(_years_ago, 0)),
    (_en("last year"), _fixed(_years_ago, 1)),
    (_en(rf"(?P<n>{_EN_NUM}) (?P<unit>day|week|month|year)s? ago"), _ago),
    (_en(rf"(?:past|last) (?P<n>{_EN_NUM}) days?"), _past),
    (_en(rf"(?P<n>{_EN_NUM}) (?:hours?|hrs?) ago"), _hours),
    (_en(rf"(?:past|last) (?P<n>{_EN_NUM}) (?:hours?|hrs?)"), _past_h),
    (_en("last night|yesterday night"), _part_of_day(1, "night")),
    (_en("tonight|this evening"), _part_of_day(0, "evening")),
    (_en("this morning"), _part_of_day(0, "morning")),
    (_en("this afternoon"), _part_of_day(0, "afternoon")),
    (_en("yesterday morning"), _part_of_day(1, "morning")),
    (_en("yesterday afternoon"), _part_of_day(1, "afternoon")),
    (_en("yesterday evening"), _part_of_day(1, "evening")),
    # One rule for every language: "last Tuesday" is 上周二 and 先週の火曜日, last calendar week's (issue 35.4).
    (_en("last " + _EN_WD), _weekday_in_week(1)),
    (_en("this " + _EN_WD), _weekday_in_week(0)),
    (_en(_EN_WD), _BARE_WEEKDAY),
    (_en(_EN_MON + " " + _EN_DOM + r"(?:,? (?P<year>[0-9]{4}))?"), _month_day),
    (_en(_EN_DOM + " (?:of )?" + _EN_MON + r"(?:,? (?P<year>[0-9]{4}))?"), _month_day),
    # Chinese and Japanese (今年 and 去年 are written the same in both)
    ("今天|今日|本日", _fixed(_days_ago, 0)),
    ("昨天|昨日", _fixed(_days_ago, 1)),
    ("前天|一昨日|おととい", _fixed(_days_ago, 2)),
    ("大前天", _fixed(_days_ago, 3)),
    ("(?:本周|这周|这个星期|这星期|本星期|今週)末?", _fixed(_weeks_ago, 0)),
    ("(?:上周|上个星期|上星期|先週)末?", _fixed(_weeks_ago, 1)),
    ("(?:上上周|上上个?星期|先々週|先先週)末?", _fixed(_weeks_ago, 2)),
    ("本月|这个月|今月", _fixed(_months_ago, 0)),
    ("上个月|上月|先月", _fixed(_months_ago, 1)),
    ("上上个?月|先々月|先先月", _fixed(_months_ago, 2)),
    ("今年|本年", _fixed(_years_ago, 0)),
    ("去年|昨年", _fixed(_years_ago, 1)),
    ("一昨年|おととし", _fixed(_years_ago, 2)),
    (
        rf"(?P<n>{_CJK_NUM})\s*"
        r"(?P<unit>天|日|个?星期|个?礼拜|周|週間?|个月|[ヶかカヵケ箇]月間?|年)"
        r"\s*(?:以前|之前|前)",
        _ago,
    ),
    (rf"(?:最近|过去|過去|直近|近)\s*(?P<n>{_CJK_NUM})\s*[天日]間?(?:以内|之内|内)?", _past),
    (rf"(?P<n>{_CJK_NUM})\s*(?:个|個)?(?:小时|小時|钟头|鐘頭|時間)\s*(?:以前|之前|前)", _hours),
    (rf"(?:最近|过去|過去|直近|近)\s*(?P<n>{_CJK_NUM})\s*(?:个|個)?(?:小时|小時|時間)(?:以内|之内|内)?", _past_h),
    ("昨晚|昨夜|昨晩|昨天晚上|昨天夜里|昨天夜裡|昨日の夜|昨日の晩", _part_of_day(1, "night")),
    ("今早|今晨|今朝|今天早上|今天上午|今日の朝|今日の午前", _part_of_day(0, "morning")),
    ("今天下午|今日の午後", _part_of_day(0, "afternoon")),
    ("今晚|今夜|今晩|今天晚上|今日の夜", _part_of_day(0, "evening")),
    ("昨天早上|昨天上午|昨日の朝|昨日の午前", _part_of_day(1, "morning")),
    ("昨天下午|昨日の午後", _part_of_day(1, "afternoon")),
    ("(?:上上个?|上上個)" + _ZH_WD, _weekday_in_week(2)),
    ("(?:上个?|上個)" + _ZH_WD, _weekday_in_week(1)),
    ("(?:本|这个?|這個?)" + _ZH_WD, _weekday_in_week(0)),
    (_ZH_WD_ALONE, _BARE_WEEKDAY),
    ("(?:先々週|先先週)の?" + _JA_WD, _weekday_in_week(2)),
    ("先週の?" + _JA_WD, _weekday_in_week(1)),
    ("今週の?" + _JA_WD, _weekday_in_week(0)),
    (_JA_WD, _BARE_WEEKDAY),
    (r"(?<![0-9０-９])(?:(?P<year>[0-9]{4})\s*年\s*)?" + _CJK_MON + r"\s*月\s*" + _CJK_DOM + r"\s*[日号號](?!曜)", _month_day),
    # ISO dates
    (
        _ISO_BEFORE + _ISO_DATE.format("1") + _RANGE_JOIN + _ISO_DATE.format("2")
        + r"(?:まで)?" + _ISO_AFTER,
        _iso_range,
    ),
    (_ISO_BEFORE + _ISO_DATE.format("1") + _ISO_AFTER, _iso),
]  # fmt: skip

# Every rule needs a digit, one of these English words, or a non-ASCII character; a query
# without any skips compiling the rules (~50 ms, paid by every `am search` process otherwise).
_MAY_HOLD_A_PHRASE = re.compile(r"[0-9]|day|week|month|year|hour|night|morning|evening|afternoon|[^\x00-\x7f]",
                                re.IGNORECASE)
_EN_TRIGGERS = ("day", "week", "month", "year", "hour", "hr", "night", "evening", "morning", "afternoon")
_DIGIT = re.compile(r"[0-9]")


def _trigger(body: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """Return what a rule's match must hold: one of these characters, or one of these English words.

    Every Chinese or Japanese rule's match holds one of the characters its pattern spells out
    (a unit, 月, 日, 周, 前, ...; look-behinds are not matched text), every English rule's one
    of the words its alternatives spell (a weekday holds "day"), and a date or ISO rule a digit
    ("digit"). A query holding none of them cannot match the rule, so it is not compiled for that
    query (issue 39: compiling all 59 cost 31-51 ms a Chinese query, ~50 ms an English one).
    """
    if body.startswith((_EN_BEFORE, _ISO_BEFORE)):
        if "(?P<dom>" in body or "(?P<y1>" in body:
            return frozenset(), ("digit",)
        spelled = re.sub(r"\(\?P<\w+>|\(\?<!\[[^\]]*\]\)|\(\?!\[[^\]]*\]\)", "", body).lower()
        return frozenset(), tuple(w for w in _EN_TRIGGERS if w in spelled)
    spelled = re.sub(r"\(\?<!\[[^\]]*\]\)", "", body)
    return frozenset(c for c in spelled if ord(c) > 0x7F), ()


_TRIGGERS = [_trigger(body) for body, _ in _BODIES]
_COMPILED: dict[int, _Rule] = {}


def _rule(n: int) -> _Rule:
    """Return rule ``n``, compiling it on first use."""
    rule = _COMPILED.get(n)
    if rule is None:
        body, build = _BODIES[n]
        rule = _COMPILED[n] = _Rule(re.compile(_PREFIX + f"(?:{body})" + _SUFFIX + _PARTICLE, re.IGNORECASE), build)
    return rule


def _rules(text: str) -> list[_Rule]:
    """Return the rules that may match ``text``, each compiled only when its trigger occurs in it."""
    chars = frozenset(text)
    lower = text.lower()
    digit = _DIGIT.search(text) is not None
    return [_rule(n) for n, (cjk, words) in enumerate(_TRIGGERS)
            if (cjk & chars) or any(digit if w == "digit" else w in lower for w in words)]


_SINCE_START = {"since", "以来", "以降", "から"}
_SINCE_END = {"after", "之后", "以后"}
_UNTIL_START = {"before", "之前", "以前", "より前", "前"}
_UNTIL_END = {"まで", "until", "till"}


def _modify(modifier: str, since: datetime | None, until: datetime | None) -> _Bounds:
    modifier = modifier.lower()
    if modifier in _SINCE_START:
        return since, None
    if modifier in _SINCE_END:
        return until, None
    if modifier in _UNTIL_START:
        return None, since
    assert modifier in _UNTIL_END
    return None, until


def _evaluate(rule: _Rule, m: re.Match[str], now: datetime) -> _Found | None:
    try:
        since, until = rule.build(m, now)
    except (ValueError, OverflowError, KeyError):
        # Not a real date (2026-02-30, 99999 days ago): the words stay in the query.
        return None
    raw = (since, until)
    modifier = m["pre"] or m["suf"]
    if modifier:
        since, until = _modify(modifier, since, until)
    phrase_end = m.end() if m["part"] is None else m.start("part")
    return _Found(m.start(), m.end(), m.string[m.start() : phrase_end], since, until, raw,
                  modifier.lower() if modifier else None, weak=rule.build is _BARE_WEEKDAY and not modifier,
                  absolute=rule.build is _month_day)


# Two phrases joined into one range: "between X and Y", "from X to Y", "since X until Y", "X到Y", "XからYまで".
_JOIN_WORD = re.compile(r"\s*(?:and|to|until|till|through|thru|-|–|—|~|～|〜|至|到|から)?\s*\Z", re.IGNORECASE)
_JOIN_LEAD = re.compile(r"(?:(?<![0-9A-Za-z_-])(?:between|from)\s+|[从從自])\Z", re.IGNORECASE)


# A part of a day right after a day phrase: "last Tuesday evening", "Tuesday night", 上周二晚上, 先週の火曜日の夜.
_PART_AFTER = (r"(?:\s+(?P<en>morning|afternoon|evening|night)(?![0-9A-Za-z_-])"
               r"|(?P<zh>早上|上午|下午|晚上|夜里|夜裡|晚)|の?(?P<ja>朝|午前|午後|夜|晩))")
_PART_COMPILED: list[re.Pattern[str]] = []  # compiled on the first day phrase, not at import
_PART_NAMES = {"早上": "morning", "上午": "morning", "下午": "afternoon", "晚上": "evening", "夜里": "night",
               "夜裡": "night", "晚": "evening", "朝": "morning", "午前": "morning", "午後": "afternoon",
               "夜": "night", "晩": "evening"}


def _with_part(text: str, hit: _Found) -> _Found:
    """Return a one-day phrase narrowed to the part of the day that follows it (one range), or the phrase."""
    since, until = hit.raw
    if since is None or until is None or hit.modifier is not None or not (20 <= (until - since).total_seconds()
                                                                          / 3600 <= 26):
        return hit
    if not _PART_COMPILED:
        _PART_COMPILED.append(re.compile(_PART_AFTER, re.IGNORECASE))
    m = _PART_COMPILED[0].match(text, hit.start + len(hit.phrase))
    if m is None:
        return hit
    part = (m["en"] or "").lower() or _PART_NAMES[m["zh"] or m["ja"]]
    start, end = _PARTS[part]
    bounds = (_at_hour(since, start), _at_hour(since, end))
    return _Found(hit.start, m.end(), text[hit.start : m.end()], *bounds, bounds, None, absolute=hit.absolute)


def _join(text: str, found: list[_Found]) -> list[_Found]:
    """Merge neighbouring phrases that name the two ends of one range, and a day with its part of the day."""
    out: list[_Found] = []
    for hit in (_with_part(text, h) for h in found):
        prev = out[-1] if out else None
        if prev is not None and (joined := _joined(text, prev, hit)) is not None:
            out[-1] = joined
        else:
            out.append(hit)
    return [hit for hit in out if not hit.weak]


def _joined(text: str, a: _Found, b: _Found) -> _Found | None:
    gap = text[a.end : b.start]
    if _JOIN_WORD.match(gap) is None or None in a.raw or None in b.raw:
        return None
    word = gap.strip().lower()
    lead = _JOIN_LEAD.search(text, 0, a.start) if a.modifier is None else None
    if word:
        # "X and Y" is a range only after "between"; "X to Y", "X到Y" are ranges as they stand.
        if word == "and" and (lead is None or not lead.group(0).lower().startswith("between")):
            return None
        ok = a.modifier in (None, *_SINCE_START) and b.modifier in (None, *_UNTIL_END)
    else:
        # Only the modifiers join: "since Monday until Friday", "先週から今週まで", "月曜日から金曜日".
        ok = a.modifier in _SINCE_START and b.modifier in (None, *_UNTIL_END)
    if not ok:
        return None
    start = lead.start() if lead is not None else a.start
    low, high = sorted([a.raw, b.raw], key=lambda r: r[0])  # type: ignore[arg-type, return-value]
    since, until = low[0], max(low[1], high[1])  # type: ignore[type-var]
    return _Found(start, b.end, text[start : b.start + len(b.phrase)], since, until, (since, until), None,
                  absolute=a.absolute and b.absolute)


def _scan(text: str, now: datetime) -> list[_Found]:
    if not _MAY_HOLD_A_PHRASE.search(text):
        return []
    found = [
        hit
        for rule in _rules(text)
        for m in rule.pattern.finditer(text)
        if (hit := _evaluate(rule, m, now)) is not None
    ]
    # Leftmost first, and of two at the same place the longer ("上上周", not "上周").
    found.sort(key=lambda hit: (hit.start, -hit.end))
    chosen: list[_Found] = []
    for hit in found:
        if not chosen or hit.start >= chosen[-1].end:
            chosen.append(hit)
    return chosen


def _require_aware(now: datetime) -> None:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"now must be timezone-aware, got {now.isoformat()}")


def parse_query(query: str, *, now: datetime) -> ParsedQuery:
    """Split a search query into its words and the date range its first time phrase names."""
    _require_aware(now)
    text = " ".join(query.split())
    applied: TimeRange | None = None
    ignored: list[str] = []
    # Removing a phrase can bring two pieces together into a new one
    # ("last today week"), so scan again until nothing is left.
    while found := _join(text, _scan(text, now)):
        pieces: list[str] = []
        position = 0
        for hit in found:
            # A space, not nothing: "主分支昨天限流" must stay two words.
            pieces += [text[position : hit.start], " "]
            position = hit.end
            if applied is None:
                applied = TimeRange(hit.since, hit.until, hit.phrase, soft=hit.absolute)
            else:
                ignored.append(hit.phrase)
        pieces.append(text[position:])
        text = " ".join("".join(pieces).split())
    return ParsedQuery(text=text, range=applied, ignored=tuple(ignored))


_ACCEPTED = (
    "use an ISO date (2026-11-03), an ISO datetime (2026-11-03T14:00:00+08:00), "
    "or one time phrase: today, yesterday, this/last week, this/last month, "
    "this/last year, 3 days ago, 2 weeks ago, past 7 days, since 2026-11-01, "
    "昨天, 上周, 上个月, 3天前, 最近7天, 昨日, 先週, 先月, 3日前"
)


def parse_time(value: str, *, now: datetime) -> datetime:
    """Read a --since/--until/--at value: an ISO date or datetime, or one time phrase's start."""
    _require_aware(now)
    stripped = value.strip()
    if re.match(r"[0-9]{4}", stripped):
        try:
            moment = datetime.fromisoformat(stripped)
        except ValueError:
            pass
        else:
            # A date or a naive datetime means wall-clock time where the user is.
            return moment if moment.tzinfo is not None else wall(moment, now.tzinfo)
    parsed = parse_query(stripped, now=now)
    if parsed.range is None or parsed.text or parsed.ignored:
        raise UsageError(f"cannot read {value!r} as a time", hint=_ACCEPTED)
    if parsed.range.since is None:
        raise UsageError(
            f"{value!r} has no start to use as a time",
            hint="name the moment itself, e.g. 2026-11-01 instead of before 2026-11-01",
        )
    return parsed.range.since

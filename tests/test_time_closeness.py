"""Time as people mean it (issue 35.4), and time phrases compiled only when a query may hold them (issue 39).

A date in words ranks by closeness instead of cutting; a weekday and a part of the day are one
range; "last Tuesday" and 上周二 are the same day.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from am.cache import timephrases
from am.cache.search import search
from am.cache.timephrases import parse_query
from am.records.ids import format_timestamp
from am.records.model import Fact

CST = timezone(timedelta(hours=8))
NOW = datetime(2026, 11, 29, 15, 30, tzinfo=CST)  # a Sunday


def at(day: int, hour: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, tzinfo=CST)


@pytest.mark.parametrize(("query", "bounds"), [
    ("last Tuesday evening", (at(17, 18), at(18))),
    ("上周二晚上", (at(17, 18), at(18))),
    ("先週の火曜日の夜", (at(17, 18), at(18, 6))),
    ("Tuesday night", (at(24, 18), at(25, 6))),  # a bare weekday with its part of the day is a phrase
    ("this Friday morning", (at(27, 6), at(27, 12))),
    ("Nov 17 afternoon", (at(17, 12), at(17, 18))),
])
def test_a_weekday_and_a_part_of_the_day_are_one_range(query: str, bounds: tuple[datetime, datetime]) -> None:
    parsed = parse_query(query, now=NOW)
    assert parsed.range is not None and (parsed.range.since, parsed.range.until) == bounds
    assert parsed.text == "" and parsed.ignored == ()


@pytest.mark.parametrize("day", ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])
def test_last_weekday_is_the_same_day_in_every_language(day: str) -> None:
    zh = "一二三四五六日"[timephrases._EN_WEEKDAYS.index(day)]
    ja = "月火水木金土日"[timephrases._EN_WEEKDAYS.index(day)]
    for now in (NOW, NOW - timedelta(days=3), NOW - timedelta(days=6)):
        ranges = [parse_query(q, now=now).range for q in (f"last {day}", f"上周{zh}", f"先週の{ja}曜日")]
        bounds = {(r.since, r.until) for r in ranges if r is not None}
        assert len(bounds) == 1 and None not in ranges, (day, now)


def test_the_rules_are_compiled_only_for_a_query_that_may_hold_them() -> None:
    code = ("from datetime import datetime, timezone\n"
            "from am.cache import timephrases as t\n"
            "now = datetime(2026, 11, 29, tzinfo=timezone.utc)\n"
            "t.parse_query('限流 查询', now=now); print(len(t._COMPILED))\n"
            "t.parse_query('限流 上周', now=now); print(len(t._COMPILED))\n"
            "t.parse_query('hook changes', now=now); print(len(t._COMPILED))\n"
            "t.parse_query('last week deploys', now=now); print(len(t._COMPILED), len(t._BODIES))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "0"
    assert 0 < int(out[1]) < 20  # of 59
    assert out[2] == out[1]
    assert int(out[3]) < int(out[4]) // 2


def _fact(n: int, body: str, created: datetime) -> Fact:
    return Fact(id=f"f-{created.astimezone(timezone.utc):%Y%m%d-%H%M}-{n:06x}", topics=("project-trip",),
                body=body + "\n", created=format_timestamp(created))


def test_a_date_in_words_ranks_by_closeness_and_keeps_that_day(vault: Any) -> None:
    # The August 11 case: said on the 11th about a trip two weeks before; "before August 11" cut it.
    said = _fact(1, "We came back from the camping trip two weeks ago.", datetime(2026, 8, 11, 10, tzinfo=CST))
    early = _fact(2, "Packing for the camping trip.", datetime(2026, 7, 20, 9, tzinfo=CST))
    later = _fact(3, "Photos of the camping trip are up.", datetime(2026, 9, 30, 9, tzinfo=CST))
    vault.import_records([said, early, later], source="test")
    index = vault.cache()
    moment = datetime(2026, 10, 1, tzinfo=CST)
    before = [h.id for h in search(index, "camping trip before August 11", at=moment, notes=False).hits]
    assert set(before[:2]) == {said.id, early.id} and before[2] == later.id
    on = [h.id for h in search(index, "camping trip on August 11", at=moment, notes=False).hits]
    assert on[0] == said.id and set(on) == {said.id, early.id, later.id}
    # An ISO date is typed as a filter, and still cuts.
    assert [h.id for h in search(index, "camping trip 2026-08-11", at=moment, notes=False).hits] == [said.id]

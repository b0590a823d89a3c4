"""Weekdays, parts of a day, month-day dates, hours and ranges, in English, Chinese and Japanese.

A fixed clock: Sunday 2026-11-29 15:30 at +08:00 (so "last Friday", 上周五 and 先週の金曜日 are
the Friday of last calendar week, the 20th: one rule, issue 35.4; "since Friday" is the 27th). The same moment is given to the
command line as AM_NOW.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from am.cache.timephrases import parse_query, parse_time
from tests.conftest import subprocess_env

TZ = timezone(timedelta(hours=8))
NOW = datetime(2026, 11, 29, 15, 30, tzinfo=TZ)
AM_NOW = NOW.isoformat()


def at(month: int, dom: int, hour: int = 0, year: int = 2026) -> datetime:
    return datetime(year, month, dom, hour, tzinfo=TZ)


def whole_day(month: int, dom: int, year: int = 2026) -> tuple[datetime, datetime]:
    start = at(month, dom, year=year)
    return start, start + timedelta(days=1)


FRIDAY_27 = whole_day(11, 27)
FRIDAY_20 = whole_day(11, 20)
LAST_NIGHT = (at(11, 28, 18), at(11, 29, 6))
THIS_MORNING = (at(11, 29, 6), at(11, 29, 12))
NOV_17 = whole_day(11, 17)
TWO_HOURS_AGO = (at(11, 29, 13), at(11, 29, 14))
THREE_HOURS_AGO = (at(11, 29, 12), at(11, 29, 13))
SINCE_MONDAY = (at(11, 23), None)
MON_TO_WED = (at(11, 23), at(11, 26))

# (phrase, (since, until)); each phrase must be the whole query and be removed from it.
CASES = [
    # weekdays
    ("last Friday", FRIDAY_20),  # as 上周五 (issue 35.4: one rule; it was the 27th, two days ago)
    ("last Sunday", whole_day(11, 22)),  # last calendar week's
    ("since Sunday", (at(11, 29), None)),  # a weekday with a modifier: the latest one, maybe today
    ("since Friday", (FRIDAY_27[0], None)),
    ("this Monday", whole_day(11, 23)),
    ("上周五", FRIDAY_20),
    ("上星期五", FRIDAY_20),
    ("上个礼拜五", FRIDAY_20),
    ("上上周一", whole_day(11, 9)),
    ("本周一", whole_day(11, 23)),
    ("周五以来", (FRIDAY_27[0], None)),
    ("星期天以后", (at(11, 30), None)),
    ("先週の金曜日", FRIDAY_20),
    ("先週金曜日", FRIDAY_20),
    ("今週の月曜日", whole_day(11, 23)),
    ("金曜日から", (FRIDAY_27[0], None)),
    ("金曜まで", (None, FRIDAY_27[1])),
    # parts of a day (morning 6-12, afternoon 12-18, evening 18-24, night 18-6)
    ("last night", LAST_NIGHT),
    ("this morning", THIS_MORNING),
    ("this afternoon", (at(11, 29, 12), at(11, 29, 18))),
    ("tonight", (at(11, 29, 18), at(11, 30))),
    ("yesterday morning", (at(11, 28, 6), at(11, 28, 12))),
    ("昨晚", LAST_NIGHT),
    ("昨天晚上", LAST_NIGHT),
    ("今早", THIS_MORNING),
    ("今天上午", THIS_MORNING),
    ("昨天下午", (at(11, 28, 12), at(11, 28, 18))),
    ("今朝", THIS_MORNING),
    ("昨夜", LAST_NIGHT),
    ("昨日の夜", LAST_NIGHT),
    ("今日の午後", (at(11, 29, 12), at(11, 29, 18))),
    # month and day (the latest such day not after today, unless a year is given)
    ("Nov 17", NOV_17),
    ("November 17", NOV_17),
    ("Nov. 17th", NOV_17),
    ("17 Nov", NOV_17),
    ("Nov 17, 2025", whole_day(11, 17, 2025)),
    ("Dec 25", whole_day(12, 25, 2025)),  # December 2026 has not come yet
    ("11月17日", NOV_17),
    ("11月17号", NOV_17),
    ("2025年11月17日", whole_day(11, 17, 2025)),
    ("十一月十七日", NOV_17),
    # hours (the clock hour, as "3 days ago" is the calendar day)
    ("2 hours ago", TWO_HOURS_AGO),
    ("an hour ago", (at(11, 29, 14), at(11, 29, 15))),
    ("past 3 hours", (NOW - timedelta(hours=3), NOW)),
    ("3小时前", THREE_HOURS_AGO),
    ("三个小时前", THREE_HOURS_AGO),
    ("最近3小时", (NOW - timedelta(hours=3), NOW)),
    ("3時間前", THREE_HOURS_AGO),
    ("過去3時間", (NOW - timedelta(hours=3), NOW)),
    # ranges
    ("since Monday", SINCE_MONDAY),
    ("周一以来", SINCE_MONDAY),
    ("月曜日から", SINCE_MONDAY),
    ("月曜日以降", SINCE_MONDAY),
    ("between Monday and Wednesday", MON_TO_WED),
    ("from Monday to Wednesday", MON_TO_WED),
    ("since Monday until Wednesday", MON_TO_WED),
    ("between Nov 3 and Nov 5", (at(11, 3), at(11, 6))),
    ("周一到周三", MON_TO_WED),
    ("从周一到周三", MON_TO_WED),
    ("11月3日至11月5日", (at(11, 3), at(11, 6))),
    ("月曜日から水曜日まで", MON_TO_WED),
    ("先週から今週まで", (at(11, 16), at(11, 30))),
    ("between Wednesday and Monday", MON_TO_WED),  # reversed ends are swapped
]


@pytest.mark.parametrize(("phrase", "bounds"), CASES)
def test_phrase_resolves_to_its_range(phrase: str, bounds: tuple[datetime, datetime | None]) -> None:
    parsed = parse_query(phrase, now=NOW)
    assert parsed.range is not None, phrase
    assert (parsed.range.since, parsed.range.until) == bounds
    assert parsed.text == ""


@pytest.mark.parametrize(("query", "text", "phrase"), [
    ("hook changes last Friday", "hook changes", "last Friday"),
    ("上周五的部署", "部署", "上周五"),
    ("限流 昨晚", "限流", "昨晚"),
    ("先週の金曜日のデプロイ", "デプロイ", "先週の金曜日"),
    ("deploy Nov 17 alpha", "deploy alpha", "Nov 17"),
    ("what broke 2 hours ago", "what broke", "2 hours ago"),
])
def test_phrase_among_words(query: str, text: str, phrase: str) -> None:
    parsed = parse_query(query, now=NOW)
    assert parsed.range is not None and parsed.range.phrase == phrase
    assert parsed.text == text


@pytest.mark.parametrize("query", [
    # A weekday alone is what a question may be about ("are deploys allowed on Friday?"): no phrase.
    "Friday", "are deploys allowed on Friday", "周五可以发布吗", "金曜日のデプロイ", "星期天",
    "每周一次",  # "once a week": 周一 after a number or 每 is no weekday
    "两周一",
    "last weekend",
    "fridays",
    "may",  # a month needs its day
    "Nov 31",  # no such day: the words stay
    "between Monday",
    "tests and Friday deploy",  # "and" joins only after "between"
])
def test_not_a_phrase_or_not_a_range(query: str) -> None:
    parsed = parse_query(query, now=NOW)
    assert parsed.range is None, query
    assert parsed.text == " ".join(query.split())


def test_parse_time_takes_the_start_of_new_phrases() -> None:
    assert parse_time("last Friday", now=NOW) == FRIDAY_20[0]
    assert parse_time("上周五", now=NOW) == FRIDAY_20[0]
    assert parse_time("先週の金曜日", now=NOW) == FRIDAY_20[0]
    assert parse_time("last night", now=NOW) == LAST_NIGHT[0]
    assert parse_time("2 hours ago", now=NOW) == TWO_HOURS_AGO[0]
    assert parse_time("11月17日", now=NOW) == NOV_17[0]
    assert parse_time("between Monday and Wednesday", now=NOW) == MON_TO_WED[0]


def _am(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AM_NOW": AM_NOW, "AM_ACTOR": "tester"}
    return subprocess.run([sys.executable, "-m", "am.cli.main", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def dated_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A vault with one fact written at each of a few moments (AM_NOW sets each creation time)."""
    root = tmp_path_factory.mktemp("timewords") / "v"
    env = {**os.environ, "AM_ACTOR": "tester", "AM_HOME": str(root.parent / "home")}
    subprocess.run([sys.executable, "-m", "am.cli.main", "init", str(root)], env=env, check=True,
                   capture_output=True)
    written = [("2026-11-20T10:00:00+08:00", "deploy of the billing job on Friday", "fact-fri20"),
               ("2026-11-27T11:00:00+08:00", "deploy of the search API on Friday", "fact-fri27"),
               ("2026-11-28T23:00:00+08:00", "deploy rolled back at night", "fact-night"),
               ("2026-11-29T13:20:00+08:00", "deploy finished two hours ago", "fact-hour")]
    for moment, text, fid in written:
        subprocess.run([sys.executable, "-m", "am.cli.main", "fact", "add", text, "--topic", "project-x",
                        "--create-topic", "--id", fid], cwd=root, env={**env, "AM_NOW": moment}, check=True,
                       capture_output=True)
    return root


@pytest.mark.parametrize(("phrase", "expected"), [
    ("last Friday", ["fact-fri20"]), ("上周五", ["fact-fri20"]), ("先週の金曜日", ["fact-fri20"]),
    ("last night", ["fact-night"]), ("昨晚", ["fact-night"]), ("昨夜", ["fact-night"]),
    ("2 hours ago", ["fact-hour"]), ("2小时前", ["fact-hour"]), ("2時間前", ["fact-hour"]),
    ("since Friday", ["fact-fri27", "fact-hour", "fact-night"]),
])
def test_search_narrows_by_each_phrase(dated_vault: Path, phrase: str, expected: list[str]) -> None:
    out = _am("search", "deploy", phrase, "--format", "json", cwd=dated_vault)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert sorted(h["id"] for h in data["hits"] if h["type"] == "fact") == expected


@pytest.mark.parametrize(("phrase", "expected"), [
    ("Nov 20", ["fact-fri20"]), ("11月20日", ["fact-fri20"]),
    ("between Nov 20 and Nov 27", ["fact-fri20", "fact-fri27"]),
    ("before Nov 27", ["fact-fri20", "fact-fri27"]),  # the named day itself stays in (the August 11 case)
])
def test_a_calendar_date_ranks_by_closeness_instead_of_cutting(dated_vault: Path, phrase: str,
                                                               expected: list[str]) -> None:
    # Issue 35.4: a date in words was a cut ("before August 11" lost what was said on August 11 about
    # two weeks earlier); now the records of that day (or range) come first and the others follow.
    out = _am("search", "deploy", phrase, "--format", "json", cwd=dated_vault)
    assert out.returncode == 0, out.stderr
    facts = [h["id"] for h in json.loads(out.stdout)["hits"] if h["type"] == "fact"]
    assert sorted(facts[:len(expected)]) == expected
    assert sorted(facts) == ["fact-fri20", "fact-fri27", "fact-hour", "fact-night"]


def test_recognised_phrase_that_finds_nothing_says_so(dated_vault: Path) -> None:
    out = _am("search", "deploy", "this morning", cwd=dated_vault)
    assert out.returncode == 0, out.stderr
    assert "this morning" in out.stdout and "nothing" in out.stdout
    assert "4 records match without it, shown below" in out.stdout
    data = json.loads(_am("search", "deploy", "今朝", "--format", "json", cwd=dated_vault).stdout)
    assert data["range"]["phrase"] == "今朝" and data["without_range"] == 4
    assert sorted(h["id"] for h in data["hits"]) == ["fact-fri20", "fact-fri27", "fact-hour", "fact-night"]
    assert "nothing in that range matches" in data["notes"][0]
    # A phrase alone (nothing to search for besides it) that finds nothing lists nothing.
    data = json.loads(_am("search", "tonight", "--format", "json", cwd=dated_vault).stdout)
    assert data["hits"] == [] and "nothing in that range" in data["notes"][0]


def test_sort_time_lists_newest_first(dated_vault: Path) -> None:
    data = json.loads(_am("search", "deploy", "--sort", "time", "--format", "json", cwd=dated_vault).stdout)
    assert [h["id"] for h in data["hits"] if h["type"] == "fact"] == ["fact-hour", "fact-night", "fact-fri27",
                                                                       "fact-fri20"]


@pytest.fixture(scope="module")
def hand_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A vault whose every commit was made by hand at a fixed moment (am's own commits take the real clock)."""
    root = tmp_path_factory.mktemp("timewords-hand") / "v"
    root.mkdir()

    def git(*args: str, when: str | None = None) -> None:
        env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
               "GIT_COMMITTER_EMAIL": "t@x"}
        if when:
            env.update(GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when)
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    (root / ".am").mkdir()
    (root / ".am" / "vault.yml").write_text("name: hand\nformat: 1\n")
    (root / ".gitignore").write_text(".am/cache/\n")
    git("add", "-A")
    git("commit", "-q", "-m", "vault", when="2026-11-01T09:00:00+08:00")
    for moment, fid in (("2026-11-20T10:00:00+08:00", "fact-fri20"), ("2026-11-28T23:00:00+08:00", "fact-night"),
                        ("2026-11-29T13:20:00+08:00", "fact-hour")):
        folder = root / "facts" / "2026" / "11" / moment[8:10]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{fid}.md").write_text(f"---\ntype: fact\nid: {fid}\ntopics: [project-x]\nstatus: active\n"
                                          f"confidence: medium\nprovenance: human\ncreated: {moment}\n---\n"
                                          f"deploy note {fid}\n")
        git("add", "-A")
        git("commit", "-q", "-m", f"add {fid}", when=moment)
    return root


def test_log_since_takes_time_words(hand_vault: Path) -> None:
    for phrase in ("last night", "昨晚", "昨夜"):
        out = _am("log", "--since", phrase, "--format", "json", cwd=hand_vault)
        assert out.returncode == 0, out.stderr
        records = [r for e in json.loads(out.stdout) for r in e["records"]]
        assert records == ["fact-hour", "fact-night"], phrase
    out = _am("log", "--since", "tonight", cwd=hand_vault)
    assert out.returncode == 0
    assert "tonight" in out.stderr and "nothing" in out.stderr


def test_slice_as_of_takes_time_words(hand_vault: Path) -> None:
    data = json.loads(_am("slice", "--as-of", "yesterday evening", "--format", "json", cwd=hand_vault).stdout)
    assert data["vault"]["as_of"] == "yesterday evening"
    assert sorted(f["id"] for t in data["topics"] for f in t["facts"]) == ["fact-fri20"]
    data = json.loads(_am("slice", "--as-of", "先週の金曜日", "--format", "json", cwd=hand_vault).stdout)
    assert data["topics"] == []  # 2026-11-20 00:00: before the first fact was committed
    out = _am("slice", "--as-of", "Oct 1", cwd=hand_vault)
    assert out.returncode != 0 and "Oct 1" in out.stderr


@pytest.mark.parametrize("fixed", ["next tuesday", "2026-13-01", "yesterday"])
def test_an_unreadable_am_now_is_one_line_naming_it(dated_vault: Path, fixed: str) -> None:
    for args in (("search", "deploy", "last Friday"), ("fact", "add", "never written", "--topic", "project-x")):
        out = subprocess.run([sys.executable, "-m", "am.cli.main", *args], cwd=dated_vault,
                             env={**os.environ, "AM_NOW": fixed, "AM_ACTOR": "tester"},
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        assert out.stderr.startswith(f"Error: $AM_NOW is {fixed!r}, not an ISO 8601 date-time"), out.stderr
    assert "never written" not in _am("search", "never", "written", cwd=dated_vault).stdout


def test_a_stored_time_without_offset_is_utc_whoever_built_the_cache(tmp_path: Path) -> None:
    """Hand-written times without an offset mean one moment (UTC) on every machine: the answer does not
    depend on the time zone of the process that built the cache, nor on the offset `--at` is written in."""
    root = tmp_path / "v"
    env = subprocess_env(AM_ACTOR="tester", AM_HOME=str(tmp_path / "home"))

    def am(tz: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "am.cli.main", *args], check=False, cwd=root,
                              env={**env, "TZ": tz}, capture_output=True, text=True, timeout=120)

    subprocess.run([sys.executable, "-m", "am.cli.main", "init", str(root)], env=env, check=True, capture_output=True)
    assert am("UTC", "topic", "add", "project-zoo", "--title", "Zoo").returncode == 0
    folder = root / "facts" / "2026" / "10" / "12"
    folder.mkdir(parents=True)
    (folder / "f-wombat.md").write_text("---\ntype: fact\nid: f-wombat\ntopics: [project-zoo]\nstatus: active\n"
                                        "confidence: high\nprovenance: human\ncreated: 2026-10-12T02:00\n"
                                        "valid_from: 2026-10-12T13:00\n---\nThe wombat sleeps.\n")
    for args in (("add", "-A"), ("commit", "-qm", "a fact by hand")):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)

    answers = []
    for builder in ("Asia/Tokyo", "UTC", "America/New_York"):
        assert am(builder, "index", "rebuild").returncode == 0
        found = am("UTC", "search", "wombat", "2026-10-12", "--format", "json")
        assert found.returncode == 0, found.stderr
        data = json.loads(found.stdout)
        answers.append(([h["id"] for h in data["hits"]], data.get("without_range")))
        for at in ("2026-10-12T12:00:00-04:00", "2026-10-12T16:00:00+00:00", "2026-10-13T01:00:00+09:00"):
            pack = am("America/New_York", "slice", "--at", at, "--format", "json")
            assert pack.returncode == 0, pack.stderr
            held = [f["id"] for t in json.loads(pack.stdout)["topics"] for f in t["facts"]]
            assert held == ["f-wombat"], (builder, at)  # 16:00 UTC is after 13:00 UTC, in any offset
        early = am("Asia/Tokyo", "slice", "--at", "2026-10-12T12:59:00+00:00", "--format", "json")
        assert [f["id"] for t in json.loads(early.stdout)["topics"] for f in t["facts"]] == []
    # 02:00 UTC on 2026-10-12 is in that UTC day, whoever indexed it.
    assert answers == [(["f-wombat"], None)] * 3


def test_a_day_named_in_winter_has_that_days_summer_offset(tmp_path: Path) -> None:
    """Typed in New York in December, 2026-10-12 is that day as New York lived it (-04:00, daylight saving),
    not today's -05:00: a record made at 00:30 that night is in it, one made at 23:30 the night before is not."""
    root = tmp_path / "v"
    env = subprocess_env(AM_ACTOR="tester", AM_HOME=str(tmp_path / "home"), TZ="America/New_York",
                         AM_NOW="2026-12-01T10:00:00-05:00")
    subprocess.run([sys.executable, "-m", "am.cli.main", "init", "--no-hooks", str(root)], env=env, check=True,
                   capture_output=True)
    subprocess.run([sys.executable, "-m", "am.cli.main", "topic", "add", "project-zoo", "--title", "Zoo"], cwd=root,
                   env=env, check=True, capture_output=True)
    folder = root / "facts" / "2026" / "10" / "12"
    folder.mkdir(parents=True)
    for fid, created in (("f-early", "2026-10-12T03:30:00+00:00"), ("f-late", "2026-10-12T04:30:00+00:00")):
        (folder / f"{fid}.md").write_text(f"---\ntype: fact\nid: {fid}\ntopics: [project-zoo]\nstatus: active\n"
                                          f"confidence: high\nprovenance: human\ncreated: {created}\n---\n"
                                          "The wombat woke.\n")
    for args in (("add", "-A"), ("commit", "-qm", "facts by hand")):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
    found = subprocess.run([sys.executable, "-m", "am.cli.main", "search", "wombat", "2026-10-12", "--format", "json"],
                           cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert found.returncode == 0, found.stderr
    assert [h["id"] for h in json.loads(found.stdout)["hits"]] == ["f-late"], found.stdout

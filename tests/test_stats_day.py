"""`am stats` counts what `am fact list` lists; `am today` / `am day` read one day's writes from Git (issue 41)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_git
from tests.demo_cli import build_demo, run_am

PYTHON = sys.executable


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    yield from build_demo(tmp_path_factory)


def am(root: Path, home: Path, *args: str, code: int = 0, **env: str) -> subprocess.CompletedProcess[str]:
    return run_am(root, home, *args, code=code, **env)


def test_stats_counts_match_fact_list(demo: tuple[Path, Path]) -> None:
    root, home = demo
    numbers = json.loads(am(root, home, "stats", "--format", "json").stdout)
    facts = json.loads(am(root, home, "fact", "list", "--format", "json").stdout)
    assert numbers["facts"]["total"] == len(facts)
    assert numbers["facts"]["by_status"] == dict(Counter(f["status"] for f in facts))
    assert numbers["facts"]["by_confidence"] == dict(Counter(f["confidence"] for f in facts))
    assert numbers["facts"]["pinned"] == sum(1 for f in facts if f.get("pinned"))
    assert sum(numbers["facts"]["by_week"].values()) == len(facts)
    topics = json.loads(am(root, home, "topic", "list", "--format", "json").stdout)
    assert numbers["topics"]["total"] == len(topics)
    # The actor is the author of each fact's first commit, as `am log` names it.
    log = json.loads(am(root, home, "log", "--format", "json").stdout)
    first: dict[str, str] = {}
    for entry in log:  # newest first: the oldest claim wins
        for rid in entry["records"]:
            first[rid] = entry["actor"]
    assert numbers["facts"]["by_actor"] == dict(Counter(first[f["id"]] for f in facts))
    text = am(root, home, "stats").stdout
    assert f"facts: {len(facts)}" in text and "by actor:" in text


def test_stats_follow_a_write(tmp_path: Path, demo: tuple[Path, Path]) -> None:
    _, home = demo
    root = tmp_path / "v"
    am(root.parent, home, "init", str(root))
    before = json.loads(am(root, home, "stats", "--format", "json").stdout)["facts"]
    assert before["total"] == 0 and before["by_status"] == {}
    am(root, home, "fact", "add", "Deploys happen on Tuesdays.", "--topic", "ops", "--create-topic", "--confidence", "high",
       AM_ACTOR="robot")
    after = json.loads(am(root, home, "stats", "--format", "json").stdout)["facts"]
    assert after["total"] == 1 and after["by_confidence"] == {"high": 1} and after["by_actor"] == {"robot": 1}


def test_today_lists_the_days_writes_grouped(demo: tuple[Path, Path]) -> None:
    root, home = demo
    day = json.loads(am(root, home, "today", "--format", "json", AM_NOW="2026-10-05T22:00:00+08:00").stdout)
    assert day["day"] == "2026-10-05"
    titles = {s["title"]: [rid for e in s["entries"] for rid in e["records"]] for s in day["sections"]}
    assert titles["facts written"] == ["f-20261005-1630-e5d2aa"]
    assert titles["topics"] == ["decision-rate-limit"]
    assert len(titles["relations"]) == 2
    # The oracle: git's own log of that day, in that day's zone.
    shas = run_git(root, "log", "--format=%H", "--since=2026-10-05T00:00:00+08:00",
                   "--until=2026-10-05T23:59:59+08:00").split()
    assert sorted(e["commit"] for s in day["sections"] for e in s["entries"]) == sorted(shas)
    text = am(root, home, "today", AM_NOW="2026-10-05T22:00:00+08:00").stdout
    assert text.startswith("2026-10-05 (Monday): 4 writes")
    assert "令牌桶" in text  # each record named with what it says now


def test_day_takes_a_date_and_refuses_nonsense(demo: tuple[Path, Path]) -> None:
    root, home = demo
    assert "no writes" in am(root, home, "day", "2026-10-04", AM_NOW="2026-10-05T22:00:00+08:00").stdout
    yesterday = json.loads(am(root, home, "day", "yesterday", "--format", "json",
                              AM_NOW="2026-09-24T22:00:00+08:00").stdout)
    assert yesterday["day"] == "2026-09-23" and yesterday["writes"] >= 8
    days = json.loads(am(root, home, "day", "2 days ago", "--format", "json",
                         AM_NOW="2026-09-25T08:00:00+08:00").stdout)
    assert days["day"] == "2026-09-23"
    bad = am(root, home, "day", "someday", code=2)
    assert "cannot read 'someday' as a day" in bad.stderr and "Traceback" not in bad.stderr

"""Fact ids are drawn from UTC, so ids made at the same moment on machines in different time zones sort together.

``f-YYYYMMDD-HHMM-xxxxxx`` is meant to sort by time across every clone of a
vault. Drawn from the local clock, a fact written in Tokyo sorted a day after
one written at the same moment in Samoa. Two processes in different zones (TZ
set to UTC-14 and UTC+11, POSIX spelling: no tz database needed) draw an id at
the same moment: the same minute, UTC's.
"""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from conftest import PYTHON, subprocess_env

from am.records.ids import new_fact_id

_DRAW = ("import json, datetime; from am.clock import now; from am.records.ids import new_fact_id; "
         "print(json.dumps([datetime.datetime.now(datetime.UTC).isoformat(), new_fact_id(now())]))")


def _draw(tz: str) -> tuple[datetime, str]:
    env = subprocess_env(TZ=tz)
    out = subprocess.run([PYTHON, "-c", _DRAW], check=True, capture_output=True, text=True, env=env).stdout
    moment, fid = json.loads(out)
    return datetime.fromisoformat(moment), fid


def _minute(fid: str) -> datetime:
    return datetime.strptime(fid[2:15], "%Y%m%d-%H%M").replace(tzinfo=UTC)


def test_ids_drawn_in_two_time_zones_name_the_utc_minute() -> None:
    for tz in ("UTC-14", "UTC+11"):  # POSIX: UTC-14 is fourteen hours east of Greenwich
        moment, fid = _draw(tz)
        assert abs(_minute(fid) - moment.replace(second=0, microsecond=0)) <= timedelta(minutes=1), (tz, fid)


def test_an_id_of_a_moment_with_an_offset_is_its_utc_minute() -> None:
    east = datetime(2026, 12, 4, 9, 30, tzinfo=timezone(timedelta(hours=14)))
    west = datetime(2026, 12, 3, 8, 30, tzinfo=timezone(timedelta(hours=-11)))
    assert east == west
    assert new_fact_id(east)[:16] == new_fact_id(west)[:16] == "f-20261203-1930-"


def test_am_fact_add_in_two_zones_gives_ids_that_sort_by_moment(alpha: object, tmp_path: Path) -> None:
    root = alpha.root  # type: ignore[attr-defined]
    ids = []
    # The same moment seen from two zones; the first is written after the second in real time, sorted first.
    for tz, now in (("UTC-14", "2026-12-04T09:30:00+14:00"), ("UTC+11", "2026-12-03T08:31:00-11:00")):
        proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(root), "fact", "add", f"Written in {tz}.",
                               "--topic", "project-alpha", "--format", "json"], check=False, capture_output=True,
                              text=True, env=subprocess_env(TZ=tz, AM_NOW=now))
        assert proc.returncode == 0, proc.stderr
        ids.append(json.loads(proc.stdout)["records"][0]["id"])
    assert ids[0].startswith("f-20261203-1930-") and ids[1].startswith("f-20261203-1931-"), ids
    assert sorted(ids) == ids

"""`am now`, use counts, promotion and demotion on a simulated clock, and `am fact pin|unpin`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from am.cache.usage import UsageLog
from am.vault import Vault

DAY0 = "2026-11-10T12:00:00+08:00"


def am(vault: Path, *args: str, now: str = DAY0) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AM_NOW": now, "AM_ACTOR": "tester"}
    return subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(vault), *args], env=env,
                          capture_output=True, text=True, timeout=120)


def write(vault: Path, fid: str, created: str, text: str, *, confidence: str = "medium", status: str = "active",
          provenance: str = "human") -> None:
    folder = vault / "facts" / created[:4] / created[5:7] / created[8:10]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{fid}.md").write_text(
        f"---\ntype: fact\nid: {fid}\ntopics: [project-x]\nstatus: {status}\nconfidence: {confidence}\n"
        f"provenance: {provenance}\ncreated: {created}\n---\n{text}\n", encoding="utf-8")


@pytest.fixture
def hot(vault: Vault, vault_path: Path, git: object) -> Path:
    """Facts of one topic: two old ones (high and medium confidence) and a new low-confidence one."""
    vault.add_topic(title="Project X", kind="project", id="project-x")
    write(vault_path, "fact-old-high", "2026-08-01T09:00:00+08:00", "The old high fact.", confidence="high")
    write(vault_path, "fact-old-med", "2026-08-02T09:00:00+08:00", "The old medium fact.")
    write(vault_path, "fact-new-low", "2026-11-09T09:00:00+08:00", "The new low fact.", confidence="low")
    write(vault_path, "fact-review", "2026-11-08T09:00:00+08:00", "A proposal to check.", status="pending-review",
          provenance="session:claude-1108")
    write(vault_path, "fact-fight", "2026-11-07T09:00:00+08:00", "Two sessions disagree here.", status="contested")
    subprocess.run(["git", "add", "-A"], cwd=vault_path, check=True)
    subprocess.run(["git", "commit", "-qm", "facts by hand"], cwd=vault_path, check=True)
    vault.close()
    return vault_path


def order(vault: Path, now: str) -> list[str]:
    out = am(vault, "slice", "--format", "json", now=now)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    return [f["id"] for f in data["pinned"]] + [f["id"] for t in data["topics"] for f in t["facts"]]


def test_new_facts_rank_before_old_ones_and_uses_promote(hot: Path) -> None:
    # No uses yet: the old facts (neither new nor used for 30 days) are demoted below the new one,
    # despite its low confidence; nothing is left out.
    assert order(hot, DAY0) == ["fact-new-low", "fact-old-high", "fact-old-med"]
    # Three uses of the old medium fact in the week before day 10 promote it (that slice's own uses count
    # from the next day on, so it did not reorder anything).
    for day in ("2026-11-07", "2026-11-08", "2026-11-09"):
        assert am(hot, "fact", "show", "fact-old-med", now=f"{day}T10:00:00+08:00").returncode == 0
    log = UsageLog(hot / ".am" / "cache")
    assert log.signals(repo=None, branch=None, at=_moment(DAY0)).promoted == {"fact-old-med"}
    assert log.signals(repo=None, branch=None, at=_moment("2026-11-09T12:00:00+08:00")).promoted == set()  # two
    assert order(hot, DAY0) == ["fact-old-med", "fact-new-low", "fact-old-high"]
    assert order(hot, DAY0) == ["fact-old-med", "fact-new-low", "fact-old-high"]  # the same day: the same pack
    # Ten days on the uses have left the week, but every fact was used (or written) within 30 days.
    assert order(hot, "2026-11-20T12:00:00+08:00") == ["fact-old-high", "fact-old-med", "fact-new-low"]
    # Two months on only a fact used lately escapes demotion; the others are still there, last.
    assert am(hot, "fact", "show", "fact-old-med", now="2027-01-10T10:00:00+08:00").returncode == 0
    assert order(hot, "2027-01-15T12:00:00+08:00") == ["fact-old-med", "fact-old-high", "fact-new-low"]
    log.close()


def test_pinned_facts_never_fade(hot: Path) -> None:
    out = am(hot, "fact", "pin", "fact-old-med")
    assert out.returncode == 0, out.stderr
    far = "2028-01-01T12:00:00+08:00"
    assert order(hot, far)[0] == "fact-old-med"
    assert order(hot, DAY0)[0] == "fact-old-med"


def test_pin_and_unpin_are_one_commit_each(hot: Path) -> None:
    def commits() -> int:
        return int(subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=hot, capture_output=True,
                                  text=True, check=True).stdout)

    before = commits()
    assert am(hot, "fact", "pin", "fact-old-high").returncode == 0
    path = next(hot.glob("facts/**/fact-old-high.md"))
    assert "pinned: true" in path.read_text()
    assert commits() == before + 1
    log = subprocess.run(["git", "log", "-1", "--format=%s%n%b"], cwd=hot, capture_output=True, text=True).stdout
    assert "fact: pin fact-old-high" in log and "Am-Op: fact.pin" in log
    again = am(hot, "fact", "pin", "fact-old-high")
    assert again.returncode != 0 and "already pinned" in again.stderr
    assert commits() == before + 1
    assert am(hot, "fact", "unpin", "fact-old-high").returncode == 0
    assert "pinned" not in path.read_text()
    assert commits() == before + 2


def test_now_is_byte_identical_for_the_same_state_and_counts(hot: Path) -> None:
    first = am(hot, "now")
    assert first.returncode == 0, first.stderr
    assert am(hot, "now").stdout == first.stdout  # reading it counts no use
    assert len(first.stdout.splitlines()) <= 50
    assert "A proposal to check." in first.stdout and "pending-review" in first.stdout
    assert "contested" in first.stdout
    assert "session:claude-1108" in first.stdout
    # A search shows facts (and counts them): the most-used section changes, and then holds still.
    assert am(hot, "search", "old", "fact").returncode == 0
    second = am(hot, "now")
    assert second.stdout != first.stdout
    assert "The old high fact. (`fact-old-high` · 1 use)" in second.stdout
    assert am(hot, "now").stdout == second.stdout
    data = json.loads(am(hot, "now", "--format", "json").stdout)
    assert [u["id"] for u in data["used"]] == ["fact-new-low", "fact-old-high", "fact-old-med"]  # 1 use each, by id
    assert data["topics"][0]["id"] == "project-x"


def test_now_stays_within_fifty_lines(hot: Path) -> None:
    for i in range(30):
        write(hot, f"fact-pin-{i:02d}", "2026-11-01T09:00:00+08:00", f"Pinned rule {i}.")
        path = next(hot.glob(f"facts/**/fact-pin-{i:02d}.md"))
        path.write_text(path.read_text().replace("status: active\n", "status: active\npinned: true\n"))
        write(hot, f"fact-rev-{i:02d}", "2026-11-02T09:00:00+08:00", f"Proposal {i}.", status="pending-review")
    out = am(hot, "now")
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.splitlines()) <= 50
    assert "… and 22 more" in out.stdout


def test_judging_a_world_is_no_use_of_its_facts(hot: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """am stale, am review, the code hook (stale_in_world) and am search --branch (world_marks) judge every fact of
    a world: none of that is an agent's use, so none may count (they counted every fact of the world, which made
    "most used" mean "most judged"); am why neither."""
    from am.packs.pack import SliceRequest
    from am.packs.why import stale_in_world, world_marks

    monkeypatch.setenv("AM_NOW", DAY0)
    assert am(hot, "why", "fact-old-high").returncode == 0
    with Vault.open(hot) as v:
        stale_in_world(v, SliceRequest())
        world_marks(v, SliceRequest())
    assert UsageLog(hot / ".am" / "cache").counts(repo=None, branch=None, days=6, at=_moment(DAY0), today=True) == {}
    assert am(hot, "slice").returncode == 0  # an agent's pack does count
    assert UsageLog(hot / ".am" / "cache").counts(repo=None, branch=None, days=6, at=_moment(DAY0), today=True)


def test_use_counts_survive_a_cache_rebuild(hot: Path) -> None:
    assert am(hot, "fact", "show", "fact-old-high").returncode == 0
    assert am(hot, "index", "rebuild").returncode == 0
    counts = UsageLog(hot / ".am" / "cache").counts(repo=None, branch=None, days=6, at=_moment(DAY0), today=True)
    assert counts == {"fact-old-high": 1}


def test_a_damaged_use_count_file_is_set_aside_and_counting_starts_again(hot: Path) -> None:
    """Garbage in usage.sqlite stopped every count for good (each failure ignored): nothing was ever promoted."""
    cache = hot / ".am" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "usage.sqlite").write_bytes(b"not a database, written by something else " * 200)
    assert am(hot, "fact", "show", "fact-old-high").returncode == 0
    counts = UsageLog(cache).counts(repo=None, branch=None, days=6, at=_moment(DAY0), today=True)
    assert counts == {"fact-old-high": 1}
    assert (cache / "aside" / "usage.sqlite").read_bytes().startswith(b"not a database")


def test_a_use_count_file_damaged_past_its_header_is_set_aside_too(hot: Path) -> None:
    """A good header over a damaged page opened fine, then every count failed, each failure ignored, for good."""
    cache = hot / ".am" / "cache"
    log = UsageLog(cache)
    log.record([f"fact-{i:05d}" for i in range(3000)], repo=None, branch=None, at=_moment(DAY0))
    log.close()
    data = (cache / "usage.sqlite").read_bytes()
    page = int.from_bytes(data[16:18], "big")
    assert data.startswith(b"SQLite format 3\0") and len(data) > 4 * page and not (cache / "usage.sqlite-wal").exists()
    (cache / "usage.sqlite").write_bytes(data[:page] + b"\xa5" * (len(data) - page))  # page 1 (the schema) intact
    for args in (("fact", "show", "fact-old-high"), ("now",), ("search", "old", "fact")):
        out = am(hot, *args)
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    counts = UsageLog(cache).counts(repo=None, branch=None, days=6, at=_moment(DAY0), today=True)
    assert counts == {"fact-old-high": 2, "fact-old-med": 1, "fact-new-low": 1}
    assert (cache / "aside" / "usage.sqlite").read_bytes()[page:page + 4] == b"\xa5" * 4


def test_uses_are_per_world(hot: Path) -> None:
    log = UsageLog(hot / ".am" / "cache")
    at = _moment(DAY0)
    log.record(["a"], repo="alpha", branch="main", at=at)
    log.record(["b"], repo="alpha", branch="feat", at=at)
    log.record(["c"], repo=None, branch=None, at=at)
    assert log.counts(repo="alpha", branch="main", days=1, at=at, today=True) == {"a": 1, "c": 1}
    assert log.counts(repo="beta", branch="main", days=1, at=at, today=True) == {"c": 1}
    log.record(["a", "a"], repo="alpha", branch="main", at=at)  # one command counts a fact once
    assert log.counts(repo="alpha", branch="main", days=1, at=at, today=True)["a"] == 2
    log.close()


def _moment(text: str):  # type: ignore[no-untyped-def]
    from datetime import datetime

    return datetime.fromisoformat(text)


def test_now_leaves_out_a_fact_superseded_in_its_world(tmp_path: Path) -> None:
    """A vault-wide search showed the demo's main-only getUser fact; am now on main then listed it under
    'Most used this week', though on main the batch-lookup fact supersedes it and no pack shows it there."""
    from am.demo import materialise_demo

    root = tmp_path / "demo"
    materialise_demo(root).close()
    env = {**os.environ, "AM_ACTOR": "tester"}
    for args in (["search", "getUser"], ["fact", "show", "fact-alpha-getuser-main"]):
        done = subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(root), *args], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    now = subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(root), "now", "--repo", "project-alpha",
                          "--branch", "main", "--format", "json"], env=env, capture_output=True, text=True, timeout=120)
    assert now.returncode == 0, now.stderr
    used = [line["id"] for line in json.loads(now.stdout)["used"]]
    assert "f-20261002-0915-c4f1a5" in used and "fact-alpha-getuser-main" not in used

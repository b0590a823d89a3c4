"""Ranked search in a large vault: row ids as a static rank, and levels that score a bounded set of matches.

A level (phrase, every term, some) with more matches than ``IndexQueries.BOUND`` ranks by BM25 only
the first BOUND in row id order: topics, then newest (am/cache/rows.py ``rank_rowid``). The tests
lower BOUND so that a handful of facts exercise it; the oracle for which records are candidates is
their files (type, ``created``), and for their order the exact search (BOUND out of reach).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from am.cache.query import IndexQueries
from am.cache.search import search
from am.vault import Vault

# (id, body, created): every body holds "session cache"; shorter bodies rank higher in BM25.
FACTS = [
    ("f-old-short", "Session cache.", "2024-01-02T08:00:00+08:00"),
    ("f-old-long", "The session cache of the billing service keeps carts for a day before it drops them.",
     "2024-02-03T08:00:00+08:00"),
    ("f-mid-a", "The session cache keeps carts for ten minutes.", "2025-03-04T08:00:00+08:00"),
    ("f-mid-b", "The session cache evicts idle users after an hour of quiet.", "2025-04-05T08:00:00+08:00"),
    ("f-new-a", "Session cache lives in Redis now.", "2026-05-06T08:00:00+08:00"),
    ("f-new-b", "The session cache is sharded by tenant across the three clusters.", "2026-06-07T08:00:00+08:00"),
    ("f-newest", "The session cache warms on deploy.", "2026-07-08T08:00:00+08:00"),
]
SUPERSEDED = ("f-oldest-superseded", "The session cache was memcached.", "2023-01-01T08:00:00+08:00")


def _fact(fid: str, body: str, created: str, status: str = "active") -> tuple[str, str]:
    day = created[:10].replace("-", "/")
    text = (f"---\ntype: fact\nid: {fid}\ntopics: [project-alpha]\nstatus: {status}\nconfidence: high\n"
            f"provenance: human\ncreated: {created}\n---\n{body}\n")
    return f"facts/{day}/{fid}.md", text


@pytest.fixture
def sessions(alpha: Vault, vault_path: Path, git: Callable[..., str]) -> Vault:
    """Seven facts about the session cache, one superseded long ago, and an old topic titled "Session cache"."""
    files = [_fact(*f) for f in FACTS] + [_fact(*SUPERSEDED, status="superseded")]
    topic = ("---\ntype: topic\nid: tool-session-cache\nkind: tool\ntitle: Session cache\nstatus: active\n"
             "created: 2020-01-01T08:00:00+08:00\n---\nWhere sessions live.\n")
    files.append(("topics/tool-session-cache.md", topic))
    for rel, text in files:
        (vault_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault_path / rel).write_text(text, encoding="utf-8")
    git("add", "-A")
    git("commit", "-qm", "session facts by hand")
    cache = alpha.cache()
    assert cache is not None
    cache.refresh()
    return alpha


def _rowids(vault_path: Path) -> dict[str, int]:
    """Return id -> row id, read with a connection of the test's own (an independent reader of the cache)."""
    with sqlite3.connect(vault_path / ".am" / "cache" / "index.sqlite") as conn:
        return {i: r for i, r in conn.execute("SELECT id, rowid FROM records")}


def _hits(vault: Vault, query: str, **kw: object) -> list[str]:
    cache = vault.cache()
    assert cache is not None
    return [h.id for h in search(cache, query, notes=False, **kw).hits]  # type: ignore[arg-type]


def test_row_ids_are_a_static_rank_that_depends_only_on_the_files(sessions: Vault, vault_path: Path,
                                                                   git: Callable[..., str]) -> None:
    taken_in = _rowids(vault_path)
    # Topics first (however old), then facts newest first.
    order = sorted(taken_in, key=taken_in.__getitem__)
    assert order[:2] == ["project-alpha", "tool-session-cache"] or order[:2] == ["tool-session-cache", "project-alpha"]
    facts = [i for i in order if i.startswith("f-")]
    created = {f[0]: f[2] for f in [*FACTS, SUPERSEDED]}
    assert facts == sorted(created, key=lambda i: created[i], reverse=True)
    # An edited body keeps its row id; a rebuild from the files gives every record the same id.
    path = vault_path / _fact(*FACTS[2])[0]
    path.write_text(path.read_text(encoding="utf-8").replace("ten minutes", "twenty minutes"), encoding="utf-8")
    git("commit", "-qam", "edit")
    cache = sessions.cache()
    assert cache is not None
    cache.refresh()
    assert _rowids(vault_path) == taken_in
    cache.rebuild()
    assert _rowids(vault_path) == taken_in


def test_a_copy_with_the_same_id_and_moment_takes_the_next_free_row_id(sessions: Vault, vault_path: Path,
                                                                      git: Callable[..., str]) -> None:
    rel, text = _fact(*FACTS[4])
    copy = vault_path / rel.replace("f-new-a.md", "f-new-a copy.md")
    copy.write_text(text, encoding="utf-8")
    git("add", "-A")
    git("commit", "-qm", "a person's copy")
    cache = sessions.cache()
    assert cache is not None
    cache.refresh()
    with sqlite3.connect(vault_path / ".am" / "cache" / "index.sqlite") as conn:
        twins = sorted(r for (r,) in conn.execute("SELECT rowid FROM records WHERE id = 'f-new-a'"))
    assert len(twins) == 2 and twins[1] == twins[0] + 1


def test_a_level_past_the_bound_ranks_the_topics_and_newest_matches_by_bm25(
        sessions: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    exact = _hits(sessions, "session cache", limit=8)
    # Exact BM25: the title hit first, then the shortest body ("Session cache.", the oldest fact).
    assert exact[:2] == ["tool-session-cache", "f-old-short"]
    assert sorted(exact) == sorted(["tool-session-cache", *(f[0] for f in FACTS)])
    # The bound is the index level's: search() asks it for a fixed depth of candidates (rerank.DEPTH,
    # whatever the limit), so the bounded level is read from the index itself.
    cache = sessions.cache()
    assert cache is not None
    statuses = ("active", "contested", "pending-review")
    exact_level = [h.id for h in cache.search("session cache", limit=8, statuses=statuses)]
    monkeypatch.setattr(IndexQueries, "BOUND", 4)
    bounded = [h.id for h in cache.search("session cache", limit=3, statuses=statuses)]
    # Candidates: the topic and the three newest facts; among them, the exact order.
    candidates = {"tool-session-cache", "f-newest", "f-new-b", "f-new-a"}
    assert bounded == [i for i in exact_level if i in candidates][:3]
    assert "f-old-short" not in bounded
    # Under the bound, nothing changes.
    monkeypatch.setattr(IndexQueries, "BOUND", 9)
    assert _hits(sessions, "session cache", limit=8) == exact


def test_filters_that_empty_the_bounded_set_widen_it(sessions: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(IndexQueries, "BOUND", 2)
    # Only the oldest fact is superseded: it is past the bound, and still found.
    assert _hits(sessions, "session cache", status="superseded", limit=2) == [SUPERSEDED[0]]
    # A word of one old fact only: a level with one match is always exact.
    assert _hits(sessions, "billing carts", limit=2)[:1] == ["f-old-long"]

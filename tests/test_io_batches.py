"""Import batches: at most ``batch_size`` records and one commit message that Git takes (64 KiB).

One commit a batch names each record it writes in an ``Am-Record`` trailer, so
a batch of long ids must be cut short rather than refused for its message
(checked with the git CLI).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from am.io import ImportOptions, import_source
from am.records.writes import RECORD_TRAILERS_BUDGET, batch_bounds
from am.vault import Vault

Git = Callable[..., str]


def test_bounds_cut_by_count() -> None:
    assert list(batch_bounds(["a"] * 5, 2)) == [(0, 2), (2, 4), (4, 5)]
    assert list(batch_bounds([], 3)) == []


def test_bounds_cut_by_message_size() -> None:
    ids = ["x" * 100] * 10  # 112 characters a trailer line
    assert list(batch_bounds(ids, 1000, budget=3 * 112)) == [(0, 3), (3, 6), (6, 9), (9, 10)]
    # An id longer than the budget still goes, alone: the write path judges it.
    assert list(batch_bounds(["y" * 50, "z" * 500, "w"], 10, budget=100)) == [(0, 1), (1, 2), (2, 3)]


@given(st.lists(st.text(alphabet="abc-0123456789", min_size=1, max_size=120), max_size=60),
       st.integers(min_value=1, max_value=20), st.integers(min_value=130, max_value=2000))
def test_bounds_cover_every_id_once_in_order(ids: list[str], size: int, budget: int) -> None:
    bounds = list(batch_bounds(ids, size, budget=budget))
    assert [i for a, b in bounds for i in range(a, b)] == list(range(len(ids)))
    for a, b in bounds:
        assert 1 <= b - a <= size
        assert b - a == 1 or sum(len(i) + len("Am-Record: \n") for i in ids[a:b]) <= budget


def test_an_import_of_long_ids_is_cut_into_commits_git_takes(vault: Vault, git: Git, tmp_path: Path) -> None:
    # 900 entities whose topic ids are 65 characters (77 a trailer line): one batch would be ~69 KB of trailers.
    source = tmp_path / "memory.jsonl"
    names = [f"Service {i:03d} " + "of the payments platform that settles card transactions " * 2 for i in range(900)]
    source.write_text("".join(json.dumps({"type": "entity", "name": n, "entityType": "service",
                                          "observations": []}) + "\n" for n in names), encoding="utf-8")
    summary = import_source(vault, "mcp-memory", source, options=ImportOptions(batch_size=1000))
    assert summary.made["topic"] == 900 and len(summary.commits) == 2 and summary.aside == []
    assert git("rev-list", "--count", "HEAD").strip() == str(1 + 2)  # vault.init, then the two batches
    named: list[str] = []
    for commit in summary.commits:
        message = git("cat-file", "commit", commit).split("\n\n", 1)[1]
        assert len(message) <= 1 << 16
        assert git("log", "-1", "--format=%(trailers:key=Am-Op,valueonly)", commit).strip() == "import.batch"
        named += git("log", "-1", "--format=%(trailers:key=Am-Record,valueonly)", commit).split()
    assert sum(len(i) + len("Am-Record: \n") for i in named) > RECORD_TRAILERS_BUDGET  # one would not fit
    tracked = git("ls-files", "topics").split()
    assert len(named) == len(set(named)) == len(tracked) == 900
    assert {Path(p).stem for p in tracked} == set(named)
    assert git("status", "--porcelain") == ""
    again = import_source(vault, "mcp-memory", source)
    assert again.commits == [] and again.merged == 900  # topics already there are merged, not written

"""Issue 36.10: a commit dated earlier than its history cannot make ``--as-of T`` show facts written after T.

Commits are made by am, then their dates set with the git CLI (``git commit --amend`` under
GIT_COMMITTER_DATE / GIT_AUTHOR_DATE), as a machine without a clock or a rebase keeping old dates
leaves them. The git CLI says which commit holds which fact; am's answer is checked against it.
"""

from __future__ import annotations

import os
from typing import Any

from am.vault import Vault
from tests.conftest import GIT_IDENTITY, run_git
from tests.test_slice import am, shown_ids


def _setup_dated(vault: Any, when: str = "2025-12-01T00:00:00Z") -> None:
    """Date the vault's set-up commits (init, the topic), made just now, before the test's story starts."""
    import subprocess

    env = {**os.environ, **GIT_IDENTITY, "FILTER_BRANCH_SQUELCH_WARNING": "1"}
    subprocess.run(["git", "-C", str(vault.root), "filter-branch", "-f", "--env-filter",
                    f"export GIT_COMMITTER_DATE={when} GIT_AUTHOR_DATE={when}", "HEAD"],
                   env=env, check=True, capture_output=True)


def _dated(vault: Any, fact: str, *, committed: str, authored: str | None = None) -> str:
    """Add ``fact`` with am, then give its commit these dates with the git CLI; return the commit id."""
    vault.add_fact(f"Observation {fact}.", topics=["project-alpha"], id=fact)
    import subprocess

    env = {**os.environ, **GIT_IDENTITY, "GIT_COMMITTER_DATE": committed, "GIT_AUTHOR_DATE": authored or committed}
    subprocess.run(["git", "-C", str(vault.root), "commit", "-q", "--amend", "--no-edit", "--no-verify",
                    "--date", authored or committed], env=env, check=True, capture_output=True)
    return run_git(vault.root, "rev-parse", "HEAD").strip()


def test_a_past_dated_tip_does_not_leak_into_an_earlier_view(alpha: Any) -> None:
    _setup_dated(alpha)
    a = _dated(alpha, "fact-a", committed="2026-01-10T10:00:00Z")
    _dated(alpha, "fact-b", committed="2026-02-10T10:00:00Z")
    # Made after fact-b, on a machine whose clock said 2001.
    _dated(alpha, "fact-c", committed="2001-01-01T10:00:00Z")
    assert alpha.store.last_commit_at(_ts("2026-01-20T00:00:00Z")) == a
    past = am(alpha, "slice", "--as-of", "2026-01-20T00:00:00Z")
    assert shown_ids(past) == {"fact-a"}, past
    # The misdated commit's facts show once a view is as of a time the vault certainly had them: now.
    assert shown_ids(am(alpha, "slice")) == {"fact-a", "fact-b", "fact-c"}


def test_a_past_dated_commit_inside_history_counts_from_the_next_well_dated_one(alpha: Any) -> None:
    _setup_dated(alpha)
    _dated(alpha, "fact-a", committed="2026-01-10T10:00:00Z")
    b = _dated(alpha, "fact-b", committed="2026-02-10T10:00:00Z")
    c = _dated(alpha, "fact-c", committed="2001-01-01T10:00:00Z")  # made some time between b and d
    d = _dated(alpha, "fact-d", committed="2026-03-10T10:00:00Z")
    # Between b and d nobody knows whether c was written yet: the view is b's, never c's.
    assert alpha.store.last_commit_at(_ts("2026-02-20T00:00:00Z")) == b
    assert shown_ids(am(alpha, "slice", "--as-of", "2026-02-20T00:00:00Z")) == {"fact-a", "fact-b"}
    # The old answer, the first commit dated at or before T, is exactly what git's own date walk gives.
    oracle = run_git(alpha.root, "rev-list", "-1", "--date-order", "--before=2026-02-20T00:00:00Z", "HEAD").strip()
    assert oracle == c
    assert alpha.store.last_commit_at(_ts("2026-03-20T00:00:00Z")) == d
    assert alpha.store.last_commit_at(_ts("2025-11-01T00:00:00Z")) is None


def test_a_machine_without_a_clock_for_a_run_of_commits(alpha: Any) -> None:
    _setup_dated(alpha)
    a = _dated(alpha, "fact-a", committed="2026-01-10T10:00:00Z")
    for fact in ("fact-b", "fact-c", "fact-d"):
        _dated(alpha, fact, committed="1970-01-02T00:00:00Z")
    e = _dated(alpha, "fact-e", committed="2026-03-10T10:00:00Z")
    assert alpha.store.last_commit_at(_ts("2026-02-01T00:00:00Z")) == a
    assert alpha.store.last_commit_at(_ts("1971-01-01T00:00:00Z")) is None
    assert alpha.store.last_commit_at(_ts("2026-03-10T10:00:00Z")) == e


def test_record_time_is_the_commit_date_not_the_author_date(alpha: Any) -> None:
    _setup_dated(alpha)
    """A rebase keeps author dates and sets new commit dates: the commit date is when the vault got the fact."""
    a = _dated(alpha, "fact-a", committed="2026-01-10T10:00:00Z")
    b = _dated(alpha, "fact-b", committed="2026-02-10T10:00:00Z", authored="2025-06-01T10:00:00Z")
    assert alpha.store.last_commit_at(_ts("2026-01-20T00:00:00Z")) == a
    assert alpha.store.last_commit_at(_ts("2026-02-10T10:00:00Z")) == b


def _ts(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text).timestamp()


def test_a_merged_branch_joins_the_view_at_the_merge_not_before(alpha: Any) -> None:
    """The first-parent line is this branch's past: a side branch's commit is never the answer."""
    import subprocess

    _setup_dated(alpha)
    _dated(alpha, "fact-a", committed="2026-01-10T10:00:00Z")
    run_git(alpha.root, "branch", "side")
    m = _dated(alpha, "fact-m", committed="2026-01-15T10:00:00Z")
    run_git(alpha.root, "switch", "-q", "side")
    side = Vault.open(alpha.root, actor="tester")
    _dated(side, "fact-s", committed="2026-01-20T10:00:00Z")
    side.close()
    run_git(alpha.root, "switch", "-q", "main")
    env = {**os.environ, **GIT_IDENTITY, "GIT_COMMITTER_DATE": "2026-02-01T10:00:00Z",
           "GIT_AUTHOR_DATE": "2026-02-01T10:00:00Z"}
    subprocess.run(["git", "-C", str(alpha.root), "merge", "-q", "--no-ff", "--no-edit", "side"], env=env,
                   check=True, capture_output=True)
    merge = run_git(alpha.root, "rev-parse", "HEAD").strip()
    # On main at 2026-01-25 the vault held a and m; s was on a branch until the merge.
    assert alpha.store.last_commit_at(_ts("2026-01-25T00:00:00Z")) == m
    assert alpha.store.last_commit_at(_ts("2026-02-01T10:00:00Z")) == merge

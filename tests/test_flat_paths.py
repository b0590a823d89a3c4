"""Paths that must not grow with the vault (issue 39): what they return, and that they read no table whole.

Each check runs the path with SQLite's statement trace on and asks SQLite's
planner about every statement it ran: a ``SCAN records`` (every row, or every
entry of an index) is the cost that grows with the vault.
"""

from __future__ import annotations

from typing import Any

import pytest

from am.errors import UnknownWorldError
from am.packs.slice import SliceRequest, slice_vault


def _statements(index: Any, call: Any) -> tuple[Any, list[str]]:
    ran: list[str] = []
    index.conn.set_trace_callback(ran.append)
    try:
        return call(), ran
    finally:
        index.conn.set_trace_callback(None)


def _scans(index: Any, sql: str) -> list[str]:
    plan = index.conn.execute("EXPLAIN QUERY PLAN " + sql).fetchall()
    return [row[3] for row in plan if row[3].startswith("SCAN records")]


def test_repo_names_are_read_by_index_seeks(alpha: Any) -> None:
    for i, repo in enumerate(["project-alpha", "zeta", "project-alpha", "beta", None]):
        alpha.add_fact(f"Fact {i} about the cache.", topics=["project-alpha"], repo=repo, branch="main" if repo else None,
                       unverified=True)
    index = alpha.cache()
    names, ran = _statements(index, index.repo_names)
    assert names == ["beta", "project-alpha", "zeta"]
    assert ran and not [s for s in ran if _scans(index, s.replace("?", "'x'"))]


def test_slice_checks_an_unknown_repo_without_a_scan(alpha: Any) -> None:
    alpha.add_fact("Alpha caches sessions.", topics=["project-alpha"], repo="project-alpha", branch="main",
                   unverified=True)
    slice_vault(alpha, SliceRequest(repo="project-alpha", branch="main"))  # a repo the vault names: served
    with pytest.raises(UnknownWorldError, match="project-alpha"):  # the error lists the names it knows
        slice_vault(alpha, SliceRequest(repo="project-alfa", branch="main"))


def _groups_read(index: Any, call: Any) -> tuple[Any, bool]:
    out, ran = _statements(index, call)
    return out, any("GROUP BY status" in s for s in ran)


def test_a_worlds_verdicts_are_kept_until_the_records_or_the_moment_change(alpha: Any) -> None:
    from datetime import datetime, timezone

    from am.packs.slice import render_markdown
    from am.packs.worldmemo import forget

    forget()
    alpha.add_fact("Alpha caches sessions for 30 minutes.", topics=["project-alpha"], repo="project-alpha",
                   branch="main", unverified=True)
    alpha.add_fact("Alpha's old endpoint answers until 2030.", topics=["project-alpha"], valid_until="2030-01-01")
    index = alpha.cache()
    before = SliceRequest(repo="project-alpha", branch="main", at=datetime(2029, 6, 1, tzinfo=timezone.utc))
    first, judged = _groups_read(index, lambda: render_markdown(slice_vault(alpha, before)))
    assert judged and "until 2030" in first
    again, judged = _groups_read(index, lambda: render_markdown(slice_vault(alpha, before)))
    assert again == first and not judged  # kept: the same records, world and span of time
    later = SliceRequest(repo="project-alpha", branch="main", at=datetime(2030, 6, 1, tzinfo=timezone.utc))
    after, judged = _groups_read(index, lambda: render_markdown(slice_vault(alpha, later)))
    assert judged and "until 2030" not in after  # past valid_until: judged afresh
    alpha.add_fact("Alpha moved its cache to Redis.", topics=["project-alpha"])
    index = alpha.cache()
    changed, judged = _groups_read(index, lambda: render_markdown(slice_vault(alpha, before)))
    assert judged and "Redis" in changed  # a new record: judged afresh

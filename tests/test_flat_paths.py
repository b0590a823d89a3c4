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

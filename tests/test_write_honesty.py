"""Issue 33.3: a write says what it could not know, and records it.

``--here`` over uncommitted changes recorded HEAD without a word, so a fact about work in progress that was
later discarded held on main; ``--repo R --path P`` without a branch recorded no commit, so the fact could
never go stale when P changed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_git

from am.records.codec import parse_record
from test_worlds_trust import am, commit, ok, world  # noqa: F401  (world is a fixture)


def _fact(vault: str, fid: str) -> Any:
    return parse_record(next(Path(vault, "facts").rglob(f"{fid}.md")).read_text())


def test_here_over_uncommitted_changes_in_the_watched_paths_warns_and_records_dirty(
        world: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    vault, code, c1 = world["vault"], world["code"], world["c1"]
    add = ("--vault", vault, "fact", "add", "--topic", "project-alpha", "--here")
    # Clean: no warning, no dirty key.
    code_, out, err = am(*add, "Users are looked up one at a time.", "--path", "src/api/users.py", "--id", "fact-clean",
                         cwd=code, monkeypatch=monkeypatch)
    assert code_ == 0 and "warning" not in err, err
    assert "dirty" not in next(Path(vault, "facts").rglob("fact-clean.md")).read_text()
    # A change elsewhere than the watched path: still clean for this fact.
    (code / "src/db/pool.py").write_text("POOL = 20\n")
    code_, out, err = am(*add, "Users are looked up by id.", "--path", "src/api/users.py", "--id", "fact-other",
                         cwd=code, monkeypatch=monkeypatch)
    assert code_ == 0 and "warning" not in err and not _fact(vault, "fact-other").dirty, err
    # A change in the watched path (not committed): a warning naming the file, and dirty: true.
    (code / "src/api/users.py").write_text("def getUser(id): ...\ndef getUsers(ids): ...\n")
    code_, out, err = am(*add, "Users can be looked up in batches.", "--path", "src/api/", "--id", "fact-wip",
                         cwd=code, monkeypatch=monkeypatch)
    assert code_ == 0, err
    assert "warning:" in err and "src/api/users.py" in err and "uncommitted" in err and c1[:10] in err, err
    fact = _fact(vault, "fact-wip")
    assert fact.dirty is True and fact.commit == c1
    assert "dirty: true" in next(Path(vault, "facts").rglob("fact-wip.md")).read_text()
    # Without --path, a change anywhere in the clone counts (an untracked file too).
    run_git(code, "checkout", "--", "src")
    (code / "notes.txt").write_text("scratch\n")
    code_, out, err = am(*add, "The service has a scratch file.", "--id", "fact-any", cwd=code, monkeypatch=monkeypatch)
    assert code_ == 0 and "notes.txt" in err and _fact(vault, "fact-any").dirty, err
    # am why says so, in text and JSON, whatever the verdict.
    why = ok("--vault", vault, "why", "fact-wip", "--repo", "project-alpha", "--branch", "main")
    assert "note  dirty" in why and "uncommitted" in why, why
    data = json.loads(ok("--vault", vault, "why", "fact-wip", "--repo", "project-alpha", "--branch", "main",
                         "--format", "json"))
    assert [s["rule"] for s in data["steps"]].count("dirty") == 1
    clean = json.loads(ok("--vault", vault, "why", "fact-clean", "--repo", "project-alpha", "--format", "json"))
    assert "dirty" not in [s["rule"] for s in clean["steps"]]
    # Confirming it at a commit (the work committed) clears the mark.
    (code / "src/api/users.py").write_text("def getUser(id): ...\ndef getUsers(ids): ...\n")
    c2 = commit(code, "src/api/users.py", "def getUser(id): ...\ndef getUsers(ids): ...\n", "batch on main")
    ok("--vault", vault, "fact", "confirm", "fact-wip", "--commit", c2)
    assert _fact(vault, "fact-wip").dirty is False and _fact(vault, "fact-wip").commit == c2


def test_repo_and_path_without_a_branch_record_the_clones_head_and_say_so(world: dict[str, Any]) -> None:  # noqa: F811
    vault, code, c1 = world["vault"], world["code"], world["c1"]
    code_, out, err = am("--vault", vault, "fact", "add", "The pool holds 10 connections.", "--topic", "project-alpha",
                         "--repo", "project-alpha", "--path", "src/db/pool.py", "--id", "fact-pool", "--format", "json")
    assert code_ == 0, err
    assert json.loads(out)["records"][0]["commit"] == c1 and f"HEAD of the clone of project-alpha, {c1[:10]}" in err
    fact = _fact(vault, "fact-pool")
    assert fact.commit == c1 and fact.version is None
    # So it can go stale: a later commit of main changes the watched path.
    c2 = commit(code, "src/db/pool.py", "POOL = 20\n", "pool 20")
    stale = json.loads(ok("--vault", vault, "stale", "--repo", "project-alpha", "--branch", "main", "--format", "json"))
    assert "fact-pool" in json.dumps(stale) and c2[:10] in json.dumps(stale), stale
    # Without --path, or with --unverified, nothing is filled in (and nothing said).
    code_, out, err = am("--vault", vault, "fact", "add", "Alpha is a service.", "--topic", "project-alpha",
                         "--repo", "project-alpha", "--format", "json")
    assert code_ == 0 and json.loads(out)["records"][0].get("commit") is None and "HEAD" not in err
    code_, out, err = am("--vault", vault, "fact", "add", "Alpha pools.", "--topic", "project-alpha",
                         "--repo", "project-alpha", "--path", "src/db/pool.py", "--unverified", "--format", "json")
    assert code_ == 0 and json.loads(out)["records"][0].get("commit") is None

"""A slice against a registered clone reads the branch tip, its history and the commits facts name from disk.

After the first slice, a new process answers the same slice without importing
pygit2 (its ~80 ms import is most of a slice process) and gives the same bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

from am.worlds.ancestry import HistoryFiles
from am.demo import materialise_demo
from tests.test_startup import _probe

def _slice(root: Path, home: Path, *extra: str) -> dict[str, object]:
    """Run `am slice` in a new process; return what it printed and whether it imported pygit2."""
    done = _probe("--vault", str(root), "slice", "--repo", "project-alpha", *extra, AM_HOME=str(home))
    return {"out": done["out"], "pygit2": "pygit2" in done["modules"]}


def test_a_second_slice_needs_no_pygit2_and_says_the_same(tmp_path: Path, monkeypatch: object) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("AM_HOME", str(home))  # type: ignore[attr-defined]
    root = tmp_path / "demo"
    materialise_demo(root)  # registers project-alpha's clone, with facts on main and on feature branches
    for branch in ("main", "feat-rate-limit"):
        first = _slice(root, home, "--branch", branch)
        second = _slice(root, home, "--branch", branch)
        assert second["out"] == first["out"]
        assert "Rule: commit ancestry in the registered clone" in str(first["out"])
        assert second["pygit2"] is False, branch
    # Only commit ids were remembered, each as the full id Git resolved it to.
    for resolved in (root / ".am" / "cache" / "ancestry").glob("*/resolved.json"):
        for key, full in json.loads(resolved.read_text())["ids"].items():
            assert all(c in "0123456789abcdef" for c in key.lower()) and len(full) == 40
            assert full.startswith(key.lower())


def test_resolved_commits_survive_a_damaged_cache_file(tmp_path: Path) -> None:
    class Store:
        gitdir = tmp_path / "clone" / ".git"

    files = HistoryFiles(tmp_path / "cache", Store())  # type: ignore[arg-type]
    assert files.load_resolved() == {}
    files.save_resolved({"abc1234": "abc1234" + "0" * 33})
    assert files.load_resolved() == {"abc1234": "abc1234" + "0" * 33}
    (files.folder / "resolved.json").write_text("{not json")
    assert files.load_resolved() == {}  # a disposable cache: damage only costs a lookup


def test_a_commit_gc_removed_from_the_clone_is_not_remembered_as_there(tmp_path: Path, monkeypatch: object) -> None:
    # feat-rate-limit is force-pushed (rewritten) and the old commit garbage-collected: a fact
    # observed at it is then judged by branch name, as am check says, whether or not an
    # earlier slice remembered the commit as one the clone had.
    import shutil
    import subprocess

    home = tmp_path / "home"
    monkeypatch.setenv("AM_HOME", str(home))  # type: ignore[attr-defined]
    root = tmp_path / "demo"
    materialise_demo(root)
    code = tmp_path / "demo-code"
    _slice(root, home, "--branch", "main")  # remembers feat-rate-limit's tip: in the clone, not in main
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(code), *args], check=True, capture_output=True)

    git("checkout", "-q", "-B", "feat-rate-limit", "main")
    git("commit", "-q", "--allow-empty", "-m", "rate limit, rewritten")
    git("checkout", "-q", "main")
    git("reflog", "expire", "--expire=now", "--all")
    git("gc", "-q", "--prune=now")
    remembered = _slice(root, home, "--branch", "feat-rate-limit")["out"]
    shutil.rmtree(root / ".am" / "cache" / "ancestry")
    fresh = _slice(root, home, "--branch", "feat-rate-limit")["out"]
    assert "judged by branch name" in str(fresh)
    assert remembered == fresh

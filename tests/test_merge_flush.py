"""The merge's write path (am/git/remote.py): one flush, the files Git's diff lists, and a kill before its pack is in place.

A record-aware merge writes its commit to a temporary pack, the work tree's
files and Git's staged index, flushes all of it with one syncfs, renames the
pack into place and only then moves the branch. These tests hold that to the
git CLI: the files written are exactly `git diff --name-only` of the merge
against its first parent, one flush happens, and `am merge` killed before the
pack is in place is finished by the next one (or, with a torn pack, redone)
with `git status` and `git fsck` clean.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, fsck_clean, run_git, subprocess_env

from am.git import common
from am.records.model import Fact
from am.sync import merge_branch
from am.vault import Vault


def _diverge(vault: Vault, *, each: int = 4, conflicts: int = 2) -> None:
    """Give ``vault`` a branch ``theirs``: ``each`` new facts on both sides, ``conflicts`` shared facts edited on both."""
    root = vault.root
    shared = [Fact(id=f"fact-shared-{i}", topics=("project-alpha",), body=f"Shared fact {i}.\n",
                   created="2026-09-23T12:00:00+00:00") for i in range(conflicts + 2)]
    vault.import_records(shared, source="test")
    run_git(root, "branch", "theirs")
    for side in ("ours", "theirs"):
        run_git(root, "checkout", "-q", "main" if side == "ours" else "theirs")
        with Vault.open(root, actor=side) as v:
            v.import_records([Fact(id=f"fact-{side}-{i}", topics=("project-alpha",), body=f"{side} learned {i}.\n",
                                   created="2026-09-24T12:00:00+00:00") for i in range(each)], source=side)
        for i in range(conflicts):
            path = next((root / "facts").rglob(f"fact-shared-{i}.md"))
            path.write_text(path.read_text().replace(f"fact {i}.", f"fact {i}, as {side} saw it."))
        run_git(root, "commit", "-q", "-am", f"{side} edits")
    run_git(root, "checkout", "-q", "main")


def _packs(root: Path) -> set[str]:
    return {p.name for p in (root / ".git" / "objects" / "pack").iterdir()}


def test_a_merge_flushes_once_and_writes_what_git_diff_lists(alpha: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    if common._syncfs is None:
        pytest.skip("no syncfs on this system: every file is fsynced instead")
    vault: Vault = alpha
    _diverge(vault)
    flushes = []
    real = common._syncfs

    def counted(fd: int) -> int:
        flushes.append(fd)
        return int(real(fd))

    monkeypatch.setattr(common, "_syncfs", counted)
    with Vault.open(vault.root) as v:
        report = merge_branch(v, "theirs")
    assert report.action == "merge" and len(report.contested) == 4
    assert len(flushes) == 1  # the pack, the work tree, the journal and Git's index in one syncfs
    listed = run_git(vault.root, "diff", "--name-only", "HEAD^1", "HEAD").split()
    assert report.changed == len(listed) == 4 + 2 + 2 * 2  # theirs' facts, both edited facts, a copy and a relation each
    assert run_git(vault.root, "status", "--porcelain", "--untracked-files=all") == ""
    assert run_git(vault.root, "diff", "--cached", "--name-only") == ""
    assert run_git(vault.root, "write-tree").strip() == run_git(vault.root, "rev-parse", "HEAD^{tree}").strip()
    assert not any(p.startswith("tmp_") for p in _packs(vault.root))
    fsck_clean(vault.root)


def _am_merge(root: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, "-m", "am.cli.entry", "--vault", str(root), "merge", "theirs"], check=False,
                          capture_output=True, text=True, env=subprocess_env(**env))


def test_a_merge_killed_before_its_pack_is_in_place_is_finished_by_the_next(alpha: Any) -> None:
    vault: Vault = alpha
    _diverge(vault)
    root = vault.root
    before, packs_before = run_git(root, "rev-parse", "HEAD").strip(), _packs(root)
    killed = _am_merge(root, AM_FAILPOINT="sync-files")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert run_git(root, "rev-parse", "HEAD").strip() == before
    journal = json.loads((root / ".git" / "am" / "sync-move.json").read_text())
    assert f"{journal['pack']['name']}.pack" not in _packs(root)  # still under its temporary name
    assert run_git(root, "cat-file", "-e", journal["to"], check=False) == ""  # git cannot see the commit yet
    done = _am_merge(root)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("nothing to merge"), done.stdout  # the journal's move finished it
    assert run_git(root, "rev-parse", "HEAD").strip() == journal["to"]
    assert run_git(root, "rev-list", "--parents", "-n1", "HEAD").split()[1:] == [
        before, run_git(root, "rev-parse", "theirs").strip()]
    assert f"{journal['pack']['name']}.pack" in _packs(root) and _packs(root) > packs_before
    assert run_git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert run_git(root, "diff", "--cached", "--name-only") == ""
    assert not (root / ".git" / "am" / "sync-move.json").exists()
    fsck_clean(root)


def test_a_torn_pending_pack_is_never_installed_and_the_merge_is_redone(alpha: Any) -> None:
    vault: Vault = alpha
    _diverge(vault)
    root = vault.root
    before = run_git(root, "rev-parse", "HEAD").strip()
    assert _am_merge(root, AM_FAILPOINT="sync-files").returncode == -signal.SIGKILL
    journal = json.loads((root / ".git" / "am" / "sync-move.json").read_text())
    tmp = root / ".git" / "objects" / "pack" / journal["pack"]["pack"]
    data = tmp.read_bytes()
    tmp.chmod(0o644)
    tmp.write_bytes(data[: len(data) // 2])  # as a crash of the machine may leave an unflushed file
    done = _am_merge(root)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("merge branch theirs in commit "), done.stdout  # merged again, from the start
    # The torn file was never put in place (a merge within the same second makes the same pack again, whole).
    installed = root / ".git" / "objects" / "pack" / f"{journal['pack']['name']}.pack"
    assert not installed.exists() or installed.read_bytes() == data
    assert run_git(root, "rev-parse", "HEAD^1").strip() == before
    assert run_git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert run_git(root, "diff", "--cached", "--name-only") == ""
    fsck_clean(root)


def test_a_merge_stopped_by_the_disk_says_how_to_finish_it_and_the_next_one_does(
        alpha: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from am.errors import StorageError
    import am.git.movefiles as movefiles

    vault: Vault = alpha
    _diverge(vault, each=6)
    root = vault.root
    before = run_git(root, "rev-parse", "HEAD").strip()
    real, calls = movefiles.write_atomic, []

    def full_disk(*args: Any, **kw: Any) -> None:
        calls.append(args[1])
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device", args[1])
        real(*args, **kw)

    monkeypatch.setattr(movefiles, "write_atomic", full_disk)
    with Vault.open(root) as v, pytest.raises(StorageError) as stopped:
        merge_branch(v, "theirs")
    assert "could not finish the merge" in str(stopped.value) and "No space left" in str(stopped.value)
    assert stopped.value.hint.startswith("free some disk space; then run am merge theirs: it finishes this merge")
    assert run_git(root, "rev-parse", "HEAD").strip() == before  # the branch has not moved
    assert (root / ".git" / "am" / "sync-move.json").exists()
    monkeypatch.setattr(movefiles, "write_atomic", real)
    done = _am_merge(root)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("nothing to merge"), done.stdout  # the journal's move finished it
    assert run_git(root, "rev-list", "--parents", "-n1", "HEAD").split()[1:] == [
        before, run_git(root, "rev-parse", "theirs").strip()]
    assert run_git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert run_git(root, "diff", "--cached", "--name-only") == ""
    fsck_clean(root)

"""am never moves a branch it cannot also record in Git's index (issue 36, item 1).

A git command holding `.git/index.lock` past am's wait (AM_GIT_LOCK_WAIT) used
to let am commit anyway and leave Git's index without the new file: the next
`git commit -a` deleted the acknowledged fact, and a `git merge` holding the
lock failed its own ref update and left MERGE_HEAD. Now the write fails with
exit 8 and changes nothing. Git's state is read with the git CLI; the holders
are real processes (a lock holder, a real `git merge` with a slow driver).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from conftest import run_git, subprocess_env

from adversarial._helpers import add_fact, am, fact_id, head_files, staged_differences
from am.vault import Vault

_HOLD = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
os.unlink(sys.argv[1])
"""


def _hold_index_lock(root: Path, seconds: float) -> subprocess.Popen[str]:
    """Start a process that takes `.git/index.lock` as git does (O_EXCL) and holds it for ``seconds``."""
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(root / ".git" / "index.lock"), str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def _fact_paths(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.glob("facts/**/*.md")}


def test_a_write_refused_while_git_holds_the_index_changes_nothing(alpha: Vault) -> None:
    root = alpha.root
    head = run_git(root, "rev-parse", "HEAD").strip()
    files = _fact_paths(root)
    holder = _hold_index_lock(root, 3)
    try:
        proc = add_fact(root, "Written while git held the index.", AM_GIT_LOCK_WAIT="0.5", AM_GIT_LOCK_STALE="600")
        assert proc.returncode == 8, proc.stdout + proc.stderr
        assert "index.lock" in proc.stderr and "nothing was changed" in proc.stderr
        assert "Traceback" not in proc.stderr
        # The vault is exactly as before: the branch, the work tree, no new objects reachable from anywhere.
        assert run_git(root, "rev-parse", "HEAD").strip() == head
        assert _fact_paths(root) == files
        assert run_git(root, "status", "--porcelain", "--untracked-files=all").strip() == ""
        # A refused write is no lost one: am recover has nothing to bring back.
        assert json.loads(am(root, "recover", "--format", "json").stdout)["lost"] == []
    finally:
        holder.wait(timeout=30)
    # What an IDE does next: nothing of am's to delete, and the retried write lands and stays.
    run_git(root, "commit", "-q", "--allow-empty", "-am", "by hand")
    fid = fact_id(add_fact(root, "Written once git let go."))
    run_git(root, "commit", "-q", "--allow-empty", "-am", "by hand again")
    assert any(fid in p for p in head_files(root, "facts"))
    assert staged_differences(root) == ""
    assert run_git(root, "fsck", "--strict", "--no-dangling").strip() == ""  # the libgit2 writer leaves objects


def test_a_write_waits_for_a_short_git_command_and_keeps_the_index(alpha: Vault) -> None:
    root = alpha.root
    holder = _hold_index_lock(root, 1)
    try:
        fid = fact_id(add_fact(root, "Written after a short git command.", AM_GIT_LOCK_WAIT="20"))
    finally:
        holder.wait(timeout=30)
    assert staged_differences(root) == ""
    run_git(root, "commit", "-q", "--allow-empty", "-am", "by hand")
    assert any(fid in p for p in head_files(root, "facts"))


def test_a_write_during_a_slow_git_merge_neither_breaks_the_merge_nor_is_lost(alpha: Vault, tmp_path: Path) -> None:
    root = alpha.root
    # A file both sides change, merged by a slow driver: git merge holds index.lock while the driver runs.
    (root / ".gitattributes").write_text("notes.txt merge=slow\n")
    (root / "notes.txt").write_text("base\n")
    run_git(root, "add", ".gitattributes", "notes.txt")
    run_git(root, "commit", "-q", "-m", "notes")
    run_git(root, "config", "merge.slow.driver", "sleep 3; exit 0")
    run_git(root, "checkout", "-q", "-b", "other")
    (root / "notes.txt").write_text("other\n")
    run_git(root, "commit", "-q", "-am", "other's notes")
    run_git(root, "checkout", "-q", "main")
    (root / "notes.txt").write_text("ours\n")
    run_git(root, "commit", "-q", "-am", "our notes")
    merge = subprocess.Popen(["git", "merge", "-q", "--no-edit", "other"], cwd=root, env=subprocess_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lock = root / ".git" / "index.lock"
    until = time.monotonic() + 10
    while not lock.exists() and time.monotonic() < until:
        time.sleep(0.01)
    assert lock.exists(), "git merge took Git's index lock"
    proc = add_fact(root, "Written during a git merge.", AM_GIT_LOCK_WAIT="0.5", AM_GIT_LOCK_STALE="600")
    out, err = merge.communicate(timeout=60)
    assert merge.returncode == 0, out + err  # before: "cannot lock ref 'HEAD'", MERGE_HEAD left behind
    assert proc.returncode == 8, proc.stdout + proc.stderr
    assert "git merge" in proc.stderr  # the holder, named
    assert not (root / ".git" / "MERGE_HEAD").exists()
    assert len(run_git(root, "rev-list", "--parents", "-n", "1", "HEAD").split()) == 3  # git's merge commit
    # The agent retries; the person's next commit keeps the fact.
    fid = fact_id(add_fact(root, "Written during a git merge."))
    run_git(root, "commit", "-q", "--allow-empty", "-am", "by hand")
    assert any(fid in p for p in head_files(root, "facts"))
    assert staged_differences(root) == ""


def test_pre_commit_refuses_to_delete_a_committed_record_the_index_lacks(alpha: Vault) -> None:
    root = alpha.root
    hooked = am(root, "hooks", "install")
    assert hooked.returncode == 0, hooked.stderr
    fid = fact_id(add_fact(root, "A fact Git's index lost."))
    path = next(p for p in head_files(root, "facts") if fid in p)
    # Git's index without the file, the work tree and HEAD with it: what an index update that never happened leaves.
    run_git(root, "rm", "-q", "--cached", path)
    refused = subprocess.run(["git", "commit", "-q", "--allow-empty", "-am", "by hand"], cwd=root,
                             env=subprocess_env(), capture_output=True, text=True)
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert path in refused.stderr and "git add" in refused.stderr
    assert path in head_files(root, "facts")
    # A person's real deletion (the file gone too) stays a warning, as docs/hooks.md says.
    run_git(root, "add", path)
    (root / path).unlink()
    deleted = subprocess.run(["git", "commit", "-q", "-am", "removed by hand"], cwd=root, env=subprocess_env(),
                             capture_output=True, text=True)
    assert deleted.returncode == 0, deleted.stderr
    assert "is deleted" in deleted.stderr


def test_doctor_names_and_restores_a_fact_a_git_commit_deleted(alpha: Vault) -> None:
    # What earlier versions left: the fact committed, Git's index without it, and a person's commit that
    # deleted it (the file stays in the work tree, untracked).
    root = alpha.root
    fid = fact_id(add_fact(root, "A fact a git commit deleted."))
    path = next(p for p in head_files(root, "facts") if fid in p)
    run_git(root, "rm", "-q", "--cached", path)
    run_git(root, "commit", "-q", "--no-verify", "-m", "by hand")
    assert path not in head_files(root, "facts")
    found = json.loads(am(root, "doctor", "--format", "json").stdout)["findings"]
    mine = [f for f in found if f["path"] == path]
    assert [f["kind"] for f in mine] == ["orphan"] and "deleted by commit" in mine[0]["message"], found
    fixed = am(root, "doctor", "--fix")
    assert fixed.returncode == 0, fixed.stderr
    assert path in head_files(root, "facts")
    assert staged_differences(root) == ""

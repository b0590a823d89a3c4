"""Hangs on the write path (issue 14): every wait has a deadline and a message; symbolic branches resolve."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import run_git

from adversarial._helpers import add_fact, am, fact_id, one_line_error
from am.vault import Vault


def _linked_worktree(alpha: Vault) -> Path:
    wt = alpha.root.parent / "linked"
    run_git(alpha.root, "worktree", "add", "-q", "-b", "side", str(wt))
    return wt


def test_a_held_branch_lock_in_a_linked_worktree_times_out_with_a_message(alpha: Vault) -> None:
    wt = _linked_worktree(alpha)
    lock = alpha.root / ".git" / "refs" / "heads" / "side.lock"  # branches live in the common Git folder
    lock.write_text("")
    try:
        proc = add_fact(wt, "Written in a linked worktree.", AM_GIT_LOCK_WAIT="0.5", timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError("am spun on the lock instead of giving up at its deadline") from None
    line = one_line_error(proc)
    assert proc.returncode == 8 and "side.lock" in line, proc.stderr
    assert run_git(wt, "rev-parse", "side").strip() == run_git(alpha.root, "rev-parse", "main").strip()


def test_a_stale_branch_lock_in_a_linked_worktree_is_moved_aside(alpha: Vault) -> None:
    wt = _linked_worktree(alpha)
    lock = alpha.root / ".git" / "refs" / "heads" / "side.lock"
    lock.write_text("")
    old = time.time() - 600
    os.utime(lock, (old, old))
    fact_id(add_fact(wt, "Written past a stale lock.", timeout=60))
    assert not lock.exists()
    doctor = am(wt, "doctor", "--fix", timeout=60)
    assert doctor.returncode == 0, doctor.stderr


def test_doctor_sees_and_clears_a_stale_lock_of_a_linked_worktree(alpha: Vault) -> None:
    wt = _linked_worktree(alpha)
    lock = alpha.root / ".git" / "refs" / "heads" / "side.lock"
    lock.write_text("")
    old = time.time() - 600
    os.utime(lock, (old, old))
    proc = am(wt, "doctor", "--fix", timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert not lock.exists()


def test_a_symbolic_ref_chain_for_the_branch_is_followed(alpha: Vault) -> None:
    root = alpha.root
    run_git(root, "symbolic-ref", "refs/heads/alias", "refs/heads/main")
    run_git(root, "symbolic-ref", "HEAD", "refs/heads/alias")
    before = run_git(root, "rev-parse", "main").strip()
    fid = fact_id(add_fact(root, "Written through a symbolic branch.", timeout=60))
    assert run_git(root, "rev-parse", "main~1").strip() == before
    assert any(fid in p for p in run_git(root, "ls-tree", "-r", "--name-only", "main", "facts").split())
    assert run_git(root, "symbolic-ref", "refs/heads/alias").strip() == "refs/heads/main"


def test_an_immutable_refs_folder_ends_in_gits_error_not_a_spin(alpha: Vault) -> None:
    root = alpha.root
    heads = root / ".git" / "refs" / "heads"
    if subprocess.run(["chattr", "+i", str(heads)], capture_output=True, check=False).returncode != 0:
        print("chattr +i is not permitted here: skipping")
        pytest.skip("setting the immutable attribute needs root on a file system that has it")
    try:
        before = run_git(root, "rev-parse", "HEAD").strip()
        proc = add_fact(root, "Written where refs cannot change.", AM_GIT_LOCK_WAIT="0.5", timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError("am spun on a lock it can never take") from None
    finally:
        subprocess.run(["chattr", "-i", str(heads)], check=False)
    line = one_line_error(proc)
    assert proc.returncode == 11 and "permit" in line.lower(), line
    assert run_git(root, "rev-parse", "HEAD").strip() == before
    assert run_git(root, "status", "--porcelain", "--untracked-files=all").strip() == ""

"""A killed `am sync` never leaves the other machine's facts staged as deleted (issue 36 item 2).

A sync moves the branch and then updates Git's index. A kill between the two
leaves the index at the old tree: `git status` shows the facts the other side
brought as deleted, and a plain `git commit -am` would commit their deletion.
The journal of the move (.git/am/sync-move.json) lets the next sync finish it;
if an am write moved the branch on meanwhile, the next sync (and `am doctor
--fix`) still sets the lagging index entries back to HEAD's. `git status
--porcelain` is the oracle: no record staged as deleted.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, fsck_clean, run_git, subprocess_env
from gitserver import synced_with_bare
from test_sync import clone, ids_in

from am.sync import sync
from am.vault import Vault


@pytest.fixture
def local_pair(alpha: Any, tmp_path: Path) -> Iterator[tuple[Vault, Vault]]:
    """Two clones of one vault through a bare repository on a local path, b behind a by three facts."""
    a: Vault = alpha
    bare = synced_with_bare(a, tmp_path)
    b = clone(str(bare), tmp_path / "b", actor="agent-b")
    for i in range(3):
        a.add_fact(f"A learned {i}.", topics=["project-alpha"], id=f"fact-a-{i}")
        b.add_fact(f"B learned {i}.", topics=["project-alpha"], id=f"fact-b-{i}")
    sync(a)
    yield a, b
    b.close()


def am(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(root), *args], check=False,
                          capture_output=True, text=True, env=subprocess_env(**env))


def staged_deletions(root: Path) -> list[str]:
    """Record files `git status` shows as deleted in the index (the oracle)."""
    lines = run_git(root, "status", "--porcelain", "--untracked-files=no").splitlines()
    return [line[3:] for line in lines if line[:1] == "D" and line[3:].endswith(".md")]


def commit_all_and_sync(a: Vault, b: Vault) -> None:
    """What a person (or obsidian-git) does next: commit everything git sees, then sync both machines."""
    run_git(b.root, "commit", "-q", "-am", "by hand", check=False)
    assert am(b.root, "sync").returncode == 0
    sync(a)
    assert am(b.root, "sync").returncode == 0


def test_an_am_write_after_a_sync_killed_before_the_index_leaves_no_staged_deletion(
        local_pair: tuple[Vault, Vault]) -> None:
    a, b = local_pair
    killed = am(b.root, "sync", AM_FAILPOINT="sync-moved")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    # An agent writes before anyone syncs again: the branch moves on past the half-finished move.
    added = am(b.root, "fact", "add", "B learned late.", "--topic", "project-alpha", "--id", "fact-b-late")
    assert added.returncode == 0, added.stderr
    assert staged_deletions(b.root) == []  # the write set the entries the killed sync noted
    done = am(b.root, "sync")
    assert done.returncode == 0, done.stderr
    assert staged_deletions(b.root) == []
    commit_all_and_sync(a, b)
    union = {f"fact-a-{i}" for i in range(3)} | {f"fact-b-{i}" for i in range(3)} | {"fact-b-late"}
    for root in (a.root, b.root):
        assert ids_in(root) == union
        fsck_clean(root)


def test_the_next_sync_sets_the_index_of_a_move_an_am_write_overtook_without_a_note(
        local_pair: tuple[Vault, Vault]) -> None:
    a, b = local_pair
    assert am(b.root, "sync", AM_FAILPOINT="sync-moved").returncode == -signal.SIGKILL
    # No note of the move (a power cut tore it, or an am before this one was killed): only the journal tells.
    (b.root / ".git" / "am" / "inflight").unlink()
    added = am(b.root, "fact", "add", "B learned late.", "--topic", "project-alpha", "--id", "fact-b-late")
    assert added.returncode == 0, added.stderr
    assert staged_deletions(b.root)  # the write could not know
    done = am(b.root, "sync")
    assert done.returncode == 0, done.stderr
    assert staged_deletions(b.root) == []
    assert run_git(b.root, "status", "--porcelain").strip() == ""
    assert not (b.root / ".git" / "am" / "sync-move.json").exists()
    commit_all_and_sync(a, b)
    union = {f"fact-a-{i}" for i in range(3)} | {f"fact-b-{i}" for i in range(3)} | {"fact-b-late"}
    for root in (a.root, b.root):
        assert ids_in(root) == union


def test_am_doctor_names_an_index_that_lags_the_branch_and_fix_repairs_it(local_pair: tuple[Vault, Vault]) -> None:
    a, b = local_pair
    assert am(b.root, "sync", AM_FAILPOINT="sync-moved").returncode == -signal.SIGKILL
    # Neither the journal nor the note (a user's cleanup): only the index tells.
    (b.root / ".git" / "am" / "sync-move.json").unlink()
    (b.root / ".git" / "am" / "inflight").unlink(missing_ok=True)
    assert staged_deletions(b.root)
    doctor = am(b.root, "doctor")
    assert doctor.returncode != 0
    assert "index" in doctor.stdout + doctor.stderr and "fact-a-0" in doctor.stdout + doctor.stderr
    fixed = am(b.root, "doctor", "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert staged_deletions(b.root) == []
    assert run_git(b.root, "status", "--porcelain").strip() == ""


def _kill_loop(a: Vault, b: Vault, kills: int, seed: int) -> None:
    rng = random.Random(seed)
    written = {f"fact-a-{i}" for i in range(3)} | {f"fact-b-{i}" for i in range(3)}
    for n in range(kills):
        side = (a, b)[n % 2]
        fid = f"fact-{'ab'[n % 2]}-k{n}"
        # Not "Learned 0.": the fixture's "A learned 0." says it (a stop word apart), so nothing would be written.
        assert am(side.root, "fact", "add", f"Kill round {n} wrote this.", "--topic", "project-alpha", "--id",
                  fid).returncode == 0
        written.add(fid)
        proc = subprocess.Popen([PYTHON, "-m", "am.cli.main", "--vault", str(side.root), "sync"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=subprocess_env())
        time.sleep(rng.uniform(0.05, 0.6))
        with_kill = proc.poll() is None
        if with_kill:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        if rng.random() < 0.5:  # an am write right after the kill, before any sync
            fid = f"fact-{'ab'[n % 2]}-w{n}"
            assert am(side.root, "fact", "add", f"Then {n}.", "--topic", "project-alpha", "--id", fid).returncode == 0
            written.add(fid)
        assert am(side.root, "sync").returncode == 0
        assert staged_deletions(side.root) == [], n
    for _ in range(2):
        for side in (a, b):
            commit_all_and_sync_one(side)
    for side in (a, b):
        assert ids_in(side.root) == written
        fsck_clean(side.root)


def commit_all_and_sync_one(side: Vault) -> None:
    run_git(side.root, "commit", "-q", "-am", "by hand", check=False)
    done = am(side.root, "sync")
    assert done.returncode == 0, done.stderr


def test_random_kills_of_sync_leave_no_staged_deletion_short(local_pair: tuple[Vault, Vault]) -> None:
    _kill_loop(*local_pair, kills=3, seed=36)


@pytest.mark.stress
def test_random_kills_of_sync_leave_no_staged_deletion(local_pair: tuple[Vault, Vault]) -> None:
    _kill_loop(*local_pair, kills=60, seed=362)

"""A ref lock a killed push left in a local-path remote (issue 36 item 15).

A `git push` killed with its `git receive-pack` (a kill of the process group)
leaves `refs/heads/main.lock` in the remote, and every later push fails. `am
sync` names that file and how to clear it; a lock that is provably stale
(older than AM_GIT_LOCK_STALE, no process working in the remote) is moved
aside into `.git/am/stale-locks/` and the push made again. What is kept there
is pruned: at most 50 files, none older than 30 days.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, run_git, subprocess_env
from gitserver import synced_with_bare
from test_sync import ids_in

from am.git.coord import asidelocks
from am.vault import Vault


@pytest.fixture
def ahead(alpha: Any, tmp_path: Path) -> Iterator[tuple[Vault, Path]]:
    """A vault synced with a bare repository on a local path, then one fact ahead of it: (vault, bare)."""
    a: Vault = alpha
    bare = synced_with_bare(a, tmp_path)
    a.add_fact("A learned late.", topics=["project-alpha"], id="fact-late")
    yield a, bare


def am_sync(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(root), "sync"], check=False,
                          capture_output=True, text=True, env=subprocess_env())


def test_a_held_ref_lock_in_the_remote_is_named_with_how_to_clear_it(ahead: tuple[Vault, Path]) -> None:
    a, bare = ahead
    lock = bare / "refs" / "heads" / "main.lock"
    lock.write_text("left by a killed push\n")
    done = am_sync(a.root)
    assert done.returncode != 0
    assert str(lock) in done.stderr, done.stderr
    assert f"rm {lock}" in done.stderr
    assert lock.exists()  # a fresh lock may be a push under way: left alone
    assert "fact-late" not in ids_in(bare, "main")
    lock.unlink()
    assert am_sync(a.root).returncode == 0
    assert "fact-late" in ids_in(bare, "main")


def test_a_stale_ref_lock_in_a_local_remote_is_moved_aside_and_the_push_lands(ahead: tuple[Vault, Path]) -> None:
    a, bare = ahead
    lock = bare / "refs" / "heads" / "main.lock"
    lock.write_text("left by a killed push\n")
    old = time.time() - 3600
    os.utime(lock, (old, old))
    done = am_sync(a.root)
    assert done.returncode == 0, done.stderr
    assert not lock.exists()
    assert "fact-late" in ids_in(bare, "main")
    kept = list((a.root / ".git" / "am" / "stale-locks").iterdir())
    assert [p.name.startswith("remote-origin-main.lock.") for p in kept] == [True]
    assert kept[0].read_text() == "left by a killed push\n"
    run_git(bare, "fsck", "--strict")


def test_moved_aside_locks_are_pruned_to_the_newest_fifty_none_past_thirty_days(tmp_path: Path) -> None:
    am_dir = tmp_path / "am"
    aside = am_dir / "stale-locks"
    aside.mkdir(parents=True)
    now = time.time()
    for n in range(60):
        path = aside / f"index.lock.{n}"
        path.write_text("")
        age = (40 * 86400 if n < 5 else n)  # five from 40 days ago, the rest seconds old
        os.utime(path, (now - age, now - age))
    lock = tmp_path / "index.lock"
    lock.write_text("x")
    moved = asidelocks.move_aside(am_dir, lock)
    assert moved is not None and moved.exists() and not lock.exists()
    names = {p.name for p in aside.iterdir()}
    assert len(names) == 50
    assert moved.name in names
    assert not any(f"index.lock.{n}" in names for n in range(5))  # the old ones went first
    assert {f"index.lock.{n}" for n in range(5, 54)} <= names  # then the oldest of the recent

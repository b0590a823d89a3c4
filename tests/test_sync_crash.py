"""kill -9 at each step of `am sync` (fetch, merge, push): nothing is lost on either side, and a second sync completes it.

Each killed sync is a real `am sync` process that SIGKILLs itself at a
failpoint (AM_FAILPOINT, am/git/remote.py SYNC_FAILPOINTS), against a real Git
server on loopback. Between the kill and the rerun the vault's branch is either
where it was or at the finished merge; after the rerun both clones and the
server hold the union, the work tree and Git's index match HEAD, and the
server's branch only ever moved forward.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, fsck_clean, run_git, subprocess_env
from gitserver import git_daemon, make_bare, only_fast_forwards
from test_sync import clone, ids_in

from am.git.remote import SYNC_FAILPOINTS
from am.sync import sync
from am.vault import Vault

# The two steps that leave the vault half way (files written, or the branch moved
# before Git's index) run by default; every step runs under -m stress.
_DEFAULT = ("sync-files", "sync-moved")
_CASES = [pytest.param(n, marks=() if n in _DEFAULT else pytest.mark.stress) for n in SYNC_FAILPOINTS]


@pytest.fixture
def diverged(alpha: Any, tmp_path: Path) -> Iterator[tuple[Vault, Vault, Path]]:
    """Two clones, each with facts the other lacks, a's already on the server: (a, b, bare repository)."""
    base = tmp_path / "server"
    base.mkdir()
    bare = make_bare(base)
    with git_daemon(base) as url:
        a: Vault = alpha
        sync(a, set_upstream=f"{url}/vault.git")
        b = clone(f"{url}/vault.git", tmp_path / "b", actor="agent-b")
        for i in range(3):
            a.add_fact(f"A learned {i}.", topics=["project-alpha"], id=f"fact-a-{i}")
            b.add_fact(f"B learned {i}.", topics=["project-alpha"], id=f"fact-b-{i}")
        sync(a)
        yield a, b, bare
        b.close()


def am_sync(root: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(root), "sync"], check=False,
                          capture_output=True, text=True, env=subprocess_env(**env))


@pytest.mark.parametrize("step", _CASES)
def test_kill_9_during_sync_loses_nothing_and_a_rerun_completes(
        diverged: tuple[Vault, Vault, Path], step: str) -> None:
    a, b, bare = diverged
    before = run_git(b.root, "rev-parse", "HEAD").strip()
    mine = ids_in(b.root)
    killed = am_sync(b.root, AM_FAILPOINT=step)
    assert killed.returncode == -signal.SIGKILL, (step, killed.returncode, killed.stderr)
    now = run_git(b.root, "rev-parse", "HEAD").strip()
    if now != before:  # as after: a merge of both sides
        assert run_git(b.root, "rev-list", "--parents", "-n1", "HEAD").split()[1:] == [before, run_git(
            b.root, "rev-parse", "origin/main").strip()]
    assert ids_in(b.root) >= mine  # nothing of b's is lost
    done = am_sync(b.root)
    assert done.returncode == 0, done.stderr
    sync(a)
    union = {f"fact-a-{i}" for i in range(3)} | {f"fact-b-{i}" for i in range(3)}
    for root in (a.root, b.root):
        assert ids_in(root) == union
        assert run_git(root, "status", "--porcelain", "--untracked-files=all").strip() == ""
        assert run_git(root, "diff", "--cached", "--name-only").strip() == ""
        fsck_clean(root)
    assert ids_in(bare, "main") == union
    assert not (b.root / ".git" / "am" / "sync-move.json").exists()
    only_fast_forwards(bare)

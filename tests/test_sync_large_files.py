"""`am sync` copies a large file that is not a record without holding it in memory, and refuses a huge record.

A fast-forward or a merge that brought a large file read it whole through
libgit2 and again as Python bytes: about three times the file, so a 2 GB file
in a remote broke every clone's sync, and under a memory limit it died with a
MemoryError traceback. Now a file that is not a record and is over 4 MiB is
copied by ``git cat-file`` into its file a mebibyte at a time, a work-tree file
is hashed in pieces, and a record over 1 MiB (no record am wrote) is refused
before anything is read or changed, named with its commit. The sync runs
under ``RLIMIT_AS`` in a child process; the git CLI is the oracle.
"""

from __future__ import annotations

import resource
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, run_git, subprocess_env
from gitserver import synced_with_bare
from test_sync import clone

from am.sync import sync
from am.vault import Vault

_MB = 1 << 20


def _sync_limited(root: Path, limit_mb: int) -> subprocess.CompletedProcess[str]:
    """Run am sync in ``root`` with its address space (and its git children's) capped at ``limit_mb``."""
    run_git(root, "fetch", "-q")  # the transfer beforehand, unlimited: what is measured is am's own copy

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_mb * _MB, limit_mb * _MB))
    return subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(root), "sync"], capture_output=True, text=True,
                          env=subprocess_env(), preexec_fn=cap, timeout=300, check=False)


def _big_file(root: Path, rel: str, size_mb: int) -> None:
    """A file of ``size_mb`` MiB that zlib packs small (fast to commit and fetch; libgit2 still inflates it whole)."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    block = bytes(range(256)) * 4096  # 1 MiB
    with open(path, "wb") as f:
        for _ in range(size_mb):
            f.write(block)
    run_git(root, "add", rel)
    run_git(root, "commit", "-q", "--no-verify", "-m", f"a {size_mb} MiB file")


@pytest.fixture
def pair(alpha: Any, tmp_path: Path) -> Iterator[tuple[Vault, Vault]]:
    a: Vault = alpha
    bare = synced_with_bare(a, tmp_path)
    b = clone(str(bare), tmp_path / "b", actor="agent-b")
    yield a, b
    b.close()


def _same_file(a: Path, b: Path, rel: str) -> None:
    assert run_git(b, "rev-parse", f"HEAD:{rel}").strip() == run_git(a, "rev-parse", f"HEAD:{rel}").strip()
    assert run_git(b, "hash-object", rel).strip() == run_git(b, "rev-parse", f"HEAD:{rel}").strip()
    assert run_git(b, "status", "--porcelain", "--untracked-files=no") == ""


def _check_large_file_syncs(pair: tuple[Vault, Vault], size_mb: int, limit_mb: int, *, diverged: bool,
                            rel: str = "assets/model.bin") -> None:
    a, b = pair
    _big_file(a.root, rel, size_mb)
    a.add_fact(f"A fact beside {rel}.", topics=["project-alpha"])
    assert sync(a).pushed
    if diverged:
        b.add_fact("B wrote meanwhile.", topics=["project-alpha"])
    done = _sync_limited(b.root, limit_mb)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    _same_file(a.root, b.root, rel)


def test_a_fast_forward_and_a_merge_copy_a_48_mib_file_under_a_memory_limit(pair: tuple[Vault, Vault]) -> None:
    # Before: ~3 x 48 MiB on top of am's own ~100 MiB; a MemoryError traceback under this limit.
    _check_large_file_syncs(pair, 48, 160, diverged=False)
    _check_large_file_syncs(pair, 48, 160, diverged=True, rel="assets/model-2.bin")


@pytest.mark.stress
def test_a_fast_forward_copies_a_512_mib_file_under_a_memory_limit(pair: tuple[Vault, Vault]) -> None:
    _check_large_file_syncs(pair, 512, 256, diverged=False)


def test_a_record_larger_than_am_reads_is_refused_by_name_and_nothing_changes(pair: tuple[Vault, Vault]) -> None:
    a, b = pair
    rel = "facts/2026/12/03/fact-huge.md"
    (a.root / "facts" / "2026" / "12" / "03").mkdir(parents=True, exist_ok=True)
    (a.root / rel).write_bytes(b"---\ntype: fact\nid: fact-huge\n---\n" + b"x" * (2 * _MB))
    run_git(a.root, "add", rel)
    run_git(a.root, "commit", "-q", "--no-verify", "-m", "a record far too large")
    run_git(a.root, "push", "-q", "origin", "main")
    head = run_git(b.root, "rev-parse", "HEAD").strip()
    for diverged in (False, True):
        if diverged:
            b.add_fact("B wrote meanwhile.", topics=["project-alpha"], id="fact-b-meanwhile")
            head = run_git(b.root, "rev-parse", "HEAD").strip()
        done = _sync_limited(b.root, 1024)
        assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
        assert rel in done.stderr and "larger than a record am reads" in done.stderr, done.stderr
        assert run_git(b.root, "rev-parse", "HEAD").strip() == head
        assert not (b.root / rel).exists()

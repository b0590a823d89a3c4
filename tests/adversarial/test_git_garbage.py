"""Garbage on the write path (issue 14): crash leftovers go with the next write, packs merge beside a multi-pack index."""

from __future__ import annotations

import os
import subprocess

from conftest import fsck_clean, run_git

from adversarial._helpers import add_fact, fact_id
from am.git.formats.midx import covered_packs
from am.vault import Vault


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_leftovers_of_killed_writers_are_cleared_by_the_next_write(alpha: Vault) -> None:
    root = alpha.root
    am_dir = root / ".git" / "am"
    queue = am_dir / "queue"
    queue.mkdir(parents=True, exist_ok=True)
    dead, alive = _dead_pid(), os.getpid()  # this test process is alive: its files must stay
    left = [am_dir / f"index.{dead}.tmp", am_dir / f".inflight.{dead}.tmp",
            *(queue / f"{dead}-0-0badcafe.{ext}" for ext in ("req", "claimed", "done")),
            queue / f".{dead}-1-0badcafe.tmp"]
    kept = [am_dir / f"index.{alive}.tmp", queue / f"{alive}-0-0badcafe.done"]
    for f in left + kept:
        f.write_bytes(b"left by a killed writer")
    fact_id(add_fact(root, "The next write clears them."))
    assert [f for f in left if f.exists()] == []
    assert all(f.exists() for f in kept)


def test_a_killed_writers_index_temp_file_goes_with_the_next_write(alpha: Vault) -> None:
    root = alpha.root
    proc = add_fact(root, "Killed after its files.", AM_FAILPOINT="after-objects")
    assert proc.returncode == -9
    assert list((root / ".git" / "am").glob("index.*.tmp"))
    fact_id(add_fact(root, "The next write."))
    assert not list((root / ".git" / "am").glob("index.*.tmp"))


def test_packs_are_merged_beside_a_multi_pack_index(alpha: Vault) -> None:
    root = alpha.root
    pack_dir = root / ".git" / "objects" / "pack"
    for n in range(3):
        alpha.add_fact(f"Before the multi-pack index {n}.", topics=["project-alpha"])
    run_git(root, "multi-pack-index", "write")
    covered = covered_packs(pack_dir, sorted(p.name for p in pack_dir.iterdir()))
    assert covered, "git wrote a multi-pack index naming the packs"
    for n in range(24):
        alpha.add_fact(f"After the multi-pack index {n}.", topics=["project-alpha"])
    packs = {p.name[:-4] for p in pack_dir.glob("pack-*.idx")}
    assert covered <= packs, "a pack the multi-pack index names was removed"
    assert len(packs - covered) < 12, f"{len(packs - covered)} packs not merged"
    run_git(root, "multi-pack-index", "verify")
    fsck_clean(root)

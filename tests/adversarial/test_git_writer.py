"""The escape hatch (issue 14): AM_GIT_WRITER=libgit2 writes through libgit2's object, tree and index writers only."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import PYTHON, fsck_clean, run_git, subprocess_env

from adversarial._helpers import add_fact, fact_id, head_files, staged_differences
from am.vault import Vault


@pytest.fixture
def libgit2_writer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AM_GIT_WRITER", "libgit2")


def _packs(root: Path) -> list[str]:
    return sorted(p.name for p in (root / ".git" / "objects" / "pack").glob("*.pack"))


def test_the_libgit2_writer_writes_loose_objects_and_a_clean_index(alpha: Vault, libgit2_writer: None) -> None:
    root = alpha.root
    packs = _packs(root)
    fids = [alpha.add_fact(f"Written by libgit2 {n}.", topics=["project-alpha"]).record.id for n in range(3)]
    supersede = alpha.supersede_fact(fids[0], "Superseded by libgit2.", reason="hatch")
    assert _packs(root) == packs, "am wrote a pack on the libgit2 path"
    commit = supersede.commit
    assert run_git(root, "cat-file", "-t", commit).strip() == "commit"
    loose = root / ".git" / "objects" / commit[:2] / commit[2:]
    assert loose.is_file(), "the commit is a loose object libgit2 wrote"
    assert staged_differences(root) == ""
    assert run_git(root, "status", "--porcelain", "--untracked-files=all").strip() == ""
    assert all(any(f in p for p in head_files(root, "facts")) for f in fids)
    fsck_clean(root)


def test_the_libgit2_writer_heals_a_write_killed_after_its_commit(alpha: Vault) -> None:
    root = alpha.root
    proc = add_fact(root, "Killed after the commit.", AM_FAILPOINT="after-commit", AM_GIT_WRITER="libgit2")
    assert proc.returncode == -9
    fact_id(add_fact(root, "The next write.", AM_GIT_WRITER="libgit2"))
    assert staged_differences(root) == ""
    fsck_clean(root)


def test_the_libgit2_writer_with_concurrent_processes(alpha: Vault) -> None:
    root = alpha.root
    script = ("import sys\nfrom am.vault import Vault\nv = Vault.open(sys.argv[1], actor='w' + sys.argv[2])\n"
              "for i in range(5):\n    v.add_fact(f'Process {sys.argv[2]} fact {i}.', topics=['project-alpha'])\n")
    procs = [subprocess.Popen([PYTHON, "-c", script, str(root), str(n)], env=subprocess_env(AM_GIT_WRITER="libgit2"))
             for n in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    assert len(head_files(root, "facts")) == 20
    assert staged_differences(root) == ""
    fsck_clean(root)

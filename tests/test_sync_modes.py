"""What am sync writes keeps Git's modes: an executable stays 100755, a symbolic link stays 120000.

Two clones sync through a bare remote; the git CLI is the oracle (`git ls-tree`,
`git ls-files -s`, `git status`) and ``os.lstat`` the judge of the work tree.
A link that would point outside the vault is written as a file holding its
target, as git writes every link without core.symlinks; the commit and the
index keep it a link.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from conftest import GIT_IDENTITY, run_git

from am.sync import sync
from am.vault import Vault


def tree_modes(root: Path, rev: str = "HEAD") -> dict[str, str]:
    out = run_git(root, "ls-tree", "-r", "-z", rev).split("\0")
    return {line.split("\t", 1)[1]: line.split()[0] for line in out if line}


def index_modes(root: Path) -> dict[str, str]:
    out = run_git(root, "ls-files", "-s", "-z").split("\0")
    return {line.split("\t", 1)[1]: line.split()[0] for line in out if line}


def commit_all(root: Path, message: str) -> None:
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", message)


@pytest.fixture
def two(alpha: Any, tmp_path: Path) -> tuple[Vault, Vault]:
    bare = tmp_path / "remote.git"
    run_git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    a: Vault = alpha
    root = a.root
    (root / "tools").mkdir()
    (root / "tools" / "run.sh").write_text("#!/bin/sh\necho one\n")
    os.chmod(root / "tools" / "run.sh", 0o755)
    (root / "tools" / "plain.sh").write_text("#!/bin/sh\necho plain\n")
    os.symlink("run.sh", root / "tools" / "latest")
    commit_all(root, "tools")
    assert sync(a, set_upstream=str(bare)).pushed
    run_git(tmp_path, "clone", "-q", str(bare), str(tmp_path / "b"))
    for key, value in (("user.name", GIT_IDENTITY["GIT_AUTHOR_NAME"]), ("user.email", GIT_IDENTITY["GIT_AUTHOR_EMAIL"])):
        run_git(tmp_path / "b", "config", key, value)
    b = Vault.open(tmp_path / "b", actor="agent-b")
    return a, b


def assert_modes_kept(root: Path, rev: str = "HEAD", *, status: str = "") -> None:
    tree, index = tree_modes(root, rev), index_modes(root)
    assert tree["tools/run.sh"] == index["tools/run.sh"] == "100755"
    assert tree["tools/latest"] == index["tools/latest"] == "120000"
    run = os.lstat(root / "tools" / "run.sh")
    assert stat.S_ISREG(run.st_mode) and run.st_mode & 0o100
    assert os.path.islink(root / "tools" / "latest")
    assert run_git(root, "status", "--porcelain") == status


def test_a_fast_forward_keeps_executables_and_links(two: tuple[Vault, Vault]) -> None:
    a, b = two
    root = a.root
    (root / "tools" / "run.sh").write_text("#!/bin/sh\necho two\n")
    os.remove(root / "tools" / "latest")
    os.symlink("plain.sh", root / "tools" / "latest")
    run_git(root, "update-index", "--chmod=+x", "tools/plain.sh")  # a mode change alone
    os.chmod(root / "tools" / "plain.sh", 0o755)
    commit_all(root, "tools changed")
    assert sync(a).pushed
    sync(b)
    assert_modes_kept(b.root)
    assert os.readlink(b.root / "tools" / "latest") == "plain.sh"
    assert index_modes(b.root)["tools/plain.sh"] == "100755"
    assert os.lstat(b.root / "tools" / "plain.sh").st_mode & 0o100


def test_a_merge_commit_keeps_the_modes_of_both_sides(two: tuple[Vault, Vault]) -> None:
    a, b = two
    # A: the executable changed (content), a new executable, a mode change alone, and a fact
    (a.root / "tools" / "run.sh").write_text("#!/bin/sh\necho from a\n")
    (a.root / "tools" / "new.sh").write_text("#!/bin/sh\necho new\n")
    os.chmod(a.root / "tools" / "new.sh", 0o755)
    os.chmod(a.root / "tools" / "plain.sh", 0o755)
    commit_all(a.root, "a: tools")
    a.add_fact("Machine A learned a thing.", topics=["project-alpha"])
    assert sync(a).pushed
    # B: the link retargeted, a new link, and a fact: its sync merges
    os.remove(b.root / "tools" / "latest")
    os.symlink("new.sh", b.root / "tools" / "latest")
    os.symlink("tools/run.sh", b.root / "run-link")
    commit_all(b.root, "b: links")
    b.add_fact("Machine B learned a thing.", topics=["project-alpha"])
    report = sync(b)
    assert report.action == "merge" and report.pushed
    merge = run_git(b.root, "rev-parse", "HEAD").strip()
    assert len(run_git(b.root, "rev-list", "--parents", "-n1", merge).split()) == 3
    for root in (b.root,):
        modes = tree_modes(root)
        assert modes["tools/new.sh"] == modes["tools/plain.sh"] == "100755"
        assert modes["run-link"] == "120000"
        assert_modes_kept(root)
    sync(a)  # a fast-forward to B's merge
    for root in (a.root, b.root):
        assert_modes_kept(root)
        assert index_modes(root)["tools/new.sh"] == index_modes(root)["tools/plain.sh"] == "100755"
        assert os.readlink(root / "tools" / "latest") == "new.sh"
        assert os.readlink(root / "run-link") == "tools/run.sh"
        assert os.lstat(root / "tools" / "new.sh").st_mode & 0o100
    assert tree_modes(a.root) == tree_modes(b.root)


@pytest.mark.parametrize("target", ["../../outside", "/etc/passwd", ".git/config", "tools/../../x"])
def test_a_link_out_of_the_vault_is_written_as_a_file_and_stays_a_link_in_git(two: tuple[Vault, Vault],
                                                                            target: str) -> None:
    a, b = two
    os.symlink(target, a.root / "tools" / "out")
    commit_all(a.root, "a link out")
    assert sync(a).pushed
    sync(b)
    out = b.root / "tools" / "out"
    assert not os.path.islink(out)
    assert out.read_text() == target
    assert tree_modes(b.root)["tools/out"] == index_modes(b.root)["tools/out"] == "120000"
    # git says what it sees: a file where the commit has a link (as in a clone without core.symlinks)
    assert_modes_kept(b.root, status=" T tools/out\n")


def test_a_link_retargeted_on_both_sides_is_a_conflict_not_a_line_merge(two: tuple[Vault, Vault]) -> None:
    from am.errors import ConflictError

    a, b = two
    for vault, target in ((a, "plain.sh"), (b, "missing.sh")):
        os.remove(vault.root / "tools" / "latest")
        os.symlink(target, vault.root / "tools" / "latest")
        commit_all(vault.root, f"latest -> {target}")
    assert sync(a).pushed
    before = run_git(b.root, "rev-parse", "HEAD").strip()
    with pytest.raises(ConflictError, match="tools/latest"):
        sync(b)
    assert run_git(b.root, "rev-parse", "HEAD").strip() == before
    assert os.readlink(b.root / "tools" / "latest") == "missing.sh"


def test_a_link_replaced_by_a_file_on_the_other_side_is_replaced_here(two: tuple[Vault, Vault]) -> None:
    a, b = two
    os.remove(a.root / "tools" / "latest")
    (a.root / "tools" / "latest").write_text("now a file\n")
    commit_all(a.root, "latest is a file")
    assert sync(a).pushed
    sync(b)
    latest = b.root / "tools" / "latest"
    assert not os.path.islink(latest) and latest.read_text() == "now a file\n"
    assert index_modes(b.root)["tools/latest"] == tree_modes(b.root)["tools/latest"] == "100644"
    assert run_git(b.root, "status", "--porcelain") == ""

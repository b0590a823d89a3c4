"""The trees of a chain of commits (am/gitstore/trees.py): kept builders write what fresh ones would, checked with git."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from am.errors import ConflictError
from am.gitstore.trees import ChainTrees

from conftest import run_git


@pytest.fixture
def repo(tmp_path: Path) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path / "r"))


def _blob(repo: pygit2.Repository, text: str) -> pygit2.Oid:
    return repo.create_blob(text.encode())


def test_kept_builders_write_the_trees_fresh_builders_write(repo: pygit2.Repository) -> None:
    kept = ChainTrees(repo)
    tree_kept = tree_fresh = None
    for n in range(30):
        changes = {("facts", "2026", f"{n % 3:02d}", f"f{n}.md"): _blob(repo, f"fact {n}\n"),
                   ("topics", f"t{n % 4}.md"): _blob(repo, f"topic {n}\n")}
        tree_kept = kept.build(tree_kept, changes)
        tree_fresh = ChainTrees(repo).build(tree_fresh, changes)
        assert tree_kept == tree_fresh
    listing = run_git(Path(repo.path), "ls-tree", "-r", "--name-only", str(tree_kept)).split()
    assert len(listing) == 30 + 4
    assert "facts/2026/02/f29.md" in listing
    run_git(Path(repo.path), "fsck", "--strict")


def test_a_build_that_fails_leaves_no_builder_that_no_longer_matches_its_tree(repo: pygit2.Repository) -> None:
    trees = ChainTrees(repo)
    base = trees.build(None, {("notes.md",): _blob(repo, "a file\n"), ("facts", "a.md"): _blob(repo, "a\n")})
    with pytest.raises(ConflictError, match=r"notes\.md is a file in the vault where am needs a folder"):
        # facts/ is changed (and its builder written) before the conflict at notes.md/ is found.
        trees.build(base, {("facts", "b.md"): _blob(repo, "b\n"), ("notes.md", "c.md"): _blob(repo, "c\n")})
    after = trees.build(base, {("facts", "d.md"): _blob(repo, "d\n")})
    assert after == ChainTrees(repo).build(base, {("facts", "d.md"): _blob(repo, "d\n")})
    assert run_git(Path(repo.path), "ls-tree", "--name-only", f"{after}:facts").split() == ["a.md", "d.md"]


def test_bases_name_the_tree_each_folder_replaced(repo: pygit2.Repository) -> None:
    bases: dict[bytes, bytes] = {}
    trees = ChainTrees(repo, bases)
    first = trees.build(None, {("facts", "a.md"): _blob(repo, "a\n")})
    assert bases == {}  # nothing was replaced
    second = trees.build(first, {("facts", "b.md"): _blob(repo, "b\n")})
    facts_first, facts_second = repo[first]["facts"].id, repo[second]["facts"].id
    assert bases == {second.raw: first.raw, facts_second.raw: facts_first.raw}

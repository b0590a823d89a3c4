"""The trees of a chain of commits (am/git/formats/trees.py): what libgit2's TreeBuilder writes, checked with git."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pygit2.enums import FileMode

from am.errors import ConflictError
from am.git.formats.trees import ChainTrees

from conftest import run_git


@pytest.fixture
def repo(tmp_path: Path) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path / "r"))


def _blob(repo: pygit2.Repository, text: str) -> pygit2.Oid:
    return repo.create_blob(text.encode())


def test_kept_folders_write_the_trees_fresh_ones_write(repo: pygit2.Repository) -> None:
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
    trees = ChainTrees(repo, bases=bases)
    first = trees.build(None, {("facts", "a.md"): _blob(repo, "a\n")})
    assert bases == {}  # nothing was replaced
    second = trees.build(first, {("facts", "b.md"): _blob(repo, "b\n")})
    facts_first, facts_second = repo[first]["facts"].id, repo[second]["facts"].id
    assert bases == {second.raw: first.raw, facts_second.raw: facts_first.raw}


def _libgit2_tree(repo: pygit2.Repository, base: pygit2.Oid | None, changes: dict[tuple[str, ...], pygit2.Oid]
                  ) -> pygit2.Oid:
    """The oracle: the same changes applied with libgit2's TreeBuilder (a file where a folder goes: None)."""
    builder = repo.TreeBuilder(base) if base is not None else repo.TreeBuilder()
    groups: dict[str, dict[tuple[str, ...], pygit2.Oid]] = {}
    for parts, oid in changes.items():
        if len(parts) == 1:
            builder.insert(parts[0], oid, FileMode.BLOB)
        else:
            groups.setdefault(parts[0], {})[parts[1:]] = oid
    for name, sub in groups.items():
        entry = builder.get(name)
        if entry is not None and entry.filemode != FileMode.TREE:
            raise ConflictError(name)
        builder.insert(name, _libgit2_tree(repo, None if entry is None else entry.id, sub), FileMode.TREE)
    return builder.write()


# Names that sort differently as a file and as a folder ("a" < "a-b" < "a.md" < "a/"), and non-ASCII ones.
_names = st.sampled_from(["a", "a-b", "a.md", "a0", "b", "é.md", "中文.md", "z"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=st.lists(st.lists(st.lists(_names, min_size=1, max_size=3), min_size=1, max_size=3),
                        min_size=1, max_size=6))
def test_trees_equal_libgit2_s_for_any_names_and_nesting(tmp_path_factory: pytest.TempPathFactory,
                                                         commits: list[list[list[str]]]) -> None:
    repo = pygit2.init_repository(str(tmp_path_factory.mktemp("t") / "r"))
    trees = ChainTrees(repo)
    ours = theirs = None
    for n, paths in enumerate(commits):
        changes = {tuple(parts): _blob(repo, f"{n} {'/'.join(parts)}\n") for parts in paths}
        try:
            expected = _libgit2_tree(repo, theirs, changes)
        except ConflictError:
            with pytest.raises(ConflictError):
                trees.build(ours, changes)
            continue
        ours = trees.build(ours, changes)
        theirs = expected
        assert ours == theirs
    if ours is not None:
        run_git(Path(repo.path), "fsck", "--strict", "--no-dangling")


# Many files into one folder at once (an import's batch) take the one-merge path of put_files.
_many = st.lists(st.sampled_from([f"f{i:02d}.md" for i in range(40)] + ["a", "a.md", "é.md", "z"]),
                 min_size=16, max_size=44, unique=True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=st.lists(st.tuples(_many, st.lists(_names, min_size=1, max_size=2)), min_size=1, max_size=4))
def test_many_files_in_one_folder_equal_libgit2_s(tmp_path_factory: pytest.TempPathFactory,
                                                  commits: list[tuple[list[str], list[str]]]) -> None:
    repo = pygit2.init_repository(str(tmp_path_factory.mktemp("t") / "r"))
    trees = ChainTrees(repo)
    ours = theirs = None
    for n, (files, nested) in enumerate(commits):
        # Files that replace files of an earlier commit, and a folder "a/..." a later file "a" may replace.
        changes = {("facts", name): _blob(repo, f"{n} {name}\n") for name in files}
        changes[("facts", *nested, "x.md")] = _blob(repo, f"{n} nested\n")
        try:
            expected = _libgit2_tree(repo, theirs, changes)
        except ConflictError:
            with pytest.raises(ConflictError):
                trees.build(ours, changes)
            continue
        ours = trees.build(ours, changes)
        theirs = expected
        assert ours == theirs
    if ours is not None:
        run_git(Path(repo.path), "fsck", "--strict", "--no-dangling")


def test_kept_folders_answer_what_the_tree_holds_and_only_for_that_tree(repo: pygit2.Repository) -> None:
    """Kept.entry_ids (the write path's check of a batch against the tip) agrees with libgit2 on the tree."""
    trees = ChainTrees(repo)
    tip = None
    for n in range(40):
        tip = trees.build(tip, {("facts", "2026", f"{n % 2:02d}", f"f{n:02d}.md"): _blob(repo, f"fact {n}\n"),
                                ("topics", f"t{n % 3}.md"): _blob(repo, f"topic {n}\n")})
    assert tip is not None
    tree = repo[tip].peel(pygit2.Tree)
    paths = ["facts/2026/00/f00.md", "facts/2026/01/f39.md", "facts/2026/01/f00.md", "facts/2026/02/f02.md",
             "facts/2026/00", "topics/t2.md", "topics/none.md", "nope/x.md", "facts/2026/00/f00.md/x"]
    found = trees.kept.entry_ids(tip, paths)

    def libgit2(path: str) -> str | None:
        try:
            return str(tree[path].id)
        except KeyError:
            return None

    # Every path whose folders are kept is answered, and as libgit2 answers; the others are left to libgit2.
    assert {"facts/2026/00/f00.md", "facts/2026/01/f39.md", "facts/2026/01/f00.md", "topics/t2.md",
            "topics/none.md", "facts/2026/00"} <= set(found)
    assert all(found[p] == libgit2(p) for p in found)
    assert found["facts/2026/01/f00.md"] is None and found["facts/2026/00/f00.md"] is not None
    assert trees.kept.entry_ids(_blob(repo, "not a kept tree\n"), paths) == {}
    older = trees.build(None, {("a.md",): _blob(repo, "a\n")})  # the kept root is now another tree's
    assert trees.kept.entry_ids(tip, paths) == {}
    assert trees.kept.entry_ids(older, ["a.md"]) == {"a.md": str(_blob(repo, "a\n"))}

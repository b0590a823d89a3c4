"""Reading refs without pygit2 (am/git/light.py): the git CLI is the oracle."""

from __future__ import annotations

from pathlib import Path

from am.git.light import UNKNOWN, LazyStore, hash_blob, read_ref
from tests.conftest import run_git


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "r"
    run_git(tmp_path, "init", "-q", "-b", "main", str(root))
    (root / "a.txt").write_text("a\n")
    run_git(root, "add", "a.txt")
    run_git(root, "commit", "-q", "-m", "a")
    return root


def test_head_from_loose_packed_and_detached_refs(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    gitdir = root / ".git"
    head = run_git(root, "rev-parse", "HEAD").strip()
    assert read_ref(gitdir) == head
    run_git(root, "pack-refs", "--all")
    assert not (gitdir / "refs" / "heads" / "main").exists()
    assert read_ref(gitdir) == head
    assert read_ref(gitdir, "refs/heads/main") == head
    run_git(root, "checkout", "-q", "--detach", head)
    assert read_ref(gitdir) == head


def test_unusual_refs_are_left_to_pygit2(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    gitdir = root / ".git"
    run_git(root, "symbolic-ref", "refs/heads/alias", "refs/heads/main")
    run_git(root, "symbolic-ref", "HEAD", "refs/heads/alias")
    assert read_ref(gitdir) == UNKNOWN
    assert read_ref(gitdir, "refs/heads/missing") == UNKNOWN
    assert read_ref(gitdir, "refs/heads/../../config") == UNKNOWN
    # The lazy store falls back to the repository and gets the same answer as git.
    store = LazyStore.open(root)
    assert store.head() == run_git(root, "rev-parse", "HEAD").strip()


def test_unborn_branch_and_blob_ids(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    run_git(tmp_path, "init", "-q", "-b", "main", str(root))
    assert LazyStore.open(root).head() is None
    data = b"hello\n\x00bytes"
    (root / "f").write_bytes(data)
    assert hash_blob(data) == run_git(root, "hash-object", "f").strip()

"""GitStore: compare-and-swap commits, Git's index, locks, and refusals; the git CLI is the oracle."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path, PurePosixPath

import pytest

import am.git as gitstore
from am.errors import ConflictError, DirtyFileError, GitError, LockTimeoutError, NotAVaultError
from am.git import Change, GitStore, hash_blob

from conftest import PYTHON, fsck_clean, run_git, subprocess_env

AUTHOR = ("tester", "tester@example.com")


@pytest.fixture
def store(tmp_path: Path) -> GitStore:
    root = tmp_path / "repo"
    s = GitStore.init(root)
    run_git(root, "config", "user.name", "Test Person")
    run_git(root, "config", "user.email", "person@example.com")
    return s


def _commit(store: GitStore, path: str, data: bytes, base: str | None = None, message: str = "m\n") -> str:
    with store.write_lock():
        return store.commit([Change(PurePosixPath(path), data, base=base)], message=message, author=AUTHOR)


def test_first_commit_on_an_unborn_branch(store: GitStore) -> None:
    assert store.head() is None
    sha = _commit(store, "topics/a.md", b"a\n")
    assert run_git(store.root, "rev-parse", "HEAD").strip() == sha
    assert run_git(store.root, "rev-list", "--count", "HEAD").strip() == "1"
    assert run_git(store.root, "show", "HEAD:topics/a.md") == "a\n"
    assert (store.root / "topics" / "a.md").read_bytes() == b"a\n"
    assert run_git(store.root, "status", "--porcelain") == ""
    assert store.read_blob("topics/a.md") == b"a\n"
    assert store.blob_id("topics/a.md") == hash_blob(b"a\n") == run_git(store.root, "rev-parse", "HEAD:topics/a.md").strip()


def test_commit_builds_on_someone_elses_commit(store: GitStore) -> None:
    _commit(store, "topics/a.md", b"a\n")
    (store.root / "notes.txt").write_text("hand\n")
    run_git(store.root, "add", "notes.txt")
    run_git(store.root, "commit", "-q", "-m", "hand")
    hand = run_git(store.root, "rev-parse", "HEAD").strip()
    sha = _commit(store, "facts/2026/09/23/f-1.md", b"f\n")
    assert store.commit_info(sha).parents == (hand,)
    assert set(run_git(store.root, "ls-tree", "-r", "--name-only", "HEAD").split()) == {
        "notes.txt", "topics/a.md", "facts/2026/09/23/f-1.md"}
    fsck_clean(store.root)


def test_stale_base_is_a_conflict_and_nothing_moves(store: GitStore) -> None:
    _commit(store, "topics/a.md", b"a\n")
    head = store.head()
    with pytest.raises(ConflictError):
        _commit(store, "topics/a.md", b"b\n", base=hash_blob(b"something else\n"))
    with pytest.raises(ConflictError) as err:
        _commit(store, "topics/a.md", b"b\n", base=None)
    assert "already exists" in str(err.value)
    assert store.head() == head and (store.root / "topics" / "a.md").read_bytes() == b"a\n"


def test_dirty_and_staged_files_are_never_overwritten(store: GitStore) -> None:
    _commit(store, "topics/a.md", b"a\n")
    base = store.blob_id("topics/a.md")
    (store.root / "topics" / "a.md").write_bytes(b"user edit\n")
    with pytest.raises(DirtyFileError):
        _commit(store, "topics/a.md", b"am\n", base=base)
    assert (store.root / "topics" / "a.md").read_bytes() == b"user edit\n"
    run_git(store.root, "add", "topics/a.md")
    (store.root / "topics" / "a.md").write_bytes(b"a\n")
    with pytest.raises(DirtyFileError) as err:
        _commit(store, "topics/a.md", b"am\n", base=base)
    assert "staged" in str(err.value)


def test_a_folder_where_a_file_goes(store: GitStore) -> None:
    _commit(store, "topics/a.md", b"a\n")
    (store.root / "topics" / "b.md").mkdir()
    with pytest.raises(DirtyFileError):
        _commit(store, "topics/b.md", b"b\n")


def test_nul_in_message_is_refused(store: GitStore) -> None:
    with pytest.raises(GitError):
        _commit(store, "topics/a.md", b"a\n", message="a\x00b")
    assert store.head() is None


def test_detached_head_is_refused(store: GitStore) -> None:
    sha = _commit(store, "topics/a.md", b"a\n")
    run_git(store.root, "checkout", "-q", "--detach", sha)
    with pytest.raises(GitError) as err:
        _commit(store, "topics/b.md", b"b\n")
    assert "detached" in str(err.value)


def test_a_write_during_a_git_bisect_names_git_bisect_reset(store: GitStore) -> None:
    first = _commit(store, "topics/a.md", b"a\n")
    for name in "bde":
        last = _commit(store, f"topics/{name}.md", b"b\n")
    run_git(store.root, "bisect", "start", last, first)  # checks out a commit between, detached
    assert run_git(store.root, "rev-parse", "--abbrev-ref", "HEAD").strip() == "HEAD"
    with pytest.raises(GitError) as err:
        _commit(store, "topics/c.md", b"c\n")
    assert "git bisect is under way" in str(err.value) and err.value.hint == "finish it before writing: git bisect reset"
    run_git(store.root, "bisect", "reset")
    assert _commit(store, "topics/c.md", b"c\n")


def test_open_refuses_non_repositories(tmp_path: Path) -> None:
    with pytest.raises(NotAVaultError):
        GitStore.open(tmp_path)
    run_git(tmp_path, "init", "-q", "--bare", str(tmp_path / "bare.git"))
    with pytest.raises(NotAVaultError):
        GitStore.open(tmp_path / "bare.git")


def test_index_entry_carries_stat_data(store: GitStore) -> None:
    _commit(store, "topics/a.md", b"a\n")
    # diff-files compares stat data only: a clean answer means git need not rehash.
    assert run_git(store.root, "diff-files", "--name-only") == ""
    staged = run_git(store.root, "ls-files", "-s", "topics/a.md").split()
    assert staged[1] == hash_blob(b"a\n")


def test_fresh_git_lock_is_a_clear_timeout(store: GitStore, monkeypatch: pytest.MonkeyPatch) -> None:
    _commit(store, "topics/a.md", b"a\n")
    monkeypatch.setattr(gitstore.common, "_GIT_LOCK_WAIT", 0.3)
    lock = store.gitdir / "index.lock"
    lock.write_text("")
    sha = store.head()
    # A git command holding Git's index past the wait: the branch does not move (issue 36), nothing is written.
    with pytest.raises(LockTimeoutError, match="index.lock"):
        _commit(store, "topics/b.md", b"b\n")
    assert lock.exists()
    assert store.head() == sha and not (store.root / "topics" / "b.md").exists()
    lock.unlink()
    ref_lock = store.gitdir / "refs" / "heads" / "main.lock"
    ref_lock.write_text("")
    with pytest.raises((LockTimeoutError, GitError)) as err:
        _commit(store, "topics/c.md", b"c\n")
    assert "main.lock" in str(err.value) or "lock" in str(err.value)
    assert store.head() == sha and ref_lock.exists()


def test_stale_index_lock_is_moved_aside_and_logged(store: GitStore, caplog: pytest.LogCaptureFixture) -> None:
    _commit(store, "topics/a.md", b"a\n")
    lock = store.gitdir / "index.lock"
    lock.write_text("")
    old = time.time() - 3600
    os.utime(lock, (old, old))
    with caplog.at_level(logging.WARNING, logger="am"):
        _commit(store, "topics/b.md", b"b\n")
    assert not lock.exists()
    assert any("stale" in r.getMessage() and "index.lock" in r.getMessage() for r in caplog.records)
    assert run_git(store.root, "status", "--porcelain") == ""


def test_write_lock_times_out_naming_the_holder(store: GitStore) -> None:
    import subprocess

    holder = subprocess.Popen(
        [PYTHON, "-c", "import sys, time\nfrom pathlib import Path\nfrom am.git import GitStore\n"
         f"s = GitStore.open(Path({str(store.root)!r}))\n"
         "with s.write_lock(op='test.hold'):\n    print('held', flush=True)\n    time.sleep(30)\n"],
        stdout=subprocess.PIPE, text=True, env=subprocess_env())
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        began = time.monotonic()
        with pytest.raises(LockTimeoutError) as err:
            with store.write_lock(timeout=0.5):
                pass
        assert 0.4 < time.monotonic() - began < 5
        assert f"process {holder.pid}" in str(err.value) and "test.hold" in str(err.value)
    finally:
        holder.kill()
        holder.wait()
    with store.write_lock(timeout=5):
        pass


def test_walk_and_trailers(store: GitStore) -> None:
    _commit(store, "topics/a.md", b"a\n", message="topic: add a\n\nAm-Op: topic.add\nAm-Record: a\nAm-Actor: tester\n")
    info = next(store.walk())
    assert info.subject == "topic: add a" and info.author == "tester"
    assert info.trailers() == [("Am-Op", "topic.add"), ("Am-Record", "a"), ("Am-Actor", "tester")]
    assert run_git(store.root, "log", "-1", "--format=%(trailers:key=Am-Op,valueonly)").strip() == "topic.add"


def test_failpoint_after_commit_leaves_a_committed_write(store: GitStore) -> None:
    import subprocess

    _commit(store, "topics/a.md", b"a\n")
    script = ("from pathlib import Path, PurePosixPath\nfrom am.git import Change, GitStore\n"
              f"s = GitStore.open(Path({str(store.root)!r}))\n"
              "with s.write_lock():\n"
              "    s.commit([Change(PurePosixPath('topics/b.md'), b'b\\n')], message='m\\n', author=('t', 't@x'))\n")
    proc = subprocess.run([PYTHON, "-c", script], env=subprocess_env(AM_FAILPOINT="after-commit"))
    assert proc.returncode == -9
    assert run_git(store.root, "show", "HEAD:topics/b.md") == "b\n"
    # The next write goes through, and a hand `git add -A && git commit` keeps the file.
    _commit(store, "topics/c.md", b"c\n")
    run_git(store.root, "add", "-A")
    run_git(store.root, "commit", "-q", "--allow-empty", "-m", "hand")
    assert set(run_git(store.root, "ls-tree", "-r", "--name-only", "HEAD").split()) >= {"topics/b.md", "topics/c.md"}
    fsck_clean(store.root)


def test_file_changes_are_libgit2s_diff_read_from_changed_folders_only(tmp_path: Path) -> None:
    """file_changes (am log's diff) names diff_paths' files in its order; the git CLI's diff-tree is the oracle."""
    root = tmp_path / "repo"
    run_git(tmp_path, "init", "-q", "-b", "main", str(root))
    facts = root / "facts"
    for rel in ("a-b.md", "a/x.md", "a/y.md", "a.md", "b/c/d.md", "b/c/e.md", "mode.md", "link.md", "was-link.md",
                "folder-to-be.md", "gone/deep/f.md", "中文.md", "z.md"):
        (facts / rel).parent.mkdir(parents=True, exist_ok=True)
        (facts / rel).write_text(f"{rel}\n", encoding="utf-8")
    (facts / "was-link.md").unlink()
    (facts / "was-link.md").symlink_to("z.md")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-qm", "base")
    old = run_git(root, "rev-parse", "HEAD").strip()
    (facts / "a" / "x.md").write_text("changed\n")  # modified, in a folder that sorts after "a-b.md"
    (facts / "a-b.md").write_text("changed\n")
    (facts / "b" / "c" / "e.md").unlink()  # deleted, deep
    (facts / "b" / "c" / "new.md").write_text("added\n")
    (facts / "mode.md").chmod(0o755)  # the mode alone
    (facts / "link.md").unlink()
    (facts / "link.md").symlink_to("z.md")  # a file that became a symlink
    (facts / "was-link.md").unlink()
    (facts / "was-link.md").write_text("z.md")  # a symlink that became a file, same bytes
    (facts / "folder-to-be.md").unlink()
    (facts / "folder-to-be.md").mkdir()
    (facts / "folder-to-be.md" / "inner.md").write_text("a folder now\n")
    for path in (facts / "gone" / "deep" / "f.md", facts / "gone" / "deep", facts / "gone"):
        path.unlink() if path.is_file() else path.rmdir()
    (facts / "中文.md").write_text("改了\n", encoding="utf-8")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-qm", "changes")
    new = run_git(root, "rev-parse", "HEAD").strip()

    def oracle(a: str | None, b: str) -> list[tuple[str, str | None]]:
        raw = run_git(root, "diff-tree", "-r", "-z", "--no-renames", "--no-commit-id",
                      a or "4b825dc642cb6eb9a060e54bf8d69288fbee4904", b)  # git's empty tree
        fields = raw.split("\0")
        out: list[tuple[str, str | None]] = []
        for meta, path in zip(fields[0:-1:2], fields[1::2]):
            _, _, _, new_id, status = meta.lstrip(":").split()
            if status in ("D", "T"):  # libgit2 splits a type change into a deletion and an addition
                out.append((path, None))
            if status != "D":
                out.append((path, new_id))
        return [(p, i) for p, i in out if p]

    store = GitStore.open(root)
    for a, b in ((old, new), (new, old), (None, new)):
        got = store.file_changes(a, b)
        assert got == store.diff_paths(a, b)
        assert sorted(got, key=lambda c: (c[0], c[1] is not None)) == sorted(
            oracle(a, b), key=lambda c: (c[0], c[1] is not None))
    assert ("facts/mode.md", run_git(root, "rev-parse", f"{new}:facts/mode.md").strip()) in store.file_changes(old, new)

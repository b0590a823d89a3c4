"""The merge's files written ahead by a helper process (am/git/program/prewrite.py), held to the git CLI.

The helper writes the blobs the other side changed, named by their ids, while
the merge starts up and plans; the merge renames them into place. These tests
check that the helper writes exactly git's bytes for exactly the files
``git diff-tree`` lists, that a merge which uses them ends where one without
them ends (same tree, clean `git status`, no shared inodes), that nothing the
helper leaves or fails to do changes a merge, and that its folder never
outlives the merge that made it (or, for a killed merge, the next one).
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, fsck_clean, run_git, subprocess_env
from test_merge_flush import _am_merge, _diverge
from test_sync_crash import diverged  # noqa: F401 - a fixture

from am.git import common
from am.git.program import prewrite
from am.sync import engine, merge_branch
from am.vault import Vault


def _finished(ahead: prewrite.Prewrite) -> prewrite.Prewrite:
    """Let a helper finish before the merge goes on (the tests count what it wrote; a slow machine would not wait)."""
    while not ahead._ended():
        time.sleep(0.005)
    return ahead


def _on_start(monkeypatch: pytest.MonkeyPatch, then: Callable[[prewrite.Prewrite], object]) -> list[prewrite.Prewrite]:
    """Make every helper a merge starts go through ``then`` first; the list of them."""
    real, seen = prewrite.start, []

    def started(*args: Any) -> prewrite.Prewrite | None:
        ahead = real(*args)
        assert ahead is not None
        then(ahead)
        seen.append(ahead)
        return ahead

    monkeypatch.setattr(prewrite, "start", started)
    return seen


def _folder(root: Path) -> Path:
    return root / ".git" / "am" / prewrite.FOLDER


def _theirs_blobs(root: Path) -> set[str]:
    """The regular files theirs added or changed since the merge base, by blob id, from the git CLI."""
    base = run_git(root, "merge-base", "main", "theirs").strip()
    out = run_git(root, "diff", "--raw", "--no-renames", "--no-abbrev", "--diff-filter=AM", base, "theirs").splitlines()
    return {line.split()[3] for line in out}


def _tree_after(root: Path) -> str:
    return run_git(root, "rev-parse", "HEAD^{tree}").strip()


def _clean(root: Path) -> None:
    assert run_git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert run_git(root, "diff", "--cached", "--name-only") == ""
    assert run_git(root, "write-tree").strip() == _tree_after(root)
    fsck_clean(root)


def test_the_helper_writes_git_s_bytes_for_the_files_theirs_changed(alpha: Any, tmp_path: Path) -> None:
    vault: Vault = alpha
    _diverge(vault)
    root = vault.root
    expected = _theirs_blobs(root)
    assert set(prewrite.changed_blobs(str(root), "refs/heads/theirs")) == expected
    out = tmp_path / "ahead"
    out.mkdir()
    assert prewrite.helper(str(root), str(out), "refs/heads/theirs") == len(expected)
    assert {p.name for p in out.iterdir()} == expected | {".list"}  # no temporary file left
    assert set((out / ".list").read_text().split()) == expected
    for blob in expected:
        git_bytes = subprocess.run(["git", "-C", str(root), "cat-file", "blob", blob], check=True,
                                   capture_output=True).stdout
        assert (out / blob).read_bytes() == git_bytes


def test_nothing_is_written_when_theirs_is_already_merged_or_unknown(alpha: Any, tmp_path: Path) -> None:
    vault: Vault = alpha
    root = vault.root
    run_git(root, "branch", "behind")
    vault.add_fact("Only on main.", topics=["project-alpha"])
    out = tmp_path / "ahead"
    out.mkdir()
    assert prewrite.helper(str(root), str(out), "refs/heads/behind") == 0
    assert (out / ".list").read_text() == ""
    assert prewrite.helper(str(root), str(out), "refs/heads/no-such-branch") == 0
    assert [p.name for p in out.iterdir()] == [".list"]


def test_a_merge_takes_the_helpers_files_and_ends_as_one_without_them(
        alpha: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vault: Vault = alpha
    _diverge(vault, each=12, conflicts=2)
    root = vault.root
    twin = tmp_path / "twin"
    run_git(tmp_path, "clone", "-q", "--no-local", str(root), str(twin))
    run_git(twin, "branch", "-q", "theirs", "origin/theirs")
    started = _on_start(monkeypatch, _finished)
    with Vault.open(root) as v:
        report = merge_branch(v, "theirs")
    assert report.action == "merge"
    assert len(started) == 1 and started[0].taken == 12  # theirs' new facts; the decided records are the merge's own
    assert not Path(started[0].folder).exists()
    monkeypatch.setattr(prewrite, "start", lambda *args: None)
    with Vault.open(twin) as v:
        merge_branch(v, "theirs")
    assert _tree_after(root) == _tree_after(twin)
    _clean(root)
    for path in (root / "facts").rglob("*.md"):
        assert path.stat().st_nlink == 1 and oct(path.stat().st_mode & 0o777) == oct(0o644 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_helper_killed_before_it_wrote_anything_changes_nothing(alpha: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    vault: Vault = alpha
    _diverge(vault, each=6)
    seen = _on_start(monkeypatch, lambda ahead: os.kill(ahead.pid, signal.SIGKILL))
    with Vault.open(vault.root) as v:
        assert merge_branch(v, "theirs").action == "merge"
    assert seen[0].taken == 0
    assert list(_folder(vault.root).iterdir()) == []
    _clean(vault.root)


def test_a_helper_folder_on_another_file_system_is_given_up_at_once(alpha: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    vault: Vault = alpha
    _diverge(vault, each=6)
    real_rename = os.rename
    refused: list[str] = []

    def cross_device(src: Any, dst: Any, **kw: Any) -> None:
        if kw.get("src_dir_fd") is not None and kw.get("src_dir_fd") != kw.get("dst_dir_fd"):
            refused.append(str(src))
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        real_rename(src, dst, **kw)

    _on_start(monkeypatch, _finished)
    monkeypatch.setattr(os, "rename", cross_device)
    with Vault.open(vault.root) as v:
        assert merge_branch(v, "theirs").action == "merge"
    assert len(refused) == 1  # the first EXDEV turns the helper's files off; every file is written here
    assert list(_folder(vault.root).iterdir()) == []
    _clean(vault.root)


def test_a_merge_without_syncfs_writes_and_flushes_every_file_itself(alpha: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    vault: Vault = alpha
    _diverge(vault)
    monkeypatch.setattr(common, "_syncfs", None)
    taken: list[int] = []
    real_close = prewrite.Prewrite.close

    def noted(self: prewrite.Prewrite) -> None:
        taken.append(self.taken)
        real_close(self)

    monkeypatch.setattr(prewrite.Prewrite, "close", noted)
    with Vault.open(vault.root) as v:
        merge_branch(v, "theirs")
    assert taken == [0]
    _clean(vault.root)


def test_a_killed_merge_s_helper_folder_is_removed_by_the_next_merge(alpha: Any) -> None:
    vault: Vault = alpha
    _diverge(vault, each=8)
    root = vault.root
    killed = _am_merge(root, AM_FAILPOINT="sync-merge-commit")  # the helper has started; the merge dies
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    left = list(_folder(root).iterdir())
    assert len(left) == 1 and left[0].name.split("-")[0].isdigit()
    done = _am_merge(root)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("merge branch theirs in commit "), done.stdout
    assert list(_folder(root).iterdir()) == []
    _clean(root)


def test_a_folder_of_a_live_process_is_left_alone(tmp_path: Path) -> None:
    parent = tmp_path / "prewrite"
    (parent / f"{os.getpid()}-0a0b0c0d").mkdir(parents=True)
    gone = subprocess.Popen(["true"])
    gone.wait()
    (parent / f"{gone.pid}-01020304").mkdir()
    (parent / "notes").mkdir()
    prewrite.sweep(str(parent))
    assert sorted(p.name for p in parent.iterdir()) == sorted([f"{os.getpid()}-0a0b0c0d", "notes"])


def test_no_helper_for_a_linked_worktree_or_an_option_like_name(alpha: Any, tmp_path: Path) -> None:
    vault: Vault = alpha
    run_git(vault.root, "worktree", "add", "-q", str(tmp_path / "linked"), "-b", "side")
    assert prewrite.start(str(tmp_path / "linked"), "refs/heads/main") is None
    assert prewrite.start(str(vault.root), "--output=x") is None
    assert not _folder(vault.root).exists()


def test_a_sync_writes_what_it_fetched_ahead(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    from am.sync import sync

    _, b, _ = request.getfixturevalue("diverged")  # test_sync_crash's: two clones, the other's facts on the server
    seen: list[prewrite.Prewrite] = []
    real = engine._write_ahead

    def kept(*args: Any) -> prewrite.Prewrite | None:
        ahead = real(*args)
        if ahead is not None:
            seen.append(_finished(ahead))
        return ahead

    monkeypatch.setattr(engine, "_write_ahead", kept)
    report = sync(b)
    assert report.action == "merge" and report.pushed
    assert len(seen) == 1 and seen[0].taken == 3  # the other clone's three facts
    _clean(b.root)


def test_a_file_in_the_helper_folder_that_is_not_its_blob_is_never_used(
        alpha: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    vault: Vault = alpha
    _diverge(vault, each=5)
    def spoil(ahead: prewrite.Prewrite) -> None:
        _finished(ahead)
        names = sorted(n for n in os.listdir(ahead.folder) if not n.startswith("."))
        assert len(names) >= 5
        Path(ahead.folder, names[0]).write_bytes(b"---\nid: not-what-git-has\n---\n")

    seen = _on_start(monkeypatch, spoil)
    guessed = len(_theirs_blobs(vault.root))
    with Vault.open(vault.root) as v:
        assert merge_branch(v, "theirs").action == "merge"
    assert seen[0].taken == guessed - 1 - 2  # less the spoiled one and the two facts the merge decided
    _clean(vault.root)


def test_a_listed_blob_is_waited_for_until_written_or_the_helper_ends(tmp_path: Path) -> None:
    import threading

    from am.git.light import hash_blob

    folder, target = tmp_path / "ahead", tmp_path / "work"
    folder.mkdir()
    target.mkdir()
    data, other = b"written late\n", b"never written\n"
    late, never = hash_blob(data), hash_blob(other)
    (folder / ".list").write_text(f"{late}\n{never}\n")
    sleeper = subprocess.Popen(["sleep", "60"])  # stands for a helper still at work
    ahead = prewrite.Prewrite(sleeper.pid, str(folder))

    def write_late() -> None:
        time.sleep(0.2)
        (folder / f"{late}.tmp").write_bytes(data)
        os.rename(folder / f"{late}.tmp", folder / late)

    writer = threading.Thread(target=write_late)
    writer.start()
    dir_fd = os.open(target, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert ahead.take(late, dir_fd, "a.md")  # waited for it, while the helper still runs
        assert sleeper.poll() is None
        assert (target / "a.md").read_bytes() == data
        assert not ahead.take(late, dir_fd, "b.md")  # one blob, one file
        assert not ahead.take(hash_blob(b"not listed\n"), dir_fd, "c.md")  # not listed: not waited for
        sleeper.kill()
        assert not ahead.take(never, dir_fd, "d.md")  # listed, never written: given up once the helper ends
        assert sorted(p.name for p in target.iterdir()) == ["a.md"]
    finally:
        os.close(dir_fd)
        writer.join()
        ahead.close()
        sleeper.wait()
    assert not folder.exists()


def test_a_helper_that_is_behind_or_stalls_is_stopped_and_not_waited_for(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from am.git.light import hash_blob

    folder, target = tmp_path / "ahead", tmp_path / "work"
    folder.mkdir()
    target.mkdir()
    behind = subprocess.Popen(["sleep", "60"])  # a helper that has not listed its blobs yet
    ahead = prewrite.Prewrite(behind.pid, str(folder))
    began = time.monotonic()
    assert ahead.listed(files=3) == frozenset()
    assert time.monotonic() - began < 0.5  # waited ~0.6 ms (3 files' creation), not for the helper
    with pytest.raises(ProcessLookupError):  # stopped (and reaped): it would only compete with the merge's writes
        os.kill(behind.pid, 0)
    behind.wait()
    ahead.close()

    folder.mkdir()
    blob = hash_blob(b"never comes\n")
    (folder / ".list").write_text(f"{blob}\n")
    stalled = subprocess.Popen(["sleep", "60"])  # listed, then starved
    ahead = prewrite.Prewrite(stalled.pid, str(folder))
    monkeypatch.setattr(prewrite, "_STALL", 0.3)
    dir_fd = os.open(target, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert not ahead.take(blob, dir_fd, "a.md")
        with pytest.raises(ProcessLookupError):
            os.kill(stalled.pid, 0)
        stalled.wait()
    finally:
        os.close(dir_fd)
        ahead.close()
    assert list(target.iterdir()) == [] and not folder.exists()


def test_a_large_file_is_not_listed_and_the_merge_writes_it_itself(
        alpha: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vault: Vault = alpha
    _diverge(vault, each=3)
    root = vault.root
    run_git(root, "checkout", "-q", "theirs")
    big = os.urandom(prewrite._MAX_BLOB // 2 + 1).hex().encode()  # just over the limit, as text
    (root / "attachments").mkdir()
    (root / "attachments" / "big.txt").write_bytes(big)
    run_git(root, "add", "attachments/big.txt")
    run_git(root, "commit", "-q", "-m", "a large file")
    run_git(root, "checkout", "-q", "main")
    out = tmp_path / "ahead"
    out.mkdir()
    guessed = _theirs_blobs(root)
    large = run_git(root, "rev-parse", "theirs:attachments/big.txt").strip()
    assert large in guessed
    assert prewrite.helper(str(root), str(out), "refs/heads/theirs") == len(guessed) - 1
    assert large not in (out / ".list").read_text().split() and not (out / large).exists()
    seen = _on_start(monkeypatch, _finished)
    with Vault.open(root) as v:
        assert merge_branch(v, "theirs").action == "merge"
    assert seen[0].taken == 3  # theirs' facts; the large file is the merge's to write
    assert (root / "attachments" / "big.txt").read_bytes() == big
    _clean(root)


def test_a_merge_across_many_folders_holds_one_folder_open_at_a_time(alpha: Any) -> None:
    """Each day's folder is opened, written and closed in turn: a merge of a long history fits any fd limit."""
    import resource

    from am.records.model import Fact

    vault: Vault = alpha
    _diverge(vault, each=2)
    root = vault.root
    run_git(root, "checkout", "-q", "theirs")
    with Vault.open(root, actor="theirs") as v:
        v.import_records([Fact(id=f"fact-day-{d:03d}", topics=("project-alpha",), body=f"Learned on day {d}.\n",
                               created=f"2025-{1 + d // 28:02d}-{1 + d % 28:02d}T12:00:00+00:00") for d in range(120)],
                         source="theirs")
    run_git(root, "checkout", "-q", "main")

    def few_descriptors() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    done = subprocess.run([PYTHON, "-m", "am.cli.entry", "--vault", str(root), "merge", "theirs"], check=False,
                          capture_output=True, text=True, env=subprocess_env(), preexec_fn=few_descriptors)
    assert done.returncode == 0, done.stderr
    assert len({p.parent for p in (root / "facts").rglob("fact-day-*.md")}) == 120
    _clean(root)

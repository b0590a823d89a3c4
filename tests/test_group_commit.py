"""Group commit: writers that arrive together share one flush, ref move and index rewrite, each its own commit.

To get a batch of a known size, the test holds the vault's write lock (an
flock through another open file) while k writer threads queue up, then lets
go: the first writer leads and commits all k at once. Git's state is read
with the git CLI.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import pytest

import am.git.staging
from am.errors import ConflictError, DirtyFileError
from am.git import Change, GitStore
from am.git.coord.group import group_for
from am.vault import Vault

from conftest import PYTHON, fsck_clean, run_git, subprocess_env


def _queued_together(root: Path, k: int, work: Callable[[int], object]) -> list[object]:
    """Run ``work(n)`` for n < k in threads that all queue behind a held write lock; return results or errors."""
    holder = GitStore.open(root)
    group = group_for(holder.gitdir)
    results: list[object] = [None] * k

    def run(n: int) -> None:
        try:
            results[n] = work(n)
        except Exception as err:  # noqa: BLE001 - returned to the test
            results[n] = err

    threads = [threading.Thread(target=run, args=(n,)) for n in range(k)]
    with holder.write_lock(op="test"):
        for t in threads:
            t.start()
        deadline = time.monotonic() + 20
        while len(group.pending) < k:
            assert time.monotonic() < deadline, f"only {len(group.pending)} of {k} writers queued: {results}"
            time.sleep(0.005)
    for t in threads:
        t.join(30)
    return results


def test_a_batch_of_k_writes_is_k_commits_each_with_its_author_message_and_file(alpha: Vault) -> None:
    root = alpha.root
    before = run_git(root, "rev-parse", "HEAD").strip()
    k = 6
    vaults = [Vault.open(root, actor=f"writer-{n}") for n in range(k)]

    def work(n: int) -> tuple[str, str, str]:
        result = vaults[n].add_fact(f"Writer {n} knows fact number {n}.", topics=["project-alpha"])
        # A writer's own next read sees its write.
        assert vaults[n].get_fact(result.record.id).body.startswith(f"Writer {n} knows")
        return result.commit, result.record.id, str(result.paths[0])

    results = _queued_together(root, k, work)
    for v in vaults:
        v.close()
    assert all(isinstance(r, tuple) for r in results), results
    commits = run_git(root, "rev-list", "--reverse", f"{before}..HEAD").split()
    assert len(commits) == k
    assert {r[0] for r in results} == set(commits)  # type: ignore[index]
    for commit, fact_id, path in results:  # type: ignore[misc]
        author = run_git(root, "log", "-1", "--format=%an", commit).strip()
        n = int(author.rsplit("-", 1)[1])
        assert author == f"writer-{n}"
        message = run_git(root, "log", "-1", "--format=%B", commit)
        assert f"Am-Record: {fact_id}" in message and f"Am-Actor: writer-{n}" in message
        assert run_git(root, "show", "--format=", "--name-only", commit).split() == [path]
        assert f"Writer {n} knows" in run_git(root, "show", f"{commit}:{path}")
    # One chain: linear, and the branch moved once for all k (one reflog entry).
    assert run_git(root, "rev-list", "--merges", "HEAD") == ""
    assert f"am group of {k}" in run_git(root, "reflog", "-1", "--format=%gs", "main")
    assert run_git(root, "status", "--porcelain") == ""
    fsck_clean(root)


def test_one_bad_request_in_a_batch_fails_alone(alpha: Vault) -> None:
    root = alpha.root
    before = run_git(root, "rev-parse", "HEAD").strip()
    dirty = root / "notes" / "n2.md"
    dirty.parent.mkdir()
    dirty.write_text("a person's unsaved note\n")
    stores = [GitStore.open(root) for _ in range(4)]

    def work(n: int) -> str:
        return stores[n].commit_grouped([Change(PurePosixPath(f"notes/n{n}.md"), f"note {n}\n".encode())],
                                        message=f"note {n}\n", author=(f"w{n}", "w@example.com"))

    results = _queued_together(root, 4, work)
    assert isinstance(results[2], DirtyFileError), results
    assert all(isinstance(results[n], str) for n in (0, 1, 3)), results
    assert dirty.read_text() == "a person's unsaved note\n"  # left exactly as it was
    assert run_git(root, "rev-list", "--count", f"{before}..HEAD").strip() == "3"
    assert sorted(run_git(root, "ls-tree", "--name-only", "HEAD", "notes/").split()) == [
        "notes/n0.md", "notes/n1.md", "notes/n3.md"]
    assert run_git(root, "status", "--porcelain").strip() == "?? notes/n2.md"
    fsck_clean(root)


def test_a_request_whose_folder_is_a_file_in_head_fails_alone_and_git_index_holds_only_the_others(
        alpha: Vault) -> None:
    # Git's index is staged with every request's entries before the commits are
    # built; one whose tree cannot be built (HEAD has a file where it needs a
    # folder) is dropped again from it.
    root = alpha.root
    (root / "notes").mkdir()
    (root / "notes" / "x").write_text("a file, deleted from the work tree but not from HEAD\n")
    run_git(root, "add", "notes/x")
    run_git(root, "commit", "-q", "-m", "hand")
    (root / "notes" / "x").unlink()
    before = run_git(root, "rev-parse", "HEAD").strip()
    stores = [GitStore.open(root) for _ in range(3)]
    paths = ["notes/a.md", "notes/x/y.md", "notes/c.md"]

    def work(n: int) -> str:
        return stores[n].commit_grouped([Change(PurePosixPath(paths[n]), f"note {n}\n".encode())],
                                        message=f"note {n}\n", author=(f"w{n}", "w@example.com"))

    results = _queued_together(root, 3, work)
    assert isinstance(results[1], ConflictError), results
    assert isinstance(results[0], str) and isinstance(results[2], str), results
    assert run_git(root, "rev-list", "--count", f"{before}..HEAD").strip() == "2"
    assert not (root / "notes" / "x" / "y.md").exists()  # put back
    assert run_git(root, "ls-files", "notes").split() == ["notes/a.md", "notes/c.md", "notes/x"]
    assert run_git(root, "diff", "--cached", "--name-only") == ""
    assert run_git(root, "status", "--porcelain").strip() == "D notes/x"
    fsck_clean(root)


def test_a_failure_staging_git_s_index_fails_the_batch_and_leaves_nothing(
        alpha: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    root = alpha.root
    before = run_git(root, "rev-parse", "HEAD").strip()
    stores = [GitStore.open(root) for _ in range(3)]

    def no_space(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(am.git.staging.GitIndex, "write", no_space)

    def work(n: int) -> str:
        return stores[n].commit_grouped([Change(PurePosixPath(f"notes/n{n}.md"), f"note {n}\n".encode())],
                                        message=f"note {n}\n", author=(f"w{n}", "w@example.com"))

    results = _queued_together(root, 3, work)
    assert all(isinstance(r, OSError) and "No space" in str(r) for r in results), results
    assert run_git(root, "rev-parse", "HEAD").strip() == before
    assert run_git(root, "status", "--porcelain", "--untracked-files=all") == ""  # every file put back
    assert list((root / ".git" / "am").glob("index.*.tmp")) == []
    monkeypatch.undo()
    assert isinstance(_queued_together(root, 1, work)[0], str)  # the next write goes through
    assert run_git(root, "diff", "--cached", "--name-only") == ""
    fsck_clean(root)


def test_requests_on_the_same_file_go_in_separate_batches(alpha: Vault) -> None:
    """Two updates computed from the same version: the second is a conflict, not a lost update."""
    root = alpha.root
    fact = alpha.add_fact("Pool size is 10.", topics=["project-alpha"], id="fact-pool")
    vaults = [Vault.open(root, actor=f"w{n}") for n in range(2)]

    def work(n: int) -> str:
        return vaults[n].set_fact_status(fact.record.id, "contested" if n else "pending-review").commit

    results = _queued_together(root, 2, work)
    for v in vaults:
        v.close()
    errors = [r for r in results if isinstance(r, Exception)]
    assert len(errors) == 1 and "changed in the vault" in str(errors[0]), results
    assert run_git(root, "status", "--porcelain") == ""


WORKER = """
import sys, threading
from am.vault import Vault

root, threads, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lock = threading.Lock()

def work(n):
    with Vault.open(root, actor=f"t{n}") as v:
        for i in range(count):
            result = v.add_fact(f"Thread {n} write {i}.", topics=["project-alpha"])
            with lock:
                print(result.record.id, flush=True)

ts = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
for t in ts:
    t.start()
for t in ts:
    t.join()
"""


@pytest.mark.parametrize("name", ["after-file", "after-objects", "after-commit"])
def test_a_leader_killed_mid_batch_loses_no_acknowledged_write(alpha: Vault, vault_path: Path, name: str) -> None:
    proc = subprocess.run([PYTHON, "-c", WORKER, str(vault_path), "6", "20"], capture_output=True, text=True,
                          env=subprocess_env(AM_FAILPOINT=name, AM_FAILPOINT_SKIP="4"), timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    acked = set(proc.stdout.split())
    assert len(acked) >= 4  # some batches were acknowledged before the kill
    head = {Path(p).stem for p in run_git(vault_path, "ls-tree", "-r", "--name-only", "HEAD", "facts").split()}
    assert acked <= head, f"lost acknowledged writes: {sorted(acked - head)}"
    assert run_git(vault_path, "rev-list", "--merges", "HEAD") == ""
    fsck_clean(vault_path)
    # The killed batch left at most files and unreferenced objects; doctor puts them in order.
    fixed = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(vault_path), "doctor", "--fix",
                            "--format", "json"], capture_output=True, text=True, env=subprocess_env())
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert json.loads(fixed.stdout)["findings"] == []
    assert run_git(vault_path, "status", "--porcelain", "--untracked-files=all").strip() == ""
    with Vault.open(vault_path) as v:
        for fact in v.list_facts():
            assert fact.body.startswith("Thread "), fact  # every fact whole
    assert acked <= {Path(p).stem for p in
                     run_git(vault_path, "ls-tree", "-r", "--name-only", "HEAD", "facts").split()}
    fsck_clean(vault_path)

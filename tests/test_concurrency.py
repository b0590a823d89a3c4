"""Many writers at once, real processes: every acknowledged write is in HEAD, no one else's commit is lost."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from am.vault import Vault

from conftest import PYTHON, fsck_clean, run_git, subprocess_env

WORKER = """
import sys
from am.vault import Vault

root, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
vault = Vault.open(root, actor=name)
for i in range(count):
    result = vault.add_fact(f"{name} says fact {i}.", topics=["project-alpha"])
    print(result.record.id, result.commit, flush=True)
"""

# Obsidian's git plugin, roughly: stage everything, commit, again and again. A `git add`
# that finds the index locked (am, or git itself, writing it) fails as git does, and the
# plugin tries again: "external N" is printed only for a commit made after note N was staged.
EXTERNAL = """
import os, pathlib, subprocess, sys

root, stop = sys.argv[1], sys.argv[2]
i = 0
while not os.path.exists(stop) or i < 5:
    note = pathlib.Path(root, "notes", f"{i}.txt")
    note.parent.mkdir(exist_ok=True)
    note.write_text(f"note {i}\\n")
    if subprocess.run(["git", "-C", root, "add", "-A"], capture_output=True).returncode != 0:
        continue
    done = subprocess.run(["git", "-C", root, "commit", "-q", "-m", f"external {i}"], capture_output=True)
    if done.returncode == 0:
        print(f"external {i}", flush=True)
    i += 1
"""


# The concurrency and crash runs hold on both writers (issue 14): am's own Git formats (the
# default) and libgit2's writers only (AM_GIT_WRITER=libgit2, am/git/write/plain.py). The second
# run is long, so it goes with the stress runs CI makes.
@pytest.fixture(autouse=True, params=["am", pytest.param("libgit2", marks=pytest.mark.stress)])
def git_writer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AM_GIT_WRITER", request.param)
    return str(request.param)


def _race(root: Path, tmp_path: Path, *, workers: int, per_worker: int) -> None:
    start_count = int(run_git(root, "rev-list", "--count", "HEAD"))
    # The external loop's commits trigger `git gc --auto` once loose objects pile
    # up; in the foreground, so it is done before fsck looks (a detached gc
    # packing and deleting loose objects under fsck's feet reads as "missing").
    run_git(root, "config", "gc.autoDetach", "false")
    env = subprocess_env()
    stop = tmp_path / "stop"
    external = subprocess.Popen([PYTHON, "-c", EXTERNAL, str(root), str(stop)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)
    procs = [
        subprocess.Popen([PYTHON, "-c", WORKER, str(root), f"w{n}", str(per_worker)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
        for n in range(workers)
    ]
    acknowledged: list[str] = []
    failures = []
    # A guard against a hang, not a speed bar: generous on a loaded 2-core machine.
    deadline = time.monotonic() + max(600.0, 0.75 * workers * per_worker)
    for proc in procs:
        out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        acknowledged += [line.split()[0] for line in out.splitlines() if line]
        if proc.returncode != 0:
            failures.append(err[-2000:])
    stop.touch()
    ext_out, ext_err = external.communicate(timeout=120)
    external_acked = [line for line in ext_out.splitlines() if line]

    assert not failures, failures[0]
    assert len(acknowledged) == len(set(acknowledged)) == workers * per_worker
    in_head = {Path(p).stem for p in run_git(root, "ls-tree", "-r", "--name-only", "HEAD", "facts").split()}
    missing = set(acknowledged) - in_head
    assert not missing, f"{len(missing)} acknowledged facts are not in HEAD"
    subjects = run_git(root, "log", "--format=%s").splitlines()
    lost = set(external_acked) - set(subjects)
    assert external_acked and not lost, f"external commits lost: {sorted(lost)[:5]}"
    # Exactly one commit per am write plus one per acknowledged external commit: nothing dropped.
    total = int(run_git(root, "rev-list", "--count", "HEAD"))
    assert total == start_count + workers * per_worker + len(external_acked)
    assert run_git(root, "rev-list", "--merges", "HEAD") == ""
    assert run_git(root, "status", "--porcelain", "--", "facts", "topics") == ""
    fsck_clean(root)
    # Every note the external loop committed is still in HEAD (am never dropped a file of theirs).
    notes = set(run_git(root, "ls-tree", "-r", "--name-only", "HEAD", "notes").split())
    for line in external_acked:
        assert f"notes/{line.split()[1]}.txt" in notes


def test_16_writers_and_an_external_committer(alpha: Vault, tmp_path: Path) -> None:
    _race(alpha.root, tmp_path, workers=16, per_worker=25)


@pytest.mark.stress
def test_32_writers_x_100_and_an_external_committer(alpha: Vault, tmp_path: Path) -> None:
    _race(alpha.root, tmp_path, workers=32, per_worker=100)


def test_concurrent_writers_in_threads_share_the_lock(alpha: Vault) -> None:
    """Threads of one process also serialise through the lock (flock is per open file)."""
    from concurrent.futures import ThreadPoolExecutor

    def write(n: int) -> str:
        # Closed explicitly: a vault left to the garbage collector closes its cache in a
        # finalizer, which can run in a thread holding the cache lock (see the report).
        with Vault.open(alpha.root, actor=f"t{n}") as v:
            return v.add_fact(f"thread {n}", topics=["project-alpha"]).record.id

    with ThreadPoolExecutor(max_workers=4) as pool:
        ids = list(pool.map(write, range(12)))
    files = run_git(alpha.root, "ls-tree", "-r", "--name-only", "HEAD", "facts").split()
    assert {Path(f).stem for f in files} == set(ids)
    assert run_git(alpha.root, "status", "--porcelain") == ""
    fsck_clean(alpha.root)


def test_a_killed_writer_does_not_block_the_next(alpha: Vault) -> None:
    script = (
        "import os, signal\n"
        "from am.vault import Vault\n"
        f"v = Vault.open({str(alpha.root)!r}, actor='killed')\n"
        "with v.store.write_lock():\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([PYTHON, "-c", script], env=subprocess_env(), capture_output=True)
    assert proc.returncode == -9
    began = time.monotonic()
    alpha.add_fact("after the kill", topics=["project-alpha"])
    assert time.monotonic() - began < 20  # far below the 30 s lock timeout it would hit if blocked


def test_stale_git_lock_is_moved_aside(alpha: Vault, monkeypatch: pytest.MonkeyPatch, caplog) -> None:
    import os

    lock = alpha.store.gitdir / "refs" / "heads" / "main.lock"
    lock.write_text("")
    old = time.time() - 3600
    os.utime(lock, (old, old))
    result = alpha.add_fact("after a stale lock", topics=["project-alpha"])
    assert not lock.exists()
    assert run_git(alpha.root, "rev-parse", "HEAD").strip() == result.commit
    assert any("stale" in r.getMessage() for r in caplog.records)

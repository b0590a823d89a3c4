"""Data loss and corruption on the write path (issue 14, first section), each as it was found.

Races are made deterministic by running the other party at the exact step
where the adversary hit it (an in-process wrapper around one of am's own
steps); Git's state is read with the git CLI. The minute-long free-running
versions are marked ``stress``.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import time
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from conftest import PYTHON, run_git, subprocess_env

from adversarial._helpers import add_fact, am, fact_id, head_files, staged_differences
from am.errors import ConflictError, DirtyFileError, InvalidRecordError, UsageError
from am.git.staging import Staging
from am.git.write.guards import Guards
from am.git.write.worktree import WorkTree
from am.vault import Vault


def _fact_file(root: Path, fid: str) -> Path:
    return next(root.glob(f"facts/**/{fid}.md"))


# ------------------------------------------------------------ concurrent supersede of one fact

def test_concurrent_supersede_loser_does_not_overwrite_the_winner(alpha: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    old = alpha.add_fact("The cache lives in Redis.", topics=["project-alpha"]).record.id
    other = Vault.open(alpha.root, actor="other")
    raced = []

    real_base_of = alpha.writer.base_of

    def base_of_after_the_other_wins(path: PurePosixPath) -> str | None:
        if not raced:  # the other writer supersedes between this one's read and its look at HEAD
            raced.append(other.supersede_fact(old, "The cache lives in Memcached.", reason="moved").records[0].id)
        return real_base_of(path)

    monkeypatch.setattr(alpha.writer, "base_of", base_of_after_the_other_wins)
    with pytest.raises(UsageError, match="already superseded"):
        alpha.supersede_fact(old, "The cache lives in Valkey.", reason="moved again")
    winner = raced[0]
    text = _fact_file(alpha.root, old).read_text()
    assert f"superseded_by: {winner}" in text
    committed = run_git(alpha.root, "show", f"HEAD:{_fact_file(alpha.root, old).relative_to(alpha.root)}")
    assert f"superseded_by: {winner}" in committed
    assert len(run_git(alpha.root, "log", "--format=%s", "--grep", "supersede").splitlines()) == 1
    other.close()


@pytest.mark.stress
def test_concurrent_supersedes_in_processes_leave_one_whole_supersession(alpha: Vault) -> None:
    root = alpha.root
    for round_ in range(20):
        old = alpha.add_fact(f"Round {round_}: the queue is RabbitMQ.", topics=["project-alpha"]).record.id
        procs = [subprocess.Popen([PYTHON, "-m", "am.cli.main", "--vault", str(root), "fact", "supersede", old,
                                   f"Round {round_}: the queue is Kafka ({n}).", "--reason", "moved",
                                   "--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=subprocess_env(AM_ACTOR=f"w{n}")) for n in range(3)]
        outs = [(p.wait(timeout=120), *p.communicate()) for p in procs]
        won = [json.loads(out)["records"][0]["id"] for code, out, _ in outs if code == 0]
        assert len(won) == 1, outs
        for code, _, err in outs:
            assert code == 0 or ("Error:" in err and "Traceback" not in err), err
        rel = _fact_file(root, old).relative_to(root)
        assert f"superseded_by: {won[0]}" in run_git(root, "show", f"HEAD:{rel}")


# ------------------------------------------------------------ a person's edit during am's update

def test_an_edit_landing_between_the_dirty_check_and_the_replace_is_kept(
        alpha: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    fid = alpha.add_fact("Deploys go out on Tuesdays.", topics=["project-alpha"]).record.id
    path = _fact_file(alpha.root, fid)
    real_check = Guards.check_not_dirty

    def check_then_person_appends(self: Guards, changes: Any, base_tree: Any, index: Any, **kw: Any) -> Any:
        out = real_check(self, changes, base_tree, index, **kw)
        if any(c.path.name == path.name for c in changes):
            with open(path, "a") as f:  # an editor saving right after am looked
                f.write("A line the person typed.\n")
        return out

    monkeypatch.setattr(Guards, "check_not_dirty", check_then_person_appends)
    with pytest.raises(DirtyFileError):
        alpha.expire_fact(fid, reason="no longer true")
    assert "A line the person typed." in path.read_text()
    assert "status: expired" not in run_git(alpha.root, "show", f"HEAD:{path.relative_to(alpha.root)}")
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]


_EDITOR = r"""
import os, subprocess, sys, time
root, path, stop = sys.argv[1], sys.argv[2], sys.argv[3]
n = 0
while not os.path.exists(stop):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)  # an editor saving the file, then the person
    os.write(fd, f"edit {n}\n".encode())                       # committing it
    os.close(fd)
    n += 1
    time.sleep(0.002)
    subprocess.run(["git", "-C", root, "commit", "-q", "-m", f"edit {n}", "--", path], capture_output=True)
print(n)
"""


@pytest.mark.stress
def test_an_editor_appending_while_am_updates_loses_no_edit(alpha: Vault, tmp_path: Path) -> None:
    for round_ in range(6):  # the old code lost an edit in about one round of four
        fid = alpha.add_fact(f"Edited by hand and by am ({round_}).", topics=["project-alpha"]).record.id
        path = _fact_file(alpha.root, fid)
        stop = tmp_path / f"stop-{round_}"
        editor = subprocess.Popen([PYTHON, "-c", _EDITOR, str(alpha.root), str(path), str(stop)],
                                  stdout=subprocess.PIPE, text=True, env=subprocess_env())
        updated = 0
        try:
            for i in range(300):
                try:
                    alpha.set_fact_status(fid, "contested" if i % 2 else "active", reason=f"try {i}")
                    updated += 1
                except (DirtyFileError, UsageError, ConflictError, InvalidRecordError):
                    pass
        finally:
            stop.touch()
            written = int(editor.communicate(timeout=120)[0])
        text = path.read_text()
        lost = [n for n in range(written) if f"edit {n}\n" not in text]
        assert lost == [], f"round {round_}: {len(lost)} of {written} edits lost ({updated} updates by am)"
        assert not list(path.parent.glob(f"{path.name}.am-kept-*"))


_OPENS_THEN_APPENDS = r"""
import os, sys
print("opening", flush=True)
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)  # waits in the kernel while am holds its lease
os.write(fd, b"Typed while am was replacing the file.\n")
os.close(fd)
"""


def test_an_editor_that_opened_the_old_file_before_the_rename_keeps_its_write(
        alpha: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    # The window the adversary's editor hit 2 times in 118: opened before am's rename, written after.
    fid = alpha.add_fact("Deploys go out on Tuesdays.", topics=["project-alpha"]).record.id
    path = _fact_file(alpha.root, fid)
    head = run_git(alpha.root, "rev-parse", "HEAD").strip()
    real_link_old = WorkTree._link_old
    editors: list[subprocess.Popen[str]] = []

    def link_old_while_an_editor_opens(target: Path) -> str | None:
        if target.name == path.name and not editors:
            editor = subprocess.Popen([PYTHON, "-c", _OPENS_THEN_APPENDS, str(path)], stdout=subprocess.PIPE, text=True)
            editors.append(editor)
            assert editor.stdout is not None and editor.stdout.readline() == "opening\n"
            time.sleep(0.3)  # the editor is now inside open(), waiting on am's lease
        return real_link_old(target)

    monkeypatch.setattr(WorkTree, "_link_old", staticmethod(link_old_while_an_editor_opens))
    with pytest.raises(DirtyFileError, match="opened for writing by another program"):
        alpha.expire_fact(fid, reason="no longer true")
    assert editors[0].wait(timeout=30) == 0
    text = path.read_text()
    assert "Typed while am was replacing the file." in text
    assert "status: expired" not in text
    assert run_git(alpha.root, "rev-parse", "HEAD").strip() == head
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".") or ".am-kept-" in p.name]


def test_a_file_held_open_for_writing_is_not_replaced(alpha: Vault) -> None:
    fid = alpha.add_fact("Deploys go out on Tuesdays.", topics=["project-alpha"]).record.id
    path = _fact_file(alpha.root, fid)
    before = path.read_bytes()
    with open(path, "ab"):  # a program that keeps the file open for writing
        with pytest.raises(DirtyFileError, match="open for writing in another program"):
            alpha.expire_fact(fid, reason="no longer true")
        assert path.read_bytes() == before
    alpha.expire_fact(fid, reason="no longer true")  # closed: the write goes through
    assert "status: expired" in path.read_text()


# ------------------------------------------------------------ Git's index after a killed or blocked write

@pytest.mark.parametrize("writer", ["am", "libgit2"])
def test_a_person_committing_right_after_ams_branch_move_does_not_delete_ams_file(
        alpha: Vault, monkeypatch: pytest.MonkeyPatch, writer: str) -> None:
    # `git commit` reads HEAD, then takes the index lock: between am's branch move and its
    # index update it committed the old index on top of am's commit, deleting am's new file.
    monkeypatch.setenv("AM_GIT_WRITER", writer)
    real_finish = Staging.finish_index
    tried: list[subprocess.CompletedProcess[str]] = []

    def person_commits_first(self: Staging, *args: Any, **kwargs: Any) -> Any:
        if not tried:
            tried.append(subprocess.run(["git", "-C", str(alpha.root), "commit", "-q", "-m", "by hand"],
                                        capture_output=True, text=True))
        return real_finish(self, *args, **kwargs)

    monkeypatch.setattr(Staging, "finish_index", person_commits_first)
    fid = alpha.add_fact("Acknowledged, so it stays.", topics=["project-alpha"]).record.id
    assert tried and tried[0].returncode != 0 and "index.lock" in tried[0].stderr
    assert any(fid in p for p in head_files(alpha.root, "facts"))
    assert staged_differences(alpha.root) == ""


def test_a_write_killed_after_its_commit_is_staged_by_the_next_write(alpha: Vault) -> None:
    root = alpha.root
    proc = add_fact(root, "Killed right after the commit.", AM_FAILPOINT="after-commit")
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    killed = head_files(root, "facts")
    assert killed, "the killed write's commit is on the branch"
    fact_id(add_fact(root, "The next write."))
    assert staged_differences(root) == ""
    assert run_git(root, "status", "--porcelain", "--untracked-files=all").strip() == ""
    # What the person's next commit would do: it must not delete the acknowledged fact.
    run_git(root, "commit", "-q", "--allow-empty", "-am", "by hand")
    assert killed <= head_files(root, "facts")


def test_a_write_blocked_by_index_lock_is_refused_and_the_next_write_lands(alpha: Vault) -> None:
    # Before issue 36 the blocked write was committed and its index entry set by the next write; now the branch
    # moves only together with Git's index: the blocked write fails (exit 8) and changes nothing.
    root = alpha.root
    head = run_git(root, "rev-parse", "HEAD").strip()
    lock = root / ".git" / "index.lock"
    lock.write_text("")  # a git command holding the index
    blocked = add_fact(root, "Written while git held the index.", AM_GIT_LOCK_WAIT="0.3")
    assert blocked.returncode == 8, blocked.stdout + blocked.stderr
    assert run_git(root, "rev-parse", "HEAD").strip() == head
    lock.unlink()
    first = fact_id(add_fact(root, "Written while git held the index."))
    assert staged_differences(root) == ""
    assert any(first in p for p in run_git(root, "ls-files", "facts").split())


def test_doctor_finds_and_fixes_index_drift(alpha: Vault) -> None:
    root = alpha.root
    proc = add_fact(root, "Killed right after the commit.", AM_FAILPOINT="after-commit")
    assert proc.returncode == -signal.SIGKILL
    found = am(root, "doctor", "--format", "json")
    kinds = {f["kind"] for f in json.loads(found.stdout)["findings"]}
    assert "index-drift" in kinds, found.stdout
    fixed = am(root, "doctor", "--fix", "--format", "json")
    assert fixed.returncode == 0, fixed.stderr
    assert staged_differences(root) == ""


def test_a_git_lock_left_by_a_killed_am_is_cleared_at_once(alpha: Vault) -> None:
    root = alpha.root
    proc = add_fact(root, "Killed holding the index lock.", AM_FAILPOINT="index-locked")
    assert proc.returncode == -signal.SIGKILL
    assert (root / ".git" / "index.lock").exists()
    # Fresh (far from the 60 s stale age), but its am process is gone: no wait, no warning.
    nxt = add_fact(root, "The next write.", AM_GIT_LOCK_WAIT="0.3")
    fact_id(nxt)
    assert "index was not updated" not in nxt.stderr
    assert not (root / ".git" / "index.lock").exists()
    assert staged_differences(root) == ""


def test_a_branch_lock_left_inside_the_move_by_a_killed_am_is_cleared_at_once(alpha: Vault) -> None:
    root = alpha.root
    before = run_git(root, "rev-parse", "HEAD").strip()
    proc = add_fact(root, "Killed inside the branch move.", AM_FAILPOINT="after-objects")
    assert proc.returncode == -signal.SIGKILL
    # What libgit2 leaves when killed inside the move: the branch's lock file, just made.
    (root / ".git" / "refs" / "heads" / "main.lock").write_text("")
    fact_id(add_fact(root, "The next write.", AM_GIT_LOCK_WAIT="0.3"))
    assert run_git(root, "rev-parse", "HEAD~1").strip() == before
    assert not (root / ".git" / "refs" / "heads" / "main.lock").exists()


# ------------------------------------------------------------ the cross-process queue

def _inject(queue: Path, changes: list[tuple[str, bytes]], author: list[str]) -> tuple[str, int]:
    """Leave a request in am's queue the way a writer does (locked by a live process: this one)."""
    import base64

    queue.mkdir(parents=True, exist_ok=True)
    rid = f"{os.getpid()}-9-{os.urandom(4).hex()}"
    body = {"changes": [{"path": p, "data": base64.b64encode(d).decode(), "base": None} for p, d in changes],
            "message": "fact: add f-x\n\nAm-Op: fact.add\n", "author": author, "committer": None}
    path = queue / f"{rid}.req"
    path.write_text(json.dumps(body))
    fd = os.open(path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return rid, fd


@pytest.mark.parametrize("changes, author", [
    ([("../escaped.md", b"outside\n")], ["x", "x@example.com"]),
    ([(".git/hooks/pre-commit", b"#!/bin/sh\necho owned\n")], ["x", "x@example.com"]),
    ([("facts/2026/01/01/f-20260101-0000-aaaaaa.md", b"x\n"), (".GIT/config", b"x\n")], ["x", "x@example.com"]),
    ([("notes/elsewhere.txt", b"not a record\n")], ["x", "x@example.com"]),
    ([("facts/2026/01/01/f-20260101-0000-bbbbbb.md", b"x\n")], ["x\nAm-Actor: root", "x@example.com"]),
    ([("facts/2026/01/01/f-20260101-0000-cccccc.md", b"x\n")], ["x <y>", "x@example.com"]),
], ids=["dotdot", "git-hooks", "dotgit-case", "not-a-record", "author-newline", "author-brackets"])
def test_a_queued_request_is_checked_like_a_direct_write(alpha: Vault, changes: list[tuple[str, bytes]],
                                                        author: list[str]) -> None:
    root = alpha.root
    before = head_files(root)
    rid, fd = _inject(root / ".git" / "am" / "queue", changes, author)
    try:
        alpha.add_fact("A legitimate write leads the batch.", topics=["project-alpha"])
        answer = json.loads((root / ".git" / "am" / "queue" / f"{rid}.done").read_text())
    finally:
        os.close(fd)
    assert answer.get("error") == "UsageError", answer
    assert not (root.parent / "escaped.md").exists()
    assert not (root / ".git" / "hooks" / "pre-commit").exists()
    added = head_files(root) - before
    assert all(p.startswith("facts/") and p.endswith(".md") for p in added), added
    assert len(added) == 1
    assert run_git(root, "log", "--format=%an%n%cn", "-3").count("Am-Actor") == 0
    subprocess.run(["git", "clone", "-q", str(root), str(root.parent / "clone")], check=True)


# ------------------------------------------------------------ a checkout while am writes

def test_a_checkout_during_a_write_does_not_stage_on_the_other_branch(
        alpha: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    root = alpha.root
    run_git(root, "branch", "other")
    real_lock = Staging.lock_index_for_move

    def lock_during_a_checkout(self: Staging) -> None:
        # A checkout running while am moves the branch: it writes the other branch's index
        # (before am takes the index lock), then moves HEAD (while am holds it: HEAD needs no index lock).
        run_git(root, "read-tree", "other")
        real_lock(self)
        run_git(root, "symbolic-ref", "HEAD", "refs/heads/other")

    monkeypatch.setattr(Staging, "lock_index_for_move", lock_during_a_checkout)
    fid = alpha.add_fact("Committed on main while main was being left.", topics=["project-alpha"]).record.id
    assert run_git(root, "symbolic-ref", "HEAD").strip() == "refs/heads/other"
    assert staged_differences(root) == "", "the other branch's index got am's entry"
    assert any(fid in p for p in run_git(root, "ls-tree", "-r", "--name-only", "main", "facts").split())


"""Group commit across processes (am/git/coord/spool.py): real writer processes, the git CLI as oracle."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from am.errors import DirtyFileError, LockTimeoutError
from am.git import GitStore
from am.git.coord import spool
from am.git.coord.group import Request
from am.git.light import Change
from am.vault import Vault
from conftest import fsck_clean, run_git

REPO = Path(__file__).resolve().parent.parent

WRITER = """
import json, sys
from am.errors import AmError
from am.vault import Vault
root, kind, ident, text = sys.argv[1:5]
vault = Vault.open(root, actor="writer-" + ident)
try:
    if kind == "topic":
        result = vault.add_topic(title=text, id=ident)
    else:
        result = vault.add_fact(text, topics=["project-alpha"], id=ident)
    print(json.dumps({"commit": result.commit}))
except AmError as err:
    print(json.dumps({"error": type(err).__name__, "message": str(err)}))
"""


def _spawn(root: Path, kind: str, ident: str, text: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-c", WRITER, str(root), kind, ident, text],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _wait_for_queue(queue: Path, count: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if queue.is_dir() and len([p for p in queue.iterdir() if p.name.endswith(".req")]) >= count:
            return
        time.sleep(0.02)
    raise AssertionError(f"fewer than {count} requests reached {queue}")


def _result(proc: subprocess.Popen[str]) -> dict[str, str]:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_waiting_processes_share_one_batch_and_each_gets_its_own_commit(alpha: Vault) -> None:
    root = alpha.root
    store = GitStore.open(root)
    queue = root / ".git" / "am" / "queue"
    before = int(run_git(root, "rev-list", "--count", "HEAD"))
    with store.write_lock():  # every writer finds the lock taken and leaves its request
        procs = [_spawn(root, "fact", f"fact-p{n}", f"process {n} was here") for n in range(6)]
        _wait_for_queue(queue, 6)
    results = [_result(p) for p in procs]
    commits = [r["commit"] for r in results]
    assert len(set(commits)) == 6
    assert int(run_git(root, "rev-list", "--count", "HEAD")) == before + 6
    assert run_git(root, "rev-list", "--merges", "HEAD") == ""
    for n, commit in enumerate(commits):
        # Each commit is that process's own: its author, its one file.
        assert run_git(root, "log", "-1", "--format=%an", commit).strip() == f"writer-fact-p{n}"
        files = run_git(root, "show", "--name-only", "--format=", commit).split()
        assert len(files) == 1 and f"fact-p{n}" in files[0]
        run_git(root, "merge-base", "--is-ancestor", commit, "HEAD")
    # One leader committed the others' requests: one reflog entry for several commits.
    assert "(am group of" in run_git(root, "reflog", "-n", "6")
    assert run_git(root, "status", "--porcelain") == ""
    assert not [p for p in queue.iterdir()]  # every writer took its answer and cleaned up
    fsck_clean(root)


def test_a_request_whose_writer_was_killed_is_dropped(alpha: Vault) -> None:
    root = alpha.root
    store = GitStore.open(root)
    queue = root / ".git" / "am" / "queue"
    with store.write_lock():
        doomed = _spawn(root, "fact", "fact-doomed", "never acknowledged")
        _wait_for_queue(queue, 1)
        doomed.send_signal(signal.SIGKILL)
        doomed.wait()
    alpha.add_fact("the next write", topics=["project-alpha"], id="fact-next")
    tree = run_git(root, "ls-tree", "-r", "--name-only", "HEAD")
    assert "fact-next" in tree and "fact-doomed" not in tree
    assert not [p for p in queue.iterdir() if p.name.endswith(".req")]
    assert run_git(root, "status", "--porcelain") == ""


def test_an_error_reaches_the_process_that_asked(alpha: Vault) -> None:
    root = alpha.root
    store = GitStore.open(root)
    queue = root / ".git" / "am" / "queue"
    with store.write_lock():
        bad = _spawn(root, "fact", "fact-in-the-way", "Will find a file in its way")
        good = _spawn(root, "fact", "fact-fine", "Fine")
        _wait_for_queue(queue, 2)
        # While both wait, someone saves their own file where the first one will write.
        for req in queue.glob("*.req"):
            change = json.loads(req.read_text())["changes"][0]
            if "fact-in-the-way" in change["path"]:
                (root / change["path"]).parent.mkdir(parents=True, exist_ok=True)
                (root / change["path"]).write_text("someone's own file\n")
                in_the_way = change["path"]
    bad_result, good_result = _result(bad), _result(good)
    assert bad_result["error"] == "DirtyFileError"
    assert in_the_way in bad_result["message"]
    assert "commit" in good_result
    assert (root / in_the_way).read_text() == "someone's own file\n"
    tree = run_git(root, "ls-tree", "-r", "--name-only", "HEAD")
    assert "fact-fine" in tree and "fact-in-the-way" not in tree


def _request(name: str) -> Request:
    return Request((Change(Path(name), b"x\n", None),), "m", ("a", "a@e"), None)  # type: ignore[arg-type]


def test_an_answer_whose_commit_the_branch_does_not_reach_is_not_taken(alpha: Vault) -> None:
    """A leader killed after answering but before moving the branch: the writer commits by itself."""
    store = GitStore.open(alpha.root)
    queue = alpha.root / ".git" / "am" / "queue"
    ticket = spool.put(queue, _request("a.md"))
    claimed = spool.claim(queue, limit=8)
    assert [r.remote for r in claimed] == [ticket.rid]
    spool.answer_pending(queue, claimed[0], "1" * 40)
    assert spool.collect(queue, ticket, store._in_branch) is None
    head = run_git(alpha.root, "rev-parse", "HEAD").strip()
    spool.answer_pending(queue, claimed[0], head)
    assert spool.collect(queue, ticket, store._in_branch) == spool.Answer(head, None, False)
    assert spool.collect(queue, ticket, store._in_branch, final_only=True) is None  # not to be read unlocked
    claimed[0].error = DirtyFileError("x.md has uncommitted changes", hint="commit them")
    claimed[0].commit = None
    spool.answer(queue, claimed[0])
    got = spool.collect(queue, ticket, store._in_branch, final_only=True)
    assert got is not None and got.commit is None and got.final
    assert isinstance(got.error, DirtyFileError) and got.error.hint == "commit them"
    spool.withdraw(ticket)
    assert list(queue.iterdir()) == []


def test_answered_and_foreign_files_are_not_claimed(alpha: Vault) -> None:
    queue = alpha.root / ".git" / "am" / "queue"
    ticket = spool.put(queue, _request("a.md"))
    (queue / "junk.req").write_text("not json")
    fcntl_holder = spool.put(queue, _request("b.md"))
    (queue / f"{fcntl_holder.rid}.done").write_text('{"commit": "x"}')
    claimed = spool.claim(queue, limit=8)
    assert [r.remote for r in claimed] == [ticket.rid]
    assert not (queue / "junk.req").exists()  # nobody holds its lock: a dead writer's, dropped
    spool.withdraw(ticket)
    spool.withdraw(fcntl_holder)


@pytest.mark.parametrize("value", ["0"])
def test_am_spool_0_turns_it_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("AM_SPOOL", value)
    assert not spool.enabled()
    monkeypatch.delenv("AM_SPOOL")
    assert spool.enabled()


def test_giving_up_withdraws_only_an_unclaimed_request(alpha: Vault) -> None:
    queue = alpha.root / ".git" / "am" / "queue"
    ticket = spool.put(queue, _request("a.md"))
    assert spool.give_up(ticket) and not ticket.path.exists()
    spool.withdraw(ticket)
    ticket = spool.put(queue, _request("b.md"))
    (claimed,) = spool.claim(queue, limit=8)
    # A leader has it: the writer must wait for the answer, not report a failure.
    assert not spool.give_up(ticket)
    spool.unclaim(queue, claimed)  # its batch did not take it: back in the queue
    assert ticket.path.exists()
    assert [r.remote for r in spool.claim(queue, limit=8)] == [ticket.rid]
    spool.withdraw(ticket)
    assert list(queue.iterdir()) == []


HOLDER = """
import sys, time
from pathlib import Path, PurePosixPath
from am.git import Change, GitStore
root, commits = Path(sys.argv[1]), int(sys.argv[2])
s = GitStore.open(root)
with s.write_lock(op="test.hold"):
    print("held", flush=True)
    for n in range(commits):  # busy: the branch moves every 0.2 s
        time.sleep(0.2)
        s.commit([Change(PurePosixPath(f"topics/busy-{n}.md"), b"busy\\n")], message="busy\\n", author=("t", "t@x"))
    time.sleep(0.2 if commits else 3)  # idle: holds the lock, commits nothing
"""


@pytest.mark.parametrize("busy", [True, False])
def test_a_queued_writer_waits_while_the_holder_commits_and_not_while_it_stalls(alpha: Vault, busy: bool) -> None:
    root = alpha.root
    store = GitStore.open(root)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(root), "10" if busy else "0"],
                              stdout=subprocess.PIPE, text=True, env=env)
    request = Request((Change(Path("topics/late.md"), b"late\n"),), "late\n", ("t", "t@x"), None)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        began = time.monotonic()
        if busy:
            # 2 s of a busy holder against a 0.6 s timeout: the waiter keeps its place and gets the lock.
            with store.write_lock(timeout=0.6, request=request):
                assert holder.poll() is not None or holder.wait(timeout=10) == 0
            assert time.monotonic() - began > 1.5
        else:
            with pytest.raises(LockTimeoutError) as err, store.write_lock(timeout=0.6, request=request):
                pass
            assert time.monotonic() - began < 2.5
            assert f"process {holder.pid}" in str(err.value) and "committed nothing for 0.6 s" in str(err.value)
    finally:
        holder.kill()
        holder.wait()
    assert not list((root / ".git" / "am" / "queue").glob("*.req"))  # the request left with its writer

"""Issue 36.7: a request left in `.git/am/queue/` gets the checks of a direct write, whoever left it.

The requests here are written by hand, as a hostile local process would: a JSON file locked with flock and
renamed into the queue (am/git/coord/spool.py). A write of this process then leads, claims them, and commits
only the good one; each bad one gets the error a direct write would have had as its answer.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from am.records.codec import render_record
from am.records.ids import record_file
from am.records.model import Fact, Topic
from am.vault import Vault
from conftest import fsck_clean, run_git

CREATED = "2026-03-01T10:00:00+00:00"
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
ACTOR = "writer"


def _fact(fid: str, body: str) -> tuple[str, bytes]:
    fact = Fact(id=fid, topics=("project-alpha",), body=body, created=CREATED, provenance="human")
    return record_file("fact", fid, CREATED), render_record(fact).encode("utf-8")


def _message(ids: list[str], *, actor: str = ACTOR, extra: str = "") -> str:
    trailers = "".join(f"Am-Record: {i}\n" for i in ids)
    return f"fact: add {ids[0]}\n\nAm-Op: fact.add\n{trailers}Am-Actor: {actor}\n{extra}"


def _body(path: str, data: bytes, message: str, *, author: str = ACTOR, base: str | None = None) -> bytes:
    return json.dumps({
        "changes": [{"path": path, "data": base64.b64encode(data).decode("ascii"), "base": base}],
        "message": message, "author": [author, "w@example.com"], "committer": None,
    }).encode("utf-8")


class Hostile:
    """Requests left in the queue by hand, each locked as a live writer's is."""

    def __init__(self, queue: Path) -> None:
        self.queue = queue
        self.fds: list[int] = []
        queue.mkdir(parents=True, exist_ok=True)

    def leave(self, name: str, body: bytes) -> str:
        rid = f"{os.getpid()}-{900 + len(self.fds)}-{name}"
        tmp = self.queue / f".{rid}.tmp"
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, body)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.rename(tmp, self.queue / f"{rid}.req")
        self.fds.append(fd)
        return rid

    def answer(self, rid: str) -> dict[str, object]:
        return json.loads((self.queue / f"{rid}.done").read_text())  # type: ignore[no-any-return]

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)


@pytest.fixture
def hostile(alpha: Vault) -> Iterator[Hostile]:
    h = Hostile(alpha.root / ".git" / "am" / "queue")
    yield h
    h.close()


def test_the_holder_refuses_each_defect_and_commits_the_good_request(alpha: Vault, hostile: Hostile) -> None:
    root = alpha.root
    topic_path = "topics/project-alpha.md"
    topic_blob = run_git(root, "rev-parse", f"HEAD:{topic_path}").strip()
    good_path, good = _fact("fact-good", "a good request from another process")
    rids = {"good": hostile.leave("good", _body(good_path, good, _message(["fact-good"])))}

    path, data = _fact("fact-secret", f"the deploy token is {TOKEN}")
    rids["secret"] = hostile.leave("secret", _body(path, data, _message(["fact-secret"])))
    path, data = _fact("fact-schema", "confidence out of its values")
    data = data.replace(b"confidence: medium", b"confidence: total")
    rids["schema"] = hostile.leave("schema", _body(path, data, _message(["fact-schema"])))
    evil = render_record(Topic(id="project-alpha", kind="project", title="Evil", created=CREATED)).encode()
    rids["impostor-new"] = hostile.leave("impostornew", _body("topics/project-alpha-evil.md", evil,
                                                              _message(["project-alpha"])))
    other = render_record(Topic(id="project-evil", kind="project", title="Evil", created=CREATED)).encode()
    rids["impostor-update"] = hostile.leave("impostorupd", _body(topic_path, other, _message(["project-evil"]),
                                                                 base=topic_blob))
    path, data = _fact("fact-author", "an author that is not its actor")
    rids["author"] = hostile.leave("author", _body(path, data, _message(["fact-author"]), author="alice"))
    path, data = _fact("fact-trailer", "a trailer naming a record it does not write")
    rids["trailer"] = hostile.leave("trailer", _body(path, data, _message(["fact-trailer", "project-alpha"])))
    path, data = _fact("fact-extra", "a trailer am never writes")
    rids["extra"] = hostile.leave("extra", _body(path, data, _message(["fact-extra"], extra="Am-Approved: yes\n")))
    path, data = _fact("fact-subject", "an Am- line above its trailers")
    rids["subject"] = hostile.leave("subject", _body(path, data, "fact: add\nAm-Op: fact.add\n\n"
                                                     + _message(["fact-subject"]).split("\n\n", 1)[1]))
    rids["malformed"] = hostile.leave("malformed", b'{"changes": [{"path": 7}]')

    alpha.add_fact("the holder's own write", topics=["project-alpha"], id="fact-leader")

    tree = run_git(root, "ls-tree", "-r", "--name-only", "HEAD")
    assert "fact-leader" in tree and good_path in tree
    for name in ("secret", "schema", "author", "trailer", "extra", "subject"):
        assert f"fact-{name}" not in tree, name
    assert "project-alpha-evil" not in tree
    assert run_git(root, "rev-parse", f"HEAD:{topic_path}").strip() == topic_blob
    assert "alice" not in run_git(root, "log", "--format=%an")

    good_answer = hostile.answer(rids["good"])
    assert "commit" in good_answer
    assert run_git(root, "log", "-1", "--format=%an", str(good_answer["commit"])).strip() == ACTOR
    expected = {"secret": "SecretError", "schema": "InvalidRecordError", "impostor-new": "InvalidRecordError",
                "impostor-update": "InvalidRecordError", "author": "UsageError", "trailer": "UsageError",
                "extra": "UsageError", "subject": "UsageError", "malformed": "UsageError"}
    for name, kind in expected.items():
        got = hostile.answer(rids[name])
        assert got.get("error") == kind and "commit" not in got, (name, got)
    assert "not at its path topics/project-alpha.md" in str(hostile.answer(rids["impostor-new"])["message"])
    # The file that was not a request is set aside for a person, not read again by the next leader.
    assert (hostile.queue / f"{rids['malformed']}.bad").exists()
    assert not (hostile.queue / f"{rids['malformed']}.req").exists()
    fsck_clean(root)


def test_a_good_request_as_am_writes_it_still_lands(alpha: Vault, hostile: Hostile) -> None:
    """The checks refuse nothing am itself queues: a request spooled by am's own writer is committed."""
    from am.git.coord import spool
    from am.git.coord.group import Request
    from am.git.light import Change
    from am.records.writes import check_trailers

    path, data = _fact("fact-spooled", "spooled the way am spools it")
    message = alpha.authorship.message("fact", "add", ["fact-spooled"])
    check_trailers(message, actor=alpha.authorship.author()[0], ids=["fact-spooled"])
    ticket = spool.put(hostile.queue, Request((Change(Path(path), data, None),), message,  # type: ignore[arg-type]
                                              alpha.authorship.author(), None))
    try:
        alpha.add_fact("the leader", topics=["project-alpha"], id="fact-leader-2")
        got = json.loads((hostile.queue / f"{ticket.rid}.done").read_text())
        assert "commit" in got, got
        assert path in run_git(alpha.root, "ls-tree", "-r", "--name-only", "HEAD")
    finally:
        spool.withdraw(ticket)


def test_a_write_with_the_secret_override_waits_for_the_lock_instead_of_queueing(alpha: Vault) -> None:
    """The holder takes no override from the queue, so a person's --allow-secret write never leaves one there."""
    import subprocess
    import sys
    import time

    from am.git import GitStore

    root = alpha.root
    queue = root / ".git" / "am" / "queue"
    script = ("import sys; from am.vault import Vault; v = Vault.open(sys.argv[1], actor='person'); "
              f"print(v.add_fact('the token is {TOKEN}', topics=['project-alpha'], id='fact-allowed', "
              "allow_secrets=True).commit)")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    with GitStore.open(root).write_lock():
        proc = subprocess.Popen([sys.executable, "-c", script, str(root)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline and proc.poll() is None:
            assert not (queue.is_dir() and any(p.suffix == ".req" for p in queue.iterdir()))
            time.sleep(0.05)
        assert proc.poll() is None  # still waiting for the lock
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "fact-allowed" in run_git(root, "ls-tree", "-r", "--name-only", out.strip())

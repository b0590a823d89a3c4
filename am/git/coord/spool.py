"""Group commit across processes: a writer that finds the write lock taken leaves its request for the leader.

The queue is `.git/am/queue/`. A waiting writer:

1. writes its request (files, message, author, committer) to a temporary
   file, takes an flock on it, and renames it to ``<id>.req`` - so every
   request a leader can see is locked by a live writer, and the lock dies
   with the writer;
2. waits for the vault's write lock;
3. meanwhile polls - both the lock and ``<id>.done`` - for a *final* answer (written once the
   leader's whole batch is done: branch moved, Git's index and the cache
   updated): its commit (taken only if the branch reaches it) or its error.
   Waiting writers so return without each taking the lock in turn;
4. if it gets the write lock first, it takes any answer there (a commit the
   branch reaches, even if not final: then it sets its own index entries);
   otherwise nobody committed its request, and it leads with it itself.

A leader (holding the write lock) claims the requests of live writers by
renaming them to ``<id>.claimed`` - an flock it can take means the writer
died, and the request is dropped - and commits them in its batch, each as its
own commit (one its batch cannot take is renamed back). A request is
checked as a write of this process is, and more (am/git/checks.py
``check_queued``): one that fails gets its error as its answer, and a file
that is not a well-formed request is moved aside (``<id>.bad``) and logged. A writer that gives
up waiting (the lock timeout) deletes its ``.req``; if that is gone, a leader
has claimed it, and the writer waits for the answer instead of reporting a
failure for a write that is about to land. It writes each ``.done``
before it moves the branch, and again at the end with the final outcome, so
a leader killed in between leaves an answer whose commit the branch does not
reach: the writer then commits its request itself, exactly once.

Result files need no fsync: a writer reads them only while its process lives,
and the commits themselves are durable before any writer returns.

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import base64
import fcntl
import itertools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from am import errors
from am.git.common import _flock_now, log
from am.git.coord.group import Request
from am.git.values import Change

__all__ = ["Answer", "Ticket", "answer", "answer_pending", "claim", "collect", "enabled", "give_up", "put", "unclaim",
           "withdraw"]

_COUNTER = itertools.count()


def enabled() -> bool:
    """Return whether writers of separate processes share commits (``AM_SPOOL=0`` turns it off)."""
    return os.environ.get("AM_SPOOL", "1") != "0"


@dataclass
class Answer:
    """A leader's answer: the request's commit or its error; ``final`` once the whole batch was done."""

    commit: str | None
    error: errors.AmError | None
    final: bool


@dataclass
class Ticket:
    """A request this process left in the queue, and the flock that says its writer is alive."""

    rid: str
    path: Path
    fd: int


def _done_path(queue: Path, rid: str) -> Path:
    return queue / f"{rid}.done"


def put(queue: Path, request: Request) -> Ticket:
    """Leave ``request`` in the queue, locked by this process; return its ticket."""
    queue.mkdir(parents=True, exist_ok=True)
    rid = f"{os.getpid()}-{next(_COUNTER)}-{os.urandom(4).hex()}"
    body = json.dumps({
        "changes": [{"path": str(c.path), "data": base64.b64encode(c.data).decode("ascii"), "base": c.base}
                    for c in request.changes],
        "message": request.message,
        "author": list(request.author),
        "committer": None if request.committer is None else list(request.committer),
    }).encode("utf-8")
    tmp = queue / f".{rid}.tmp"
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(body)
        while view:
            view = view[os.write(fd, view):]
        fcntl.flock(fd, fcntl.LOCK_EX)  # before it has its real name: a leader never sees it unlocked
        final = queue / f"{rid}.req"
        os.rename(tmp, final)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    return Ticket(rid, final, fd)


def _alive(path: Path) -> bool | None:
    """Return whether the writer of a queued request still holds its lock (None if the file is gone)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        return not _flock_now(fd)
    finally:
        os.close(fd)  # also drops the lock if we took it


def claim(queue: Path, *, limit: int) -> list[Request]:
    """Return up to ``limit`` requests of live writers that have no answer yet, oldest first; drop dead ones.

    The caller holds the write lock.
    """
    found: list[tuple[int, str, str]] = []
    try:
        for e in os.scandir(queue):
            if e.name.endswith(".req"):
                try:
                    found.append((e.stat().st_mtime_ns, e.name, e.path))
                except FileNotFoundError:
                    continue  # its writer took its answer and left (writers do that without the lock)
    except FileNotFoundError:
        return []
    out: list[Request] = []
    for _, name, path in sorted(found):
        if len(out) >= limit:
            break
        rid = name[:-4]
        if _done_path(queue, rid).exists():
            continue  # answered; its writer has not collected yet
        alive = _alive(Path(path))
        if alive is None:
            continue
        if not alive:
            # Its writer was killed before anyone committed it: never acknowledged, dropped.
            Path(path).unlink(missing_ok=True)
            continue
        try:
            raw = json.loads(Path(path).read_bytes())
            changes = tuple(Change(PurePosixPath(c["path"]), base64.b64decode(c["data"]), c["base"])
                            for c in raw["changes"])
            request = Request(changes, raw["message"], tuple(raw["author"]),
                              None if raw["committer"] is None else tuple(raw["committer"]), remote=rid,
                              records_only=True)  # checked like this process's own grouped writes (checks.py)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            _set_aside(queue, rid, Path(path), err)
            continue
        try:
            # Claimed: from now on its writer, if it gives up waiting, waits for this answer instead.
            os.rename(path, queue / f"{rid}.claimed")
        except FileNotFoundError:
            continue  # its writer gave up waiting and withdrew it
        out.append(request)
    return out


def _set_aside(queue: Path, rid: str, path: Path, err: Exception) -> None:
    """Move a request file am did not write aside (``<id>.bad``, kept for a person to read), log it, answer it.

    Never committed, and never left where the next leader reads it again; its writer, if one waits, is told.
    """
    try:
        os.rename(path, queue / f"{rid}.bad")
    except FileNotFoundError:
        return  # its writer withdrew it
    log.warning("set aside a queued write request that is not well-formed: %s (%s: %s)",
                queue / f"{rid}.bad", type(err).__name__, err)
    _write_answer(queue, rid, {"error": "UsageError", "message": f"the write request was not well-formed ({err})",
                               "hint": "run the command again", "final": True})


def waiting(queue: Path) -> bool:
    """Return whether any request is queued and not yet claimed."""
    try:
        with os.scandir(queue) as entries:
            return any(e.name.endswith(".req") for e in entries)
    except FileNotFoundError:
        return False


def unclaim(queue: Path, request: Request) -> None:
    """Put back a claimed request the leader's batch did not take (it touches a path another one does)."""
    assert request.remote is not None
    try:
        os.rename(queue / f"{request.remote}.claimed", queue / f"{request.remote}.req")
    except FileNotFoundError:
        pass


def give_up(ticket: Ticket) -> bool:
    """Withdraw a request no leader has claimed; return False if one has (then wait for its answer)."""
    try:
        ticket.path.unlink()
        return True
    except FileNotFoundError:
        return False


def answer(queue: Path, request: Request) -> None:
    """Write a claimed request's outcome (its commit, or its error) for its writer."""
    assert request.remote is not None
    if request.commit is not None:
        result: dict[str, object] = {"commit": request.commit, "final": True}
    else:
        err = request.error
        if isinstance(err, errors.AmError):
            result = {"error": type(err).__name__, "message": err.message, "hint": err.hint, "final": True}
        else:
            result = {"error": "GitError", "message": f"the writer that committed for this one failed: {err}",
                      "hint": "run the command again", "final": True}
    _write_answer(queue, request.remote, result)


def answer_pending(queue: Path, request: Request, commit: str) -> None:
    """Write the commit a claimed request will have once the branch moves (see the module docstring)."""
    assert request.remote is not None
    _write_answer(queue, request.remote, {"commit": commit})


def _write_answer(queue: Path, rid: str, result: dict[str, object]) -> None:
    done = _done_path(queue, rid)
    tmp = done.with_name(f".{done.name}.tmp")
    tmp.write_text(json.dumps(result))
    os.replace(tmp, done)  # a writer polling without the lock never reads half an answer


def collect(queue: Path, ticket: Ticket, reachable: Callable[[str], bool], *,
            final_only: bool = False) -> Answer | None:
    """Return the leader's answer to this ticket, or None if there is none to take.

    An answer naming a commit the branch does not reach is none (a leader
    killed between answering and moving the branch). ``final_only`` takes
    only an answer written after the whole batch was done (Git's index and
    the cache updated): a writer may read that without the write lock.
    """
    try:
        result = json.loads(_done_path(queue, ticket.rid).read_text())
    except (OSError, ValueError):
        return None
    final = bool(result.get("final"))
    if final_only and not final:
        return None
    if "commit" in result:
        commit = str(result["commit"])
        return Answer(commit, None, final) if reachable(commit) else None
    kind = getattr(errors, str(result.get("error")), None)
    if not (isinstance(kind, type) and issubclass(kind, errors.AmError)):
        kind = errors.GitError
    err = kind.__new__(kind)
    errors.AmError.__init__(err, str(result.get("message")), hint=result.get("hint"))
    return Answer(None, err, final)


def withdraw(ticket: Ticket) -> None:
    """Remove this ticket's request and answer and release its lock."""
    try:
        # The request first: a leader never sees it without its answer.
        ticket.path.unlink(missing_ok=True)
        ticket.path.with_suffix(".claimed").unlink(missing_ok=True)
        _done_path(ticket.path.parent, ticket.rid).unlink(missing_ok=True)
    finally:
        os.close(ticket.fd)

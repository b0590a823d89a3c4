"""am's write lock: one writer at a time, and the queue of other processes' requests while one waits.

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pygit2

import am.git.checks as checks
import am.git.coord.spool as spool
from am.errors import AmError, LockTimeoutError
from am.git.common import _flock_now, _flock_within, _unlock_close, log
from am.git.coord.group import Request
from am.git.reading import Reader
from am.git.program.sparse import refuse_hidden
from am.git.staging import Staging
from am.git.values import hash_blob


class Locking:
    """Holding the vault's write lock, and waiting for it with a request in the queue (am/git/coord/spool.py)."""

    def __init__(self, reader: Reader, staging: Staging) -> None:
        self.reader = reader
        self.staging = staging
        self.repo = reader.repo
        self.root = reader.root
        self.gitdir = reader.gitdir
        self._am_dir = staging.am_dir

    @contextmanager
    def write_lock(self, *, timeout: float = 30.0, op: str = "write", request: Request | None = None,
                   in_git_hook: bool = False) -> Iterator[None]:
        """Hold the vault's write lock (an flock on a file of am's own) for one write.

        Every write takes it, so it is where a write is refused while Git's own
        merge, cherry-pick, revert or rebase is unfinished (checks.py);
        ``in_git_hook``: the write of a hook Git runs before it clears its own
        state (post-rewrite runs inside the rebase it reports).

        With ``request``, a writer that finds the lock taken leaves the request
        in the queue while it waits (am/git/coord/spool.py); if the leader
        committed it meanwhile, its commit (or error) is set on the request,
        and the block may run without the lock (there is nothing left to do).
        """
        if not in_git_hook:
            checks.check_no_git_operation(self.gitdir)
            refuse_hidden(self.root, self.gitdir)  # a record folder a sparse checkout left out
        self._am_dir.mkdir(exist_ok=True)
        path = self._am_dir / "write.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if request is not None and spool.enabled():
                if not _flock_now(fd) and not self._wait_spooled(fd, request, timeout):
                    yield  # answered without the lock: the request is done, nothing to do under it
                    return
            elif not _flock_within(fd, timeout):
                self._lock_timeout()
            # The holder note is for people reading a timeout message only; the
            # flock itself dies with the process, so kill -9 never blocks anyone.
            note = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "op": op, "since": time.time()})
            try:
                (self._am_dir / "write.holder").write_text(note)
            except OSError:
                pass
            yield
        finally:
            _unlock_close(fd)

    @contextmanager
    def key_lock(self, key: int, *, timeout: float = 30.0) -> Iterator[None]:
        """Hold one of 256 locks, chosen by ``key``, across a check and the write it decides.

        A fact add holds the one of its statement (am/upkeep/duplicates.py) while it looks for
        the same fact and writes its own, so a second add of that statement checks after the
        first is committed. An flock on a file of its own (one open each, so threads of one
        process wait too), taken before the write lock and never while holding it; adds of
        other statements rarely share one and still commit together.

        Its holder may wait its turn for the write lock behind many writers (the write lock's
        timeout counts only time in which nobody got anywhere), so this wait counts the same:
        it gives up after ``timeout`` seconds in which no write got through, not after
        ``timeout`` seconds in all (32 writers on a loaded machine failed adds of other
        statements that shared a lock with one queued behind the rest).
        """
        self._am_dir.mkdir(exist_ok=True)
        path = self._am_dir / f"key-{key % 256:02x}.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if not _flock_within(fd, timeout, progress=self._progress_mark):
                raise LockTimeoutError(f"{path} was held by another writer of the same fact (or one sharing its "
                                       f"lock) while no write got through for {timeout:g} s",
                                       hint="wait for that writer to finish, or stop it")
            yield
        finally:
            _unlock_close(fd)

    def _wait_spooled(self, fd: int, request: Request, timeout: float) -> bool:
        """Wait for the write lock with the request in the queue; return whether the lock is held.

        A final answer from the leader ends the wait without the lock (the
        request's commit or error is set); an answer found holding the lock
        is taken too, and Git's index entries of a commit whose leader died
        before setting them are set here.
        """
        queue = self.staging.queue_dir
        ticket = spool.put(queue, request)
        try:
            # Polled, not a blocking flock in a helper thread: a writer that returns
            # on its answer would leave that thread queued on the lock, and such
            # abandoned waiters (each needing its busy process to run again to
            # let go) starved real ones past the timeout with 32 writers. Nobody
            # starves here: whoever takes the lock claims every queued request.
            #
            # The timeout counts time in which nobody got anywhere: while leaders
            # keep committing (the branch moves, or the lock changes hands), a
            # writer behind 31 busy ones on a loaded machine keeps its place
            # rather than failing a write that is about to land.
            deadline = time.monotonic() + timeout
            seen = self._progress_mark()
            pause = 0.0005
            while True:
                if _flock_now(fd):
                    got = spool.collect(queue, ticket, self.in_branch)
                    if got is not None:
                        self._take_answer(request, got)
                    return True
                got = spool.collect(queue, ticket, self.in_branch, final_only=True)
                if got is not None:
                    self._take_answer(request, got)
                    return False
                if time.monotonic() >= deadline:
                    mark = self._progress_mark()
                    if mark == seen and spool.give_up(ticket):
                        self._lock_timeout(stalled=timeout)
                    # Others got through meanwhile, or a leader has claimed the request
                    # (its answer comes when its batch is done): wait on.
                    seen = mark
                    deadline = time.monotonic() + timeout
                time.sleep(pause)
                pause = min(pause * 2, 0.005)
        finally:
            spool.withdraw(ticket)

    def _take_answer(self, request: Request, got: spool.Answer) -> None:
        """Set a leader's answer on the request; set Git's index entries if the leader died before it did."""
        request.commit, request.error = got.commit, got.error
        if got.commit is not None and not got.final:
            try:
                self.staging.update_index([(c.path, pygit2.Oid(hex=hash_blob(c.data))) for c in request.changes])
            except (OSError, AmError) as err:
                log.warning("committed %s, but Git's index was not updated (%s); run: am doctor --fix",
                            got.commit[:10], err)

    def _lock_timeout(self, *, stalled: float | None = None) -> None:
        still = "" if stalled is None else f", which committed nothing for {stalled:g} s"
        raise LockTimeoutError(
            f"the vault's write lock {self._am_dir / 'write.lock'} is held by {self._lock_holder()}{still}",
            hint="wait for that writer to finish, or stop it",
        )

    def _progress_mark(self) -> tuple[str | None, bytes]:
        """Return what changes while writers get through: HEAD's branch tip and the lock holder's note."""
        try:
            tip = self.reader.branch_tip(self.reader.head_ref())
        except (pygit2.GitError, AmError, KeyError, ValueError):
            tip = None
        try:
            note = (self._am_dir / "write.holder").read_bytes()
        except OSError:
            note = b""
        return tip, note

    def in_branch(self, commit: str) -> bool:
        """Return whether HEAD's branch reaches ``commit``."""
        tip = self.reader.branch_tip(self.reader.head_ref())
        if tip is None:
            return False
        if tip == commit:
            return True
        try:
            return bool(self.repo.descendant_of(tip, commit))
        except (pygit2.GitError, KeyError, ValueError):
            return False  # e.g. its objects never reached the disk

    def _lock_holder(self) -> str:
        try:
            info = json.loads((self._am_dir / "write.holder").read_text())
            return f"process {info['pid']} on {info['host']} ({info['op']})"
        except (OSError, ValueError, KeyError):
            return "another process"

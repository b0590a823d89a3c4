"""The write transaction (``Writer``): am's lock, the checks, one compare-and-swap commit per batch, Git's index.

It owns nothing of its own; it is handed the collaborators it drives (am/git/store.py
builds them): the reader (refs), staging (Git's index, lock files, branch moves), the
write lock, the guards (request and dirty checks, index healing), the work tree's
files and the libgit2-only writer.

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import PurePosixPath

import pygit2

import am.git.common as common
import am.git.coord.inflight as inflight
import am.git.formats.packs as packs
import am.git.coord.spool as spool
from am.errors import AmError, ConflictError, GitError
from am.git.formats.bigblob import blob_of
from am.git.common import _MAX_CAS_RETRIES, _Moved, log
from am.git.coord.group import (
    _MAX_BATCH,
    AfterHook,
    Group,
    Request,
    Who,
    batch_tip,
    take_batch,
)
from am.git.locking import Locking
from am.git.reading import Reader
from am.git.staging import StagedIndex, Staging
from am.git.formats.trees import ChainTrees
from am.git.values import Change, failpoint
from am.git.write.guards import Guards
from am.git.write.plain import PlainWriter, plain
from am.git.write.worktree import WorkTree

# How much longer a leader keeps committing other processes' queued requests once its own is done.
_LINGER = 0.1
_SETTLE = 0.002


class Writer:
    """The write transaction: a batch of requests committed as a chain, one flush, one branch move, one index."""

    def __init__(self, reader: Reader, staging: Staging, locking: Locking, guards: Guards, worktree: WorkTree,
                 plain_writer: PlainWriter) -> None:
        self.reader = reader
        self.staging = staging
        self.locking = locking
        self.guards = guards
        self.worktree = worktree
        self.plain_writer = plain_writer
        self.repo = reader.repo

    def commit(self, changes: Sequence[Change], *, message: str, author: Who,
               committer: Who | None = None) -> str:
        """Write files and commit them as one commit on HEAD's branch; return the commit id.

        The caller holds ``write_lock``.
        """
        request = Request(tuple(changes), message, author, committer)
        self.commit_batch([request])
        self._tidy_packs()
        if request.error is not None:
            raise request.error
        assert request.commit is not None
        return request.commit

    def commit_grouped(self, changes: Sequence[Change], *, message: str, author: Who,
                       committer: Who | None = None, op: str = "write",
                       after: AfterHook | None = None, queue: bool = True) -> str:
        """Commit as one commit of its own, sharing the flush, ref move and index rewrite with concurrent writers.

        Takes the write lock itself (do not hold it). Writers in other threads
        of this process that arrive while a batch is being written queue up;
        the next leader commits them all as a chain of commits, one per
        request, then moves the branch, rewrites Git's index and calls one
        ``after`` hook (the cache) once for the whole batch, with the last
        commit, every path and the commit the chain was built on. Returns this
        request's commit id once it is on disk; raises this request's own error.
        """
        request = Request(tuple(changes), message, author, committer, after)
        group = self.staging.process_group()
        with group.lock:
            group.pending.append(request)
            lead = not group.leading
            group.leading = True
        if not lead:
            request.woken.wait()
            if request.commit is not None:
                return request.commit
            if request.error is not None:
                raise request.error
            # Promoted: the previous leader handed the queue to this request.
        try:
            with self.locking.write_lock(op=op, request=request if queue else None):
                # The first batch may leave this request for later (it touches a
                # path an older waiting request touches): keep leading until it is done.
                led = False  # an answer may have come with no lock held: then nothing runs here
                while request.commit is None and request.error is None:
                    self._lead_batch(self._next_batch(group), request)
                    led = True
                # Other processes' requests still queued: lead a little longer. The
                # next leader would first re-read Git's index, which this one keeps
                # (~50 ms at 50k files); this writer's caller waits at most _LINGER more.
                until = time.monotonic() + _LINGER
                while led and spool.enabled() and time.monotonic() < until and spool.waiting(self.staging.queue_dir):
                    time.sleep(_SETTLE)  # let the writers just answered queue their next requests too
                    batch = self._next_batch(group)
                    if not batch:
                        break
                    try:
                        # Other processes' requests carry no hook: this writer's own updates the shared cache.
                        self._lead_batch(batch, None, after)
                    except Exception as err:  # noqa: BLE001 - theirs: answered to them; this write is done
                        log.warning("a batch of queued writes failed (%s); their writers were told", err)
                        break
        except BaseException as err:
            if request.commit is None and request.error is None:
                request.error = err
            raise
        finally:
            with group.lock:
                if request in group.pending:
                    group.pending.remove(request)
                if group.pending:
                    group.pending[0].woken.set()  # hand the lead to the oldest waiting writer
                else:
                    group.leading = False
        if request.error is not None:
            raise request.error
        assert request.commit is not None
        return request.commit

    def _next_batch(self, group: Group) -> list[Request]:
        """Take the next batch: this process's waiting writers and the queued requests of others."""
        remote = spool.claim(self.staging.queue_dir, limit=_MAX_BATCH) if spool.enabled() else []
        with group.lock:
            batch, rest = take_batch(group.pending + remote)
            group.pending = [r for r in rest if r.remote is None]
        for r in rest:
            if r.remote is not None:
                spool.unclaim(self.staging.queue_dir, r)
        return batch

    def _lead_batch(self, batch: list[Request], own: Request | None,
                    after: AfterHook | None = None) -> None:
        """Commit a batch, run one ``after`` hook for it, and wake its writers (all but ``own``).

        ``after`` is the hook to run when no request of the batch brings one
        (a lingering leader's batch holds only other processes' requests).
        """
        try:
            base = self.commit_batch(batch)
            done = [r for r in batch if r.commit is not None]
            hook = next((r.after for r in done if r.after is not None), after)
            if done and hook is not None:
                # One cache update for the whole batch: every Vault of this folder
                # shares the cache file (the hook never raises).
                hook(batch_tip(batch), [c.path for r in done for c in r.changes], base,
                     blobs={str(c.path): str(r.blobs[tuple(c.path.parts)]) for r in done for c in r.changes})
        except BaseException as err:
            for r in batch:
                if r.commit is None and r.error is None:
                    r.error = err
            raise
        finally:
            for r in batch:
                if r.remote is not None:
                    spool.answer(self.staging.queue_dir, r)
                elif r is not own:
                    r.woken.set()
        self._tidy_packs()  # its writers are answered

    def commit_batch(self, batch: Sequence[Request]) -> str | None:
        """Commit each request as its own commit, chained on the branch tip, with one flush and one ref move.

        Returns the tip the chain was built on.

        The caller holds ``write_lock``. A request that fails its own checks
        gets ``error`` set and the rest go on; an error that hits the whole
        batch (the branch cannot be moved, Git fails) is raised, with every
        file written by the batch put back.
        """
        ref = self.reader.head_ref()
        self.guards.check_writable()
        self.guards.check_signing()
        self.guards.sweep_leftovers()
        live: list[Request] = []
        for r in batch:
            try:
                self.guards.check_request(r)  # the same checks for this process's writes and the queue's
            except AmError as err:
                r.error = err
            else:
                live.append(r)
        heal = self.guards.to_heal()  # index entries an earlier write was killed or blocked before setting
        # The pack of the batch's objects and its files are flushed with one syncfs
        # per batch instead of an fsync (and a folder fsync) each, as git's
        # core.fsyncMethod=batch does: the branch moves only after syncfs returned,
        # and the ref itself is fsynced. Without syncfs (not Linux) every file is
        # fsynced. The objects go to memory first, then to one pack (am/git/formats/packs.py).
        libgit2_only = plain()  # AM_GIT_WRITER=libgit2: no Git format written by am (am/git/write/plain.py)
        sync_each = common._syncfs is None or libgit2_only
        objects = self.staging.batch_objects()
        objects.sink.clear()  # left by a batch that failed before its pack was written
        odb = self.repo if libgit2_only else objects.repo
        for r in live:
            r.blobs = {tuple(c.path.parts): blob_of(c, odb, objects.sink.ahead) for c in r.changes}
        failpoint("before-write")
        written: list[Request] = []
        committed = False
        files_done = False
        try:
            for _attempt in range(_MAX_CAS_RETRIES):
                tip = self.reader.branch_tip(ref)
                base_tree = None if tip is None else odb[tip].peel(pygit2.Tree)
                index, kept = self.staging.read_index(), self.staging.process_group().trees
                for r in list(live):
                    try:
                        # Requests of one batch touch disjoint paths (see take_batch): each checked as if alone.
                        allowed = self.guards.check_not_dirty(r.changes, base_tree, index, odb=odb, kept=kept)
                    except AmError as err:
                        r.error = err
                        live.remove(r)
                        if r in written:
                            self.worktree.roll_back(r.changes, r.previous)
                            written.remove(r)
                        continue
                    if r not in written:
                        r.previous = {c.path: self.worktree.read_or_none(c.path) for c in r.changes}
                        written.append(r)
                        try:
                            for c, ok in zip(r.changes, allowed):
                                self.worktree.write_file(c.path, c.data, sync=sync_each, allowed=ok)
                        except AmError as err:  # e.g. a symbolic link on its path: this request only
                            r.error = err
                            live.remove(r)
                            written.remove(r)
                            self.worktree.roll_back(r.changes, r.previous)
                if not live:
                    if heal:
                        self._heal_now(heal)
                    return None
                if not files_done:
                    files_done = True
                    failpoint("after-file")
                try:
                    if libgit2_only:
                        outcomes, staged = self.plain_writer.write_chain(ref, live, base_tree, tip, heal)
                    else:
                        outcomes, staged = self._write_chain(ref, live, base_tree, tip, sync_each, heal)
                except _Moved:
                    continue
                committed = True
                for r, outcome in zip(live, outcomes):
                    if isinstance(outcome, AmError):
                        r.error = outcome
                        self.worktree.roll_back(r.changes, r.previous)  # its tree could not be built
                    else:
                        r.commit = str(outcome)
                done = [r for r in live if r.commit is not None]
                if not done:
                    return None
                failpoint("after-commit")
                ours = [(c.path, r.blobs[tuple(c.path.parts)]) for r in done for c in r.changes]
                try:
                    mine = dict(ours)
                    self.staging.finish_index(staged, ours + [h for h in heal if h[0] not in mine], ref=ref,
                                              modes={p: m for p, m in self.guards.heal_modes.items()
                                                     if PurePosixPath(p) not in mine} or None)
                    inflight.clear(self.staging.am_dir)
                except (AmError, OSError) as err:
                    # The writes are committed and durable: reported as done, never as failed (a retry
                    # would write them twice). Only Git's index lags; the next write sets it (coord/inflight.py).
                    log.warning("committed %s, but Git's index was not updated (%s); the next write or "
                                "am doctor --fix sets it", done[-1].commit[:10] if done[-1].commit else "", err)
                failpoint("after-index")
                return tip
            raise GitError(f"could not move {ref}: it kept changing under am")
        except BaseException:
            self.staging.let_go_index_lock()
            if not committed:
                for r in written:
                    self.worktree.roll_back(r.changes, r.previous)
            raise

    def _write_chain(self, ref: str, live: list[Request], base_tree: pygit2.Tree | None, tip: str | None,
                     sync_each: bool, heal: Sequence[tuple[PurePosixPath, pygit2.Oid]] = (),
                     ) -> tuple[list[pygit2.Oid | AmError], StagedIndex | None]:
        """Write one commit per request, each on the previous, as one pack; flush it, then move the branch to the last.

        Returns each request's commit, or the error that kept it out (a file
        where its path needs a folder; the chain goes on without it), and Git's
        index with the chain's entries staged: written before the flush, so the
        one syncfs covers it too, and renamed into place once the branch moved.
        """
        # Git's index is staged first, with every request's entries, and its
        # flush started: at 50k files it is 5.6 MB, which the disk writes while
        # the commits are built. A request whose tree cannot be built is rare;
        # then the index is staged again without it.
        entries = [(c.path, r.blobs[tuple(c.path.parts)]) for r in live for c in r.changes]
        mine = {p for p, _ in entries}
        entries += [h for h in heal if h[0] not in mine]
        # A killed sync's executables and links keep their modes (a file this batch writes is 100644).
        modes = {p: m for p, m in self.guards.heal_modes.items() if PurePosixPath(p) not in mine} or None
        staged = self.staging.stage_index(entries, sync=sync_each, early=not sync_each, modes=modes)
        objects = self.staging.batch_objects()
        outcomes: list[pygit2.Oid | AmError] = []
        parent = tip
        tree: pygit2.Oid | None = None if base_tree is None else base_tree.id
        trees = ChainTrees(objects.repo, sink=objects.sink, kept=self.staging.process_group().trees)
        subjects = []
        pending: packs.PendingPack | None = None
        try:
            for r in live:
                try:
                    tree = trees.build(tree, r.blobs)
                except ConflictError as err:
                    outcomes.append(err)
                    continue
                parents = [] if parent is None else [pygit2.Oid(hex=parent)]
                oid = objects.repo.create_commit(None, pygit2.Signature(*r.author),
                                                 pygit2.Signature(*(r.committer or r.author)), r.message, tree,
                                                 parents)
                outcomes.append(oid)
                parent = str(oid)
                subjects.append(r.message.split("\n", 1)[0])
            if any(isinstance(o, AmError) for o in outcomes):
                self.staging.drop_staged(staged)
                staged = None
                if parent is None or parent == tip:
                    return outcomes, None  # every request failed its tree: nothing to move
                entries = [(c.path, r.blobs[tuple(c.path.parts)]) for r, o in zip(live, outcomes)
                           if not isinstance(o, AmError) for c in r.changes]
                mine = {p for p, _ in entries}
                entries += [h for h in heal if h[0] not in mine]
                staged = self.staging.stage_index(entries, sync=sync_each, early=not sync_each, modes=modes)
        except BaseException:
            self.staging.drop_staged(staged)
            raise
        assert parent is not None  # at least one commit was made (checked above)
        for r, o in zip(live, outcomes):
            if r.remote is not None and not isinstance(o, AmError):
                spool.answer_pending(self.staging.queue_dir, r, str(o))
        try:
            # Noted before the move: a write killed after it (or whose index.lock is held) is
            # finished by the next one, and a branch lock it leaves is known as a dead am's.
            inflight.write(self.staging.am_dir, ref, parent, [(p, str(o)) for p, o in entries])
            taken, bases = objects.sink.take()
            pending = packs.stage_pack(objects.pack_dir, taken, sync=sync_each, bases=bases)
            failpoint("after-objects")
            if not sync_each:
                self.staging.sync_filesystems()
            # Git's index lock first (as git commit takes it): a git command holding it past the wait
            # fails the write here, before the pack is in place, and nothing of the batch is left.
            self.staging.lock_index_for_move()
            # Like git's core.fsyncMethod=batch: flushed under temporary names, then renamed into place.
            pending.install(sync=sync_each)
            pending = None
            reflog = "commit: " + subjects[-1]
            if len(subjects) > 1:
                reflog = f"commit (am group of {len(subjects)}): " + subjects[-1]
            self.staging.move_ref(ref, tip, pygit2.Oid(hex=parent), reflog)
        except BaseException:
            self.staging.let_go_index_lock()
            if pending is not None:
                pending.discard()
            self.staging.drop_staged(staged)
            raise
        return outcomes, staged

    def _heal_now(self, heal: Sequence[tuple[PurePosixPath, pygit2.Oid]]) -> None:
        """Set the index entries an unfinished write left out, in a batch that commits nothing itself."""
        try:
            self.staging.update_index(heal, modes=self.guards.heal_modes)
            inflight.clear(self.staging.am_dir)
        except (AmError, OSError) as err:
            log.warning("could not set Git's index entries an unfinished write left out (%s)", err)

    def _tidy_packs(self) -> None:
        """Merge small packs if enough have piled up (the write lock is held, so no other am process merges too).

        Deciding costs a listing of the pack folder and a stat a pack; a merge
        of small packs ~10 ms, once every ~8 batches.
        """
        if plain():
            return  # am writes no pack on the libgit2 path
        try:
            packs.tidy(self.staging.batch_objects().pack_dir, least=packs.TIDY_AT)
        except (OSError, ValueError) as err:
            log.warning("could not merge small pack files (%s); they stay as they are", err)

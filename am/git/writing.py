"""The write path: am's lock, Git's lock files, one compare-and-swap commit, Git's index."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

import pygit2

import am.git.common as common
import am.git.inflight as inflight
import am.git.packs as packs
import am.git.spool as spool
from am.errors import (
    AmError,
    ConflictError,
    DirtyFileError,
    GitError,
    PathTakenError,
)
from am.git.bigblob import blob_of
from am.git.common import _MAX_CAS_RETRIES, _Moved, log
from am.git.group import (
    _MAX_BATCH,
    AfterHook,
    Group,
    Request,
    Who,
    batch_tip,
    take_batch,
)
from am.git.guards import Guards, os_error
from am.git.locking import Locking
from am.git.plain import PlainWriter, plain
from am.git.reading import tree_blob_ids
from am.git.staging import IndexView, StagedIndex
from am.git.trees import ChainTrees, Kept
from am.git.values import Change, failpoint, hash_blob, hash_file

# How much longer a leader keeps committing other processes' queued requests once its own is done.
_LINGER = 0.1
_SETTLE = 0.002


class Writer(Locking, Guards, PlainWriter):
    """Writing: locks, files, trees, commits and index entries."""

    # ------------------------------------------------------------ writing

    def _check_not_dirty(self, changes: Sequence[Change], base_tree: pygit2.Tree | None, index: IndexView, *,
                         odb: pygit2.Repository | None = None, kept: Kept | None = None) -> list[frozenset[str | None]]:
        """Raise if a file to be written carries someone else's change; return each file's allowed blob ids.

        What may be on disk is the tip's version or the new one (a retried
        write); ``_write_file`` checks that again under its replace.
        """
        allowed: list[frozenset[str | None]] = []
        # From the folders this process's last chain wrote when they are the tip's (an import's day folder is
        # megabytes: not parsed again), else each folder's tree found once.
        paths = [str(c.path) for c in changes]
        base_ids = {} if kept is None or base_tree is None else kept.entry_ids(base_tree.id, paths)
        base_ids.update(tree_blob_ids(odb or self.repo, base_tree, [p for p in paths if p not in base_ids], kinds=None))
        for change in changes:
            p = str(change.path)
            base_id = base_ids[p]
            if change.base is not None and base_id != change.base:
                raise ConflictError(
                    f"{p} changed in the vault while am was writing it",
                    hint="run the command again; it will start from the new version",
                )
            if change.base is None and base_id is not None and base_id != hash_blob(change.data):
                raise PathTakenError(f"{p} already exists in the vault", path=p, hint="choose another id")
            full = self.root / p
            try:
                on_disk: str | None = hash_file(full)
            except FileNotFoundError:
                on_disk = None
            except IsADirectoryError:
                raise DirtyFileError(f"{p} is a folder in the work tree") from None
            new_id = change.blob or hash_blob(change.data)
            allowed.append(frozenset((base_id, new_id)))
            if on_disk is not None and on_disk not in (base_id, new_id):
                on_disk = self._as_git_sees(full, p, on_disk)  # as git compares it, after its filters
            if on_disk not in (base_id, new_id):
                raise DirtyFileError(
                    f"{p} has uncommitted changes",
                    # git checkout -- FILE cannot discard a file no commit has.
                    hint="commit or discard them first (git add/commit or git checkout -- FILE), then retry"
                    if base_id is not None else "the file is in no commit: commit it (git add/commit) or move it "
                    "out of the vault, then retry",
                )
            staged = index.staged(p)
            if staged not in (base_id, new_id):
                raise DirtyFileError(
                    f"{p} has staged changes",
                    hint="commit them first (git commit), or unstage them (git restore --staged FILE)",
                )
        return allowed

    def _safe_target(self, rel: PurePosixPath) -> Path:
        parts, parent = rel.parts, str(self.root)
        for i in range(len(parts)):  # each folder on the way, then the file: strings, not a Path a step
            parent = f"{parent}/{parts[i]}"
            if os.path.islink(parent):
                raise DirtyFileError(f"{'/'.join(parts[:i + 1])} is a symbolic link; am will not write through it")
        return self.root / rel

    def _write_file(self, rel: PurePosixPath, data: bytes, *, sync: bool = True,
                    allowed: frozenset[str | None] | None = None) -> None:
        """Write a work-tree file atomically; with ``allowed``, only over one of those versions (see guards.py)."""
        target = self._safe_target(rel)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            self._write_new_file(rel, target, data, sync, allowed)
        except (FileExistsError, NotADirectoryError) as err:
            raise os_error(err, f"write {rel}") from None
        except OSError as err:
            if isinstance(err, (FileNotFoundError, InterruptedError)):
                raise
            raise os_error(err, f"write {rel}") from None

    def commit(self, changes: Sequence[Change], *, message: str, author: Who,
               committer: Who | None = None) -> str:
        """Write files and commit them as one commit on HEAD's branch; return the commit id.

        The caller holds ``write_lock``.
        """
        request = Request(tuple(changes), message, author, committer)
        self._commit_batch([request])
        self._tidy_packs()
        if request.error is not None:
            raise request.error
        assert request.commit is not None
        return request.commit

    def commit_grouped(self, changes: Sequence[Change], *, message: str, author: Who,
                       committer: Who | None = None, op: str = "write",
                       after: AfterHook | None = None) -> str:
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
        group = self._process_group()
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
            with self.write_lock(op=op, request=request):
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
                while led and spool.enabled() and time.monotonic() < until and spool.waiting(self._queue_dir):
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
        remote = spool.claim(self._queue_dir, limit=_MAX_BATCH) if spool.enabled() else []
        with group.lock:
            batch, rest = take_batch(group.pending + remote)
            group.pending = [r for r in rest if r.remote is None]
        for r in rest:
            if r.remote is not None:
                spool.unclaim(self._queue_dir, r)
        return batch

    def _lead_batch(self, batch: list[Request], own: Request | None,
                    after: AfterHook | None = None) -> None:
        """Commit a batch, run one ``after`` hook for it, and wake its writers (all but ``own``).

        ``after`` is the hook to run when no request of the batch brings one
        (a lingering leader's batch holds only other processes' requests).
        """
        try:
            base = self._commit_batch(batch)
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
                    spool.answer(self._queue_dir, r)
                elif r is not own:
                    r.woken.set()
        self._tidy_packs()  # its writers are answered

    def _commit_batch(self, batch: Sequence[Request]) -> str | None:
        """Commit each request as its own commit, chained on the branch tip, with one flush and one ref move.

        Returns the tip the chain was built on.

        The caller holds ``write_lock``. A request that fails its own checks
        gets ``error`` set and the rest go on; an error that hits the whole
        batch (the branch cannot be moved, Git fails) is raised, with every
        file written by the batch put back.
        """
        ref = self.head_ref()
        self._check_writable()
        self._check_signing()
        self._sweep_leftovers()
        live: list[Request] = []
        for r in batch:
            try:
                self._check_request(r)  # the same checks for this process's writes and the queue's
            except AmError as err:
                r.error = err
            else:
                live.append(r)
        heal = self._to_heal()  # index entries an earlier write was killed or blocked before setting
        # The pack of the batch's objects and its files are flushed with one syncfs
        # per batch instead of an fsync (and a folder fsync) each, as git's
        # core.fsyncMethod=batch does: the branch moves only after syncfs returned,
        # and the ref itself is fsynced. Without syncfs (not Linux) every file is
        # fsynced. The objects go to memory first, then to one pack (am/git/packs.py).
        libgit2_only = plain()  # AM_GIT_WRITER=libgit2: no Git format written by am (am/git/plain.py)
        sync_each = common._syncfs is None or libgit2_only
        objects = self._batch_objects()
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
                tip = self.branch_tip(ref)
                base_tree = None if tip is None else odb[tip].peel(pygit2.Tree)
                index, kept = self._read_index(), self._process_group().trees
                for r in list(live):
                    try:
                        # Requests of one batch touch disjoint paths (see take_batch): each checked as if alone.
                        allowed = self._check_not_dirty(r.changes, base_tree, index, odb=odb, kept=kept)
                    except AmError as err:
                        r.error = err
                        live.remove(r)
                        if r in written:
                            self._roll_back(r.changes, r.previous)
                            written.remove(r)
                        continue
                    if r not in written:
                        r.previous = {c.path: self._read_or_none(c.path) for c in r.changes}
                        written.append(r)
                        try:
                            for c, ok in zip(r.changes, allowed):
                                self._write_file(c.path, c.data, sync=sync_each, allowed=ok)
                        except AmError as err:  # e.g. a symbolic link on its path: this request only
                            r.error = err
                            live.remove(r)
                            written.remove(r)
                            self._roll_back(r.changes, r.previous)
                if not live:
                    if heal:
                        self._heal_now(heal)
                    return None
                if not files_done:
                    files_done = True
                    failpoint("after-file")
                try:
                    if libgit2_only:
                        outcomes, staged = self._write_chain_plain(ref, live, base_tree, tip, heal)
                    else:
                        outcomes, staged = self._write_chain(ref, live, base_tree, tip, sync_each, heal)
                except _Moved:
                    continue
                committed = True
                for r, outcome in zip(live, outcomes):
                    if isinstance(outcome, AmError):
                        r.error = outcome
                        self._roll_back(r.changes, r.previous)  # its tree could not be built
                    else:
                        r.commit = str(outcome)
                done = [r for r in live if r.commit is not None]
                if not done:
                    return None
                failpoint("after-commit")
                ours = [(c.path, r.blobs[tuple(c.path.parts)]) for r in done for c in r.changes]
                try:
                    self._finish_index(staged, ours + [h for h in heal if h[0] not in dict(ours)], ref=ref)
                    inflight.clear(self._am_dir)
                except (AmError, OSError) as err:
                    # The writes are committed and durable: reported as done, never as failed (a retry
                    # would write them twice). Only Git's index lags; the next write sets it (inflight.py).
                    log.warning("committed %s, but Git's index was not updated (%s); the next write or "
                                "am doctor --fix sets it", done[-1].commit[:10] if done[-1].commit else "", err)
                failpoint("after-index")
                return tip
            raise GitError(f"could not move {ref}: it kept changing under am")
        except BaseException:
            self._let_go_index_lock()
            if not committed:
                for r in written:
                    self._roll_back(r.changes, r.previous)
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
        staged = self._stage_index(entries, sync=sync_each, early=not sync_each)
        objects = self._batch_objects()
        outcomes: list[pygit2.Oid | AmError] = []
        parent = tip
        tree: pygit2.Oid | None = None if base_tree is None else base_tree.id
        trees = ChainTrees(objects.repo, sink=objects.sink, kept=self._process_group().trees)
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
                self._drop_staged(staged)
                staged = None
                if parent is None or parent == tip:
                    return outcomes, None  # every request failed its tree: nothing to move
                entries = [(c.path, r.blobs[tuple(c.path.parts)]) for r, o in zip(live, outcomes)
                           if not isinstance(o, AmError) for c in r.changes]
                mine = {p for p, _ in entries}
                entries += [h for h in heal if h[0] not in mine]
                staged = self._stage_index(entries, sync=sync_each, early=not sync_each)
        except BaseException:
            self._drop_staged(staged)
            raise
        assert parent is not None  # at least one commit was made (checked above)
        for r, o in zip(live, outcomes):
            if r.remote is not None and not isinstance(o, AmError):
                spool.answer_pending(self._queue_dir, r, str(o))
        try:
            # Noted before the move: a write killed after it (or whose index.lock is held) is
            # finished by the next one, and a branch lock it leaves is known as a dead am's.
            inflight.write(self._am_dir, ref, parent, [(p, str(o)) for p, o in entries])
            taken, bases = objects.sink.take()
            pending = packs.stage_pack(objects.pack_dir, taken, sync=sync_each, bases=bases)
            failpoint("after-objects")
            if not sync_each:
                self._sync_filesystems()
            # Like git's core.fsyncMethod=batch: flushed under temporary names, then renamed into place.
            pending.install(sync=sync_each)
            pending = None
            reflog = "commit: " + subjects[-1]
            if len(subjects) > 1:
                reflog = f"commit (am group of {len(subjects)}): " + subjects[-1]
            self._lock_index_for_move()
            self._move_ref(ref, tip, pygit2.Oid(hex=parent), reflog)
        except BaseException:
            self._let_go_index_lock()
            if pending is not None:
                pending.discard()
            self._drop_staged(staged)
            raise
        return outcomes, staged

    def _heal_now(self, heal: Sequence[tuple[PurePosixPath, pygit2.Oid]]) -> None:
        """Set the index entries an unfinished write left out, in a batch that commits nothing itself."""
        try:
            self._update_index(heal)
            inflight.clear(self._am_dir)
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
            packs.tidy(self._batch_objects().pack_dir, least=packs.TIDY_AT)
        except (OSError, ValueError) as err:
            log.warning("could not merge small pack files (%s); they stay as they are", err)

    def _drop_staged(self, staged: StagedIndex | None) -> None:
        """Throw away a staged index that will not be installed (the kept copy has its entries: forget it)."""
        self._index_kept = None
        if staged is not None:
            staged.tmp.unlink(missing_ok=True)

    def _read_or_none(self, rel: PurePosixPath) -> bytes | None:
        try:
            return (self.root / rel).read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            return None

    def _roll_back(self, changes: Sequence[Change], previous: dict[PurePosixPath, bytes | None]) -> None:
        """Put back the work-tree files of a write that failed before its commit (only if still ours)."""
        for c in changes:
            if self._read_or_none(c.path) != c.data or c.path not in previous:
                continue
            before = previous[c.path]
            # Checked as any write is: a person's edit that reaches the file meanwhile is kept.
            try:
                if before is None:
                    self._remove_checked(c.path, self._safe_target(c.path), c.data)
                else:
                    self._write_file(c.path, before, allowed=frozenset((hash_blob(c.data),)))
            except DirtyFileError:
                log.info("%s was edited while am put it back after a failed write; the edit is kept", c.path)
            except (OSError, AmError) as err:
                log.warning("could not put back %s after a failed write: %s", c.path, err)

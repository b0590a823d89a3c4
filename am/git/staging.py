"""Git's index, lock files and branch moves for the write path (am's own index writer; libgit2 for other formats).

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import ctypes
import errno
import os
import queue
import shutil
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol

import pygit2

import am.git.common as common
import am.git.coord.asidelocks as asidelocks
import am.git.coord.inflight as inflight
import am.git.formats.packs as packs
from am.errors import AmError, GitError, LockTimeoutError, storage_error
from am.git.common import _Moved, _StatEntry, log
from am.git.formats.gitindex import GitIndex, IndexUnsupported
from am.git.coord.group import Group, group_for
from am.git.reading import Reader, tree_blob_ids
from am.git.values import failpoint, worktree_blob_id

# An index at least this large is freed off the write path (see _install_staged).
_FREE_LATER = 1 << 20
_closer: tuple[int, queue.SimpleQueue[int]] | None = None  # (pid, queue of the closing thread)
_closer_lock = threading.Lock()


def _close_later(fd: int) -> None:
    """Close ``fd`` on a helper thread of this process (started on first use)."""
    global _closer
    with _closer_lock:
        if _closer is None or _closer[0] != os.getpid():  # a forked child has no such thread
            fds: queue.SimpleQueue[int] = queue.SimpleQueue()

            def close_each() -> None:
                while True:
                    os.close(fds.get())

            threading.Thread(target=close_each, name="am-free-index", daemon=True).start()
            _closer = (os.getpid(), fds)
        _closer[1].put(fd)


def _previous(kept: tuple[tuple[int, int, int, int] | None, GitIndex] | None) -> tuple[GitIndex, int] | None:
    """The index this process read or wrote last and its file's time, for a new read to take unchanged entries from."""
    if kept is None or kept[0] is None:
        return None
    return kept[1], kept[0][2]


def _refuse_format(err: IndexUnsupported) -> None:
    """Raise a clear error for an index format neither am's writer nor libgit2 can update."""
    if "b'link'" in str(err):
        raise GitError("Git's index is a split index (core.splitIndex), which am cannot update",
                       hint="turn it off: git config core.splitIndex false && git update-index --no-split-index")
    if "b'sdir'" in str(err):
        raise GitError("Git's index is a sparse index (index.sparse), which am cannot update",
                       hint="turn it off: git sparse-checkout init --no-sparse-index (the sparse checkout stays)")


class IndexView(Protocol):
    def staged(self, path: str) -> str | None: ...


class _Libgit2Index:
    """libgit2's reading of an index format am's own reader leaves alone."""

    def __init__(self, index: pygit2.Index) -> None:
        self.index = index

    def staged(self, path: str) -> str | None:
        """Return the blob id staged for ``path``, or None."""
        return str(self.index[path].id) if path in self.index else None


@dataclass
class StagedIndex:
    """An index written to am's temporary file, waiting to be renamed over `.git/index`."""

    index: GitIndex
    tmp: Path
    base: tuple[int, int, int, int] | None  # the stamp of the .git/index it was built from
    entries: tuple[tuple[PurePosixPath, pygit2.Oid], ...]
    removed: tuple[PurePosixPath, ...]
    modes: Mapping[str, int] | None = None  # Git's modes of the entries that are not 100644 files


class Staging:
    """Git's index entries, lock files and branch moves, shared by the write and repair paths.

    Holds what the writers of this store share between two calls: the process's group (group
    commit, kept index and trees), the batch's second handle on the object store, and Git's
    index lock while a branch move holds it.
    """

    def __init__(self, reader: Reader) -> None:
        self.reader = reader
        self.repo = reader.repo
        self.root = reader.root
        self.gitdir = reader.gitdir
        self.am_dir = self.gitdir / "am"
        self._group: Group | None = None  # the process's group-commit queue and kept index for this repository
        self._objects: packs.BatchObjects | None = None  # the second handle whose new objects become one pack a batch
        self._index_lock_held: Path | None = None  # Git's index lock, taken before a branch move

    @property
    def queue_dir(self) -> Path:
        """Where writers of other processes leave their requests (am/git/coord/spool.py)."""
        return self.am_dir / "queue"

    def process_group(self) -> Group:
        """What the writers of this process share for this repository (group commit, kept index and trees)."""
        if self._group is None:
            self._group = group_for(self.gitdir)
        return self._group

    @property
    def index_kept(self) -> tuple[tuple[int, int, int, int] | None, GitIndex] | None:
        """The GitIndex am wrote .git/index from last, in this process (read and replaced holding the write lock)."""
        return self.process_group().kept

    @index_kept.setter
    def index_kept(self, value: tuple[tuple[int, int, int, int] | None, GitIndex] | None) -> None:
        self.process_group().kept = value

    def clear_stale_git_lock(self, lock: Path) -> bool:
        """Move a git lock file aside if it is stale or left by a dead am process; return whether it is gone.

        A lock an am process that is gone made (or the branch lock of the move
        it noted, see am/git/coord/inflight.py) goes at once; anyone else's only
        once it is older than the stale limit.
        """
        try:
            age = time.time() - lock.stat().st_mtime
        except FileNotFoundError:
            return True
        except OSError:
            return False
        dead_am = inflight.owned_by_dead_am(lock, inflight.read(self.am_dir))
        if age < common._GIT_LOCK_STALE and not dead_am:
            return False
        target = asidelocks.move_aside(self.am_dir, lock)  # pruned there: the last 50, none past 30 days
        if target is None:
            return True
        if dead_am:
            log.warning("moved aside a Git lock left by a killed am process: %s -> %s", lock, target)
        else:
            log.warning("moved a stale Git lock aside (%.0f s old): %s -> %s", age, lock, target)
        return True

    def wait_git_lock(self, lock: Path, deadline: float, *, error: BaseException | None = None) -> None:
        """Wait a little for a Git lock file to go; past ``deadline`` raise, naming the lock (or Git's own error).

        Every call sleeps, so a caller's retry loop never spins; a lock that
        is not there while Git still cannot take it (a folder it cannot write)
        ends in Git's own message at the deadline, not in a wait for ever.
        """
        gone = self.clear_stale_git_lock(lock)
        if time.monotonic() >= deadline:
            if gone and error is not None:
                raise GitError(f"could not take Git's lock {lock}: {error}",
                               hint="check that Git's folder is writable (permissions, a read-only or "
                                    "immutable file system)")
            raise LockTimeoutError(
                f"Git's lock file {lock} is held",
                hint="another git command is running; if none is, remove that file",
            )
        time.sleep(0.001 if gone else 0.005)

    def ref_lock(self, ref: str) -> Path:
        """Return the lock file of a ref: in the common Git folder for a branch, also from a linked worktree."""
        if ref.startswith("refs/") and not ref.startswith(("refs/bisect/", "refs/worktree/", "refs/rewritten/")):
            return self.reader.common_dir() / (ref + ".lock")
        return self.gitdir / (ref + ".lock")

    def read_index(self) -> IndexView:
        """Return Git's index, read afresh (or the one am wrote last, if it is still on disk); retry a torn read.

        libgit2 takes the index file's size with stat() and then reads it, so
        a `git add` replacing the file in between gives "extension is
        truncated" or "could not read"; 16 writers racing a `git commit` loop
        hit it. The file itself is always whole (git renames it into place).
        """
        kept = self.index_kept
        if kept is not None and kept[0] == self._index_stamp():
            return kept[1]  # the index am wrote last is still the one on disk
        for attempt in range(50):
            try:
                stamp = self._index_stamp()
                index = GitIndex.read(self.gitdir / "index", previous=_previous(kept))[0]
                if stamp is not None and self._index_stamp() == stamp:
                    self.index_kept = (stamp, index)  # the index write that follows need not parse it again
                return index
            except IndexUnsupported as err:
                _refuse_format(err)
                break
            except (ValueError, OSError) as err:
                if attempt == 49:
                    raise GitError(f"could not read Git's index {self.gitdir / 'index'}: {err}",
                                   hint="run: am doctor --fix (it rebuilds the index from HEAD)") from None
                time.sleep(0.002)
        for attempt in range(50):  # a format am's reader leaves to libgit2
            try:
                index = self.repo.index
                index.read(attempt > 0)
                return _Libgit2Index(index)
            except (pygit2.GitError, OSError) as err:
                if attempt == 49:
                    raise GitError(f"could not read Git's index {self.gitdir / 'index'}: {err}",
                                   hint="run: am doctor --fix (it rebuilds the index from HEAD)") from None
                time.sleep(0.002)
        raise AssertionError("unreachable")

    def lock_index(self) -> Path:
        """Take `.git/index.lock` as git does (O_EXCL), waiting for a running git command; return its path."""
        lock = self.gitdir / "index.lock"
        deadline = time.monotonic() + common._GIT_LOCK_WAIT
        while True:
            try:
                fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                try:
                    os.write(fd, inflight.lock_mark())  # git never reads it; am knows a killed writer's lock by it
                finally:
                    os.close(fd)
                return lock
            except FileExistsError:
                self.wait_git_lock(lock, deadline)

    def lock_index_for_move(self) -> None:
        """Take `.git/index.lock` before the branch moves, held until Git's index has the new entries.

        As `git commit` does: a person's `git commit` reads HEAD first and
        then takes the index lock, so without this it could land between
        am's branch move and am's index update and commit the old index on
        top of am's commit, deleting am's new files from the branch. If a git
        command keeps the lock past the wait (``AM_GIT_LOCK_WAIT``), the
        branch does not move: am never moves a branch it cannot also record
        in Git's index. A branch moved under a stale index loses the write to
        the next ``git commit -a``, and a ``git merge`` holding the lock fails
        its own ref update and leaves MERGE_HEAD (issue 36).
        """
        try:
            self._index_lock_held = self.lock_index()
        except LockTimeoutError:
            self._index_lock_held = None
            lock = self.gitdir / "index.lock"
            holder = git_lock_holder(self.root)
            raise LockTimeoutError(
                f"Git's index lock {lock} is held{holder or ' by a running git command'} for more than "
                f"{common._GIT_LOCK_WAIT:g} s; nothing was changed (am moves a branch only together with Git's "
                f"index)",
                hint="run the command again once that git command is done; if none is running, remove "
                     f"{lock}",
            ) from None

    def let_go_index_lock(self) -> None:
        """Let go of an index lock taken for a branch move that did not happen (or whose index update was skipped)."""
        lock, self._index_lock_held = self._index_lock_held, None
        if lock is not None:
            lock.unlink(missing_ok=True)

    def stage_index(self, entries: Sequence[tuple[PurePosixPath, pygit2.Oid]],
                     removed: Sequence[PurePosixPath] = (), *, sync: bool = True,
                     early: bool = False, modes: Mapping[str, int] | None = None) -> StagedIndex | None:
        """Write the index with these entries set to am's temporary file; None if its format is libgit2's to write.

        The caller installs it with ``_install_staged`` (under index.lock); if
        `.git/index` changed in the meantime the entries are set again on the
        new file. ``sync=False`` leaves the flush to the caller's syncfs;
        ``early`` starts it at once, so the disk writes the file while the caller works on.
        ``modes``: Git's mode of each entry that is not a 100644 file (a sync's executables and symbolic links).
        """
        index_path = self.gitdir / "index"
        # One name per process: threads stage the index only holding the write lock.
        tmp = self.am_dir / f"index.{os.getpid()}.tmp"
        kept = self.index_kept
        stamp = self._index_stamp()
        # If .git/index is still the file am wrote last, the GitIndex kept from then is current.
        self.index_kept = None  # changed below: kept again only once installed
        if kept is not None and kept[0] == stamp and stamp is not None:
            index, replaced_mtime = kept[1], stamp[2]
        else:
            try:
                index, replaced_mtime = GitIndex.read(index_path, previous=_previous(kept))
            except IndexUnsupported as err:
                _refuse_format(err)
                return None
            except ValueError as err:
                raise GitError(f"could not read Git's index {index_path}: {err}",
                               hint="run: am doctor --fix (it rebuilds the index from HEAD)") from None
        index.smudge_racy(self.root, replaced_mtime)
        root = f"{self.root}/"
        if modes:
            index.set_many([(str(rel), oid.raw, os.lstat(root + str(rel))) for rel, oid in entries], modes=modes)
        else:
            index.set_many([(str(rel), oid.raw, os.stat(root + str(rel))) for rel, oid in entries])
        for rel in removed:
            index.remove(str(rel))
        try:
            index.write(tmp, sync=sync, early=common.start_writeback if early else None)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return StagedIndex(index, tmp, stamp, tuple(entries), tuple(removed), modes)

    def _install_staged(self, staged: StagedIndex) -> None:
        """Rename a staged index over `.git/index`; the caller holds `.git/index.lock`."""
        if self._index_stamp() != staged.base:
            # Someone (git add, git commit) replaced the index after am staged
            # it: set the entries again on theirs. Holding the lock, it cannot change again.
            staged.tmp.unlink(missing_ok=True)
            again = self.stage_index(staged.entries, staged.removed, modes=staged.modes)
            if again is None:
                self._update_index_libgit2(staged.entries, staged.removed, staged.tmp, modes=staged.modes)
                return
            staged = again
        index_path = self.gitdir / "index"
        # Replacing the last name of a large file frees its blocks inside the
        # rename (~2 ms for 5 MB). Held open, the old file is freed when the
        # helper thread closes it, while the writers are already told.
        held = None
        try:
            held = os.open(index_path, os.O_RDONLY)
            if os.fstat(held).st_size < _FREE_LATER:
                os.close(held)
                held = None
        except FileNotFoundError:
            pass
        try:
            os.replace(staged.tmp, index_path)
        finally:
            if held is not None:
                _close_later(held)
        self.index_kept = (self._index_stamp(), staged.index)

    def finish_index(self, staged: StagedIndex | None, entries: Sequence[tuple[PurePosixPath, pygit2.Oid]],
                      removed: Sequence[PurePosixPath] = (), *, ref: str | None = None,
                      modes: Mapping[str, int] | None = None) -> None:
        """Install a staged index under `.git/index.lock` (None: set the entries through libgit2 there).

        With ``ref`` (the branch the entries were committed on), nothing is
        staged if HEAD is no longer on it: a checkout while am was writing
        made the index another branch's. A checkout that wrote its index
        before am took the lock but moved HEAD only after is caught once the
        lock is let go: the entries are then set back to what HEAD has.
        """
        tmp = self.am_dir / f"index.{os.getpid()}.tmp"
        lock, self._index_lock_held = self._index_lock_held, None
        try:
            if lock is None:
                lock = self.lock_index()
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        installed = False
        try:
            failpoint("index-locked")
            if ref is not None and self.head_branch() != ref:
                log.warning("HEAD left %s while am was committing on it; Git's index is left to the branch "
                            "checked out now", ref)
                tmp.unlink(missing_ok=True)
                self.index_kept = None
            elif staged is None:
                self._update_index_libgit2(entries, removed, tmp, modes=modes)  # a format am's writer leaves alone
                installed = True
            else:
                self._install_staged(staged)
                installed = True
        except BaseException:
            self.index_kept = None
            tmp.unlink(missing_ok=True)
            raise
        finally:
            lock.unlink(missing_ok=True)
        if installed and ref is not None and self.head_branch() != ref:
            self._restage_to_head([p for p, _ in entries], dict(entries))

    def head_branch(self) -> str | None:
        """Return HEAD's branch now, or None when HEAD is detached or unreadable."""
        try:
            return self.reader.head_ref()
        except (AmError, pygit2.GitError, KeyError):
            return None

    def _restage_to_head(self, paths: Sequence[PurePosixPath], ours: dict[PurePosixPath, pygit2.Oid]) -> None:
        """Make Git's index agree with HEAD for these paths (HEAD moved to another branch while am wrote).

        An entry set back takes HEAD's mode with HEAD's blob: an executable stays 100755, a link 120000.
        """
        head = self.reader.head()
        tree = None if head is None else self.repo[head].peel(pygit2.Tree)
        index = self.read_index()
        modes: dict[str, int] = {}
        blobs = tree_blob_ids(self.repo, tree, [str(p) for p in paths], modes=modes)
        entries: list[tuple[PurePosixPath, pygit2.Oid]] = []
        removed: list[PurePosixPath] = []
        root = f"{self.root}/"
        for p in paths:
            blob = blobs[str(p)]
            staged = index.staged(str(p))
            if blob is None:
                if staged is not None and staged == str(ours.get(p)):
                    removed.append(p)
            elif staged != blob and worktree_blob_id(root + str(p)) == blob:
                entries.append((p, pygit2.Oid(hex=blob)))
        if entries or removed:
            self.update_index(entries, removed, modes={str(p): modes[str(p)] for p, _ in entries if str(p) in modes})

    def update_index(self, entries: Sequence[tuple[PurePosixPath, pygit2.Oid]],
                      removed: Sequence[PurePosixPath] = (), *, modes: Mapping[str, int] | None = None) -> None:
        """Set Git's index entries for these paths, holding index.lock as git does (for repairs and late fixes).

        ``modes``: Git's mode of each entry that is not a 100644 file (HEAD's, for an entry set back to HEAD).
        """
        modes = modes or None
        self.finish_index(self.stage_index(entries, removed, modes=modes), entries, removed, modes=modes)

    def _update_index_libgit2(self, entries: Sequence[tuple[PurePosixPath, pygit2.Oid]],
                              removed: Sequence[PurePosixPath], tmp: Path, *,
                              modes: Mapping[str, int] | None = None) -> None:
        """Set the entries through libgit2: for index formats am's own writer leaves alone (see formats/gitindex.py)."""
        index_path = self.gitdir / "index"
        try:
            shutil.copyfile(index_path, tmp)
        except FileNotFoundError:  # a repository whose index git has not written yet
            tmp.unlink(missing_ok=True)
        index = pygit2.Index(str(tmp))
        for rel, oid in entries:
            mode = modes.get(str(rel)) if modes else None
            if mode is None:
                index.add(_StatEntry(str(rel), oid, (self.root / rel).stat()))
            else:
                index.add(_StatEntry(str(rel), oid, (self.root / rel).lstat(), mode=mode))
        for rel in removed:
            if str(rel) in index:
                index.remove(str(rel))
        index.write()  # to tmp, fsynced by libgit2 (enable_fsync_gitdir)
        os.replace(tmp, index_path)

    def drop_staged(self, staged: StagedIndex | None) -> None:
        """Throw away a staged index that will not be installed (the kept copy has its entries: forget it)."""
        self.index_kept = None
        if staged is not None:
            staged.tmp.unlink(missing_ok=True)

    def _index_stamp(self) -> tuple[int, int, int, int] | None:
        """Return what tells one index file from another: inode, size, mtime and ctime."""
        try:
            st = (self.gitdir / "index").stat()
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def batch_objects(self) -> packs.BatchObjects:
        """This store's second handle on the repository, whose new objects are kept for one pack a batch."""
        if self._objects is None:
            self._objects = packs.open_batch_repo(self.gitdir)
        return self._objects

    # ------------------------------------------------------------ the branch

    def move_ref(self, ref: str, tip: str | None, oid: pygit2.Oid, reflog: str) -> None:
        """Move the branch from ``tip`` to ``oid`` by compare-and-swap; raise _Moved if it is no longer at ``tip``."""
        lock = self.ref_lock(ref)
        # libgit2 appends the reflog lines before it renames the lock into place: a move that fails takes them back,
        # or the reflog names a commit the branch never had, and doctor --fix would bring back a failed write.
        logs = [Path(str(lock)[: -len(ref + ".lock")]) / "logs" / ref, self.gitdir / "logs" / "HEAD"]
        sizes = [p.stat().st_size if p.is_file() else None for p in logs]
        try:
            self._move_ref_once(ref, tip, oid, reflog, lock)
        except BaseException:
            for path, size in zip(logs, sizes):
                _take_back_reflog(path, size, str(oid))
            try:
                moved = self.reader.branch_tip(ref) == str(oid)
            except (pygit2.GitError, ValueError, OSError):
                moved = True  # cannot tell: noted as nothing, recover lists it as before
            if not moved:  # its commits are in the object database, never on the branch
                inflight.note_failed_move(self.am_dir, str(oid), tip)
            raise

    def _move_ref_once(self, ref: str, tip: str | None, oid: pygit2.Oid, reflog: str, lock: Path) -> None:
        deadline = time.monotonic() + common._GIT_LOCK_WAIT
        while True:
            try:
                if tip is None:
                    self.repo.create_reference_direct(ref, oid, False, message=reflog)
                else:
                    current = self.repo.references.get(ref)
                    if current is None or str(current.target) != tip:
                        raise _Moved()
                    # set_target is a compare-and-swap against the value just looked up.
                    current.set_target(oid, reflog)
                return
            except (pygit2.AlreadyExistsError, ValueError):
                raise _Moved() from None
            except (pygit2.GitError, OSError) as err:
                if "does not match" in str(err) or self.reader.branch_tip(ref) != tip:
                    raise _Moved() from None
                for code in (errno.ENOSPC, errno.EDQUOT, errno.EIO):  # libgit2 words the errno; name the fix
                    if os.strerror(code) in str(err):
                        raise storage_error(OSError(code, os.strerror(code)), f"move {ref}") from None
                if "lock" not in str(err):
                    raise GitError(f"could not move {ref}: {err}") from None
                self.wait_git_lock(lock, deadline, error=err)

    def sync_filesystems(self) -> None:
        """Flush the file systems of the work tree and the Git directory (one syncfs each)."""
        assert common._syncfs is not None
        # One call per file system: the work tree and .git are usually on the same one.
        objects = self.batch_objects().pack_dir.parent
        folders = {os.stat(f).st_dev: f for f in (objects, self.root, self.am_dir)}
        for folder in folders.values():
            fd = os.open(folder, os.O_RDONLY)
            try:
                if common._syncfs(fd) != 0:
                    raise GitError(f"could not flush {folder} to disk: {os.strerror(ctypes.get_errno())}")
            finally:
                os.close(fd)


def git_lock_holder(root: Path) -> str:
    """Name the git processes working in ``root`` (" by git merge (pid 12)"), or "" (best effort, Linux's /proc).

    Git writes nothing into its lock files; a process of the git program whose
    folder is the work tree is the likely holder. Called only on a lock timeout.
    """
    found: list[str] = []
    where = os.path.realpath(root)
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return ""
    for pid in pids:
        try:
            if os.readlink(f"/proc/{pid}/cwd") != where:
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and os.path.basename(argv[0]) == b"git" and len(argv) > 1 and int(pid) != os.getpid():
            found.append(f"{b' '.join(a for a in argv[:2]).decode(errors='replace')} (pid {pid})")
    return f" by {', '.join(found[:3])}" if found else ""


def _take_back_reflog(path: Path, size: int | None, new: str) -> None:
    """Drop the lines a failed branch move appended to a reflog: the tail after ``size``, if every line is a move to ``new``."""
    try:
        with open(path, "r+b") as f:
            f.seek(size or 0)
            lines = f.read().splitlines()
            if lines and all(line.split(b" ", 2)[1:2] == [new.encode()] for line in lines):
                f.truncate(size or 0)
    except OSError:
        pass

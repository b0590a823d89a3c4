"""The only user of pygit2: the write lock, compare-and-swap commits, and reads of history.

A write follows RELIABILITY.md to the letter:

1. take am's own advisory lock (``.git/am/write.lock``), blocking with a timeout;
2. check that no file to be written carries someone's uncommitted edit;
3. write each working-tree file atomically (temp file, fsync, rename, fsync dir);
4. build the new tree from the branch tip plus exactly the changed files and
   create the commit with ``create_commit(ref, ..., parents=[tip])``, which
   libgit2 turns into a compare-and-swap; if someone else moved the branch,
   rebuild on the new tip and try again, never dropping their commit;
5. update Git's index for those paths only, holding ``index.lock`` the way git
   does, so a later ``git add -A && git commit`` keeps am's files.

Failpoints for crash tests: ``AM_FAILPOINT=<name>`` makes the process kill
itself with SIGKILL at that step (names in ``FAILPOINTS``).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import logging
import os
import shutil
import signal
import socket
import threading
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pygit2
from pygit2 import IndexEntry
from pygit2.enums import FileMode

from am.errors import ConflictError, DirtyFileError, GitError, LockTimeoutError, NotAVaultError

__all__ = [
    "FAILPOINTS",
    "Change",
    "CommitInfo",
    "GitStore",
    "hash_blob",
]

log = logging.getLogger("am")

# libgit2 ignores core.fsync; memory that a power cut can eat is no memory.
pygit2.settings.enable_fsync_gitdir(True)

FAILPOINTS = (
    "before-write",      # lock held, nothing written
    "after-file",        # working-tree file written, no commit
    "after-commit",      # commit created and branch moved, Git's index not updated
    "after-index",       # index updated, cache not yet
)

_GIT_LOCK_WAIT = float(os.environ.get("AM_GIT_LOCK_WAIT", "10"))
_GIT_LOCK_STALE = float(os.environ.get("AM_GIT_LOCK_STALE", "60"))
_MAX_CAS_RETRIES = 1000
# libgit2's fsync switch is process-wide: writers in other threads must not
# create objects while a write has it off.
_OBJECT_WRITES = threading.RLock()


@contextmanager
def _fsync_paused(active: bool) -> Iterator[None]:
    """Turn libgit2's per-object fsync off for a block whose objects are flushed by syncfs (hold _OBJECT_WRITES)."""
    if not active:
        yield
        return
    pygit2.settings.enable_fsync_gitdir(False)
    try:
        yield
    finally:
        pygit2.settings.enable_fsync_gitdir(True)


def _load_syncfs() -> Any:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.syncfs
    except (OSError, AttributeError):  # not Linux: keep an fsync per object
        return None


_syncfs = _load_syncfs()


def failpoint(name: str) -> None:
    """Kill this process at the named step when AM_FAILPOINT asks for it (crash tests)."""
    wanted = os.environ.get("AM_FAILPOINT")
    if wanted and wanted == name:
        os.kill(os.getpid(), signal.SIGKILL)


def hash_blob(data: bytes) -> str:
    """Return the Git blob id of some bytes."""
    return str(pygit2.hash(data))


@dataclass(frozen=True)
class Change:
    """One file a write puts in the tree; ``base`` is the blob it was computed from (None: new)."""

    path: PurePosixPath
    data: bytes
    base: str | None = None


@dataclass(frozen=True)
class CommitInfo:
    """A commit as am reads it."""

    id: str
    parents: tuple[str, ...]
    author: str
    email: str
    time: int
    offset: int
    message: str

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0]

    def trailers(self) -> list[tuple[str, str]]:
        """Return the (key, value) trailers of the message's last paragraph."""
        block = self.message.rstrip("\n").rsplit("\n\n", 1)[-1]
        pairs = []
        for line in block.split("\n"):
            key, sep, value = line.partition(": ")
            if sep and key and " " not in key:
                pairs.append((key, value))
        return pairs


class _StatEntry(IndexEntry):
    """An index entry that carries the file's stat data, so `git status` need not rehash it."""

    def __init__(self, path: str, object_id: pygit2.Oid, st: os.stat_result) -> None:
        super().__init__(path, object_id, FileMode.BLOB)
        self._st = st

    def _to_c(self) -> Any:
        centry, ref = super()._to_c()
        st = self._st
        centry.ctime.seconds = int(st.st_ctime) & 0xFFFFFFFF
        centry.ctime.nanoseconds = st.st_ctime_ns % 1_000_000_000
        centry.mtime.seconds = int(st.st_mtime) & 0xFFFFFFFF
        centry.mtime.nanoseconds = st.st_mtime_ns % 1_000_000_000
        centry.dev = st.st_dev & 0xFFFFFFFF
        centry.ino = st.st_ino & 0xFFFFFFFF
        centry.uid = st.st_uid & 0xFFFFFFFF
        centry.gid = st.st_gid & 0xFFFFFFFF
        centry.file_size = st.st_size & 0xFFFFFFFF
        return centry, ref


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _flock_within(fd: int, timeout: float) -> bool:
    """Take an exclusive flock on ``fd``, waiting at most ``timeout`` seconds; return whether it was taken.

    Waiting is a blocking flock in a helper thread, not polling: with polling,
    a writer that just released the lock wins it back before sleepers wake, and
    16 busy writers starved one past a 30 s timeout. The thread waits on a dup
    of ``fd`` (same open file, same lock); if we give up first, it drops its
    dup when it finally gets the lock, which releases it.
    """
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as err:
        if err.errno not in (errno.EAGAIN, errno.EACCES):
            raise
    waiter_fd = os.dup(fd)
    got = threading.Event()
    guard = threading.Lock()
    abandoned = False

    def wait() -> None:
        try:
            fcntl.flock(waiter_fd, fcntl.LOCK_EX)
        except OSError:
            os.close(waiter_fd)
            return
        with guard:
            if not abandoned:
                got.set()
        os.close(waiter_fd)  # abandoned: this was the last reference, so the lock goes with it

    threading.Thread(target=wait, name="am-write-lock", daemon=True).start()
    if got.wait(timeout):
        return True
    with guard:
        if got.is_set():
            return True
        abandoned = True
    return False


class GitStore:
    """A vault's Git repository, seen through the operations am needs."""

    def __init__(self, repo: pygit2.Repository, root: Path) -> None:
        self.repo = repo
        self.root = root
        self.gitdir = Path(repo.path)
        self._am_dir = self.gitdir / "am"
        # (stamp of .git/index, the Index am wrote it from, its temp path)
        self._index_kept: tuple[tuple[int, int, int, int] | None, pygit2.Index, Path] | None = None

    # ------------------------------------------------------------ open / init

    @classmethod
    def open(cls, root: Path) -> GitStore:
        """Open the repository whose work tree is ``root``."""
        try:
            repo = pygit2.Repository(str(root), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
        except (pygit2.GitError, KeyError):
            raise NotAVaultError(f"{root} is not a Git repository", hint="run: am init " + str(root)) from None
        if repo.is_bare or repo.workdir is None:
            raise NotAVaultError(f"{root} is a bare Git repository; a vault needs a work tree")
        return cls(repo, Path(repo.workdir).resolve())

    @classmethod
    def open_code(cls, root: Path) -> GitStore:
        """Open a code repository (work tree or bare) to read its commit graph."""
        try:
            repo = pygit2.Repository(str(root), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
        except (pygit2.GitError, KeyError):
            raise GitError(f"{root} is not a Git repository",
                           hint="give the folder of a local clone (the one holding .git)") from None
        return cls(repo, Path(repo.workdir or repo.path).resolve())

    @classmethod
    def init(cls, root: Path, *, branch: str = "main") -> GitStore:
        """Create a repository at ``root``, or open the one that is there."""
        if (root / ".git").exists():
            return cls.open(root)
        root.mkdir(parents=True, exist_ok=True)
        repo = pygit2.init_repository(str(root), initial_head=branch)
        return cls(repo, Path(repo.workdir).resolve())

    def build_commit(self, branch: str, files: dict[str, bytes], *, parents: Sequence[str], message: str,
                     author: tuple[str, str, int, int]) -> str:
        """Commit files over the first parent's tree and move ``branch`` there (for repositories am generates)."""
        base = self.repo[parents[0]].peel(pygit2.Tree) if parents else None
        blobs = {tuple(PurePosixPath(p).parts): self.repo.create_blob(d) for p, d in files.items()}
        sig = pygit2.Signature(*author)
        oid = self.repo.create_commit(None, sig, sig, message, self._build_tree(base, blobs),
                                      [pygit2.Oid(hex=p) for p in parents])
        ref = self.repo.references.get(f"refs/heads/{branch}")
        if ref is None:
            self.repo.references.create(f"refs/heads/{branch}", oid)
        else:
            ref.set_target(oid, f"commit: {message.splitlines()[0]}")
        return str(oid)

    def check_out(self, branch: str) -> None:
        """Point HEAD at a branch and write its files into a fresh work tree."""
        self.repo.set_head(f"refs/heads/{branch}")
        self.repo.checkout_head(strategy=pygit2.enums.CheckoutStrategy.FORCE)

    # ------------------------------------------------------------ reading

    def head_ref(self) -> str:
        """Return the branch HEAD points at, e.g. ``refs/heads/main``."""
        ref = self.repo.references.get("HEAD")
        if ref is None:
            raise GitError("HEAD is missing")
        target = ref.target
        if isinstance(target, str):
            return target
        raise GitError("HEAD is detached", hint="check out a branch before writing: git switch main")

    def head(self) -> str | None:
        """Return the commit id HEAD resolves to, or None on an unborn branch."""
        try:
            return str(self.repo.head.target)
        except (pygit2.GitError, KeyError):
            return None

    def branch_tip(self, ref: str) -> str | None:
        """Return the commit a ref points at, or None."""
        reference = self.repo.references.get(ref)
        if reference is None:
            return None
        return str(reference.resolve().target)

    def resolve(self, rev: str) -> str:
        """Resolve a revision (sha, branch, tag, HEAD~2) to a commit id."""
        try:
            obj = self.repo.revparse_single(rev)
            commit = obj.peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            raise GitError(f"unknown revision {rev!r}") from None
        return str(commit.id)

    def read_blob(self, path: PurePosixPath | str, *, commit: str | None = None) -> bytes | None:
        """Return a file's bytes in a commit (HEAD by default), or None."""
        oid = self.blob_id(path, commit=commit)
        if oid is None:
            return None
        blob = self.repo[oid]
        return bytes(blob.data)

    def read_object(self, oid: str) -> bytes:
        """Return the bytes of a blob by id."""
        return bytes(self.repo[oid].data)

    def blob_id(self, path: PurePosixPath | str, *, commit: str | None = None) -> str | None:
        """Return the blob id of a path in a commit (HEAD by default), or None."""
        commit = commit or self.head()
        if commit is None:
            return None
        tree = self.repo[commit].peel(pygit2.Tree)
        try:
            entry = tree[str(path)]
        except KeyError:
            return None
        if entry.type_str != "blob":
            return None
        return str(entry.id)

    def tree_files(self, prefixes: Sequence[str], *, commit: str | None = None) -> Iterator[tuple[str, str]]:
        """Yield (path, blob id) of every file under the given top-level folders."""
        commit = commit or self.head()
        if commit is None:
            return
        tree = self.repo[commit].peel(pygit2.Tree)
        for prefix in prefixes:
            try:
                entry = tree[prefix]
            except KeyError:
                continue
            if entry.type_str == "tree":
                yield from self._walk(self.repo[entry.id], prefix)

    def _walk(self, tree: pygit2.Tree, prefix: str) -> Iterator[tuple[str, str]]:
        for entry in tree:
            path = f"{prefix}/{entry.name}"
            if entry.type_str == "tree":
                yield from self._walk(self.repo[entry.id], path)
            elif entry.type_str == "blob":
                yield path, str(entry.id)

    def diff_paths(self, old: str | None, new: str | None) -> list[tuple[str, str | None]]:
        """Return (path, new blob id or None if deleted) for every file that differs."""
        def tree_of(c: str | None) -> pygit2.Tree | None:
            return None if c is None else self.repo[c].peel(pygit2.Tree)
        old_tree, new_tree = tree_of(old), tree_of(new)
        if new_tree is None:
            return [(p, None) for p, _ in self.tree_files(["topics", "facts", "relations"], commit=old)]
        if old_tree is None:
            diff = new_tree.diff_to_tree(swap=True)
        else:
            diff = self.repo.diff(old_tree, new_tree)
        out: list[tuple[str, str | None]] = []
        for delta in diff.deltas:
            if delta.status_char() == "D":
                out.append((delta.old_file.path, None))
            else:
                if delta.old_file.path != delta.new_file.path:
                    out.append((delta.old_file.path, None))
                out.append((delta.new_file.path, str(delta.new_file.id)))
        return out

    def tree_changes(self, old: str | None, new: str | None) -> list[tuple[str, str | None]]:
        """Like diff_paths, but skip subtrees whose ids are equal (libgit2's diff walks all: ~100 ms at 100k)."""
        def tree_of(oid: Any) -> pygit2.Tree | None:
            return None if oid is None else self.repo[oid].peel(pygit2.Tree)

        out: list[tuple[str, str | None]] = []

        def walk(a: pygit2.Tree | None, b: pygit2.Tree | None, prefix: str) -> None:
            left = {str(e.name): e for e in a} if a is not None else {}
            right = {str(e.name): e for e in b} if b is not None else {}
            for name in sorted(left.keys() | right.keys()):
                ea, eb = left.get(name), right.get(name)
                if ea is not None and eb is not None and ea.id == eb.id:
                    continue
                path = f"{prefix}{name}"
                subtrees = [tree_of(e.id) if e is not None and e.type_str == "tree" else None for e in (ea, eb)]
                if any(t is not None for t in subtrees):
                    walk(subtrees[0], subtrees[1], path + "/")
                if ea is not None and ea.type_str == "blob" and (eb is None or eb.type_str != "blob"):
                    out.append((path, None))
                if eb is not None and eb.type_str == "blob":
                    out.append((path, str(eb.id)))

        walk(tree_of(old), tree_of(new), "")
        return out

    def commit_info(self, oid: str) -> CommitInfo:
        """Return one commit's metadata."""
        c = self.repo[oid].peel(pygit2.Commit)
        return CommitInfo(
            id=str(c.id), parents=tuple(str(p) for p in c.parent_ids), author=c.author.name,
            email=c.author.email, time=c.commit_time, offset=c.commit_time_offset, message=c.message,
        )

    def walk(self, start: str | None = None) -> Iterator[CommitInfo]:
        """Yield commits reachable from ``start`` (HEAD), newest first."""
        start = start or self.head()
        if start is None:
            return
        for c in self.repo.walk(start, pygit2.enums.SortMode.TIME | pygit2.enums.SortMode.TOPOLOGICAL):
            yield CommitInfo(
                id=str(c.id), parents=tuple(str(p) for p in c.parent_ids), author=c.author.name,
                email=c.author.email, time=c.commit_time, offset=c.commit_time_offset, message=c.message,
            )

    def find_commit(self, rev: str) -> str | None:
        """Return the full id of the commit a sha prefix, branch or tag names, or None."""
        try:
            return str(self.repo.revparse_single(rev).peel(pygit2.Commit).id)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError, TypeError):
            return None

    def ancestors(self, tip: str, *, known: str | None = None) -> set[str]:
        """Return ``tip`` and every commit reachable from it, walking the history once.

        With ``known`` (an ancestor whose history the caller already has), walk
        only the commits reachable from ``tip`` and not from ``known``.
        """
        walker = self.repo.walk(tip, pygit2.enums.SortMode.NONE)
        if known is not None:
            walker.hide(known)
        return {str(c.id) for c in walker}

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """Return whether ``ancestor`` is ``descendant`` or reachable from it."""
        if ancestor == descendant:
            return True
        try:
            return bool(self.repo.descendant_of(descendant, ancestor))
        except (KeyError, ValueError, pygit2.GitError):
            return False

    def last_commit_at(self, moment: float, *, start: str | None = None) -> str | None:
        """Return the newest commit reachable from ``start`` (HEAD) committed at or before a Unix time."""
        start = start or self.head()
        if start is None:
            return None
        # Topological first: commits made within one second must still come newest first.
        for c in self.repo.walk(start, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME):
            if c.commit_time <= moment:
                return str(c.id)
        return None

    def index_mtime(self) -> float:
        """Return the modification time of Git's index file (0 when there is none)."""
        try:
            return (self.gitdir / "index").stat().st_mtime
        except FileNotFoundError:
            return 0.0

    def config_value(self, key: str) -> str | None:
        """Return a git config value, or None."""
        try:
            return str(self.repo.config[key])
        except KeyError:
            return None

    # ------------------------------------------------------------ locking

    @contextmanager
    def write_lock(self, *, timeout: float = 30.0, op: str = "write") -> Iterator[None]:
        """Hold the vault's write lock (an flock on a file of am's own) for one write."""
        self._am_dir.mkdir(exist_ok=True)
        path = self._am_dir / "write.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if not _flock_within(fd, timeout):
                holder = self._lock_holder()
                raise LockTimeoutError(
                    f"the vault's write lock {path} is held by {holder}",
                    hint="wait for that writer to finish, or stop it",
                )
            # The holder note is for people reading a timeout message only; the
            # flock itself dies with the process, so kill -9 never blocks anyone.
            note = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "op": op, "since": time.time()})
            try:
                (self._am_dir / "write.holder").write_text(note)
            except OSError:
                pass
            yield
        finally:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def _lock_holder(self) -> str:
        try:
            info = json.loads((self._am_dir / "write.holder").read_text())
            return f"process {info['pid']} on {info['host']} ({info['op']})"
        except (OSError, ValueError, KeyError):
            return "another process"

    def _clear_stale_git_lock(self, lock: Path) -> bool:
        """Move a git lock file aside if it is older than the stale limit; return whether it was."""
        try:
            age = time.time() - lock.stat().st_mtime
        except FileNotFoundError:
            return True
        if age < _GIT_LOCK_STALE:
            return False
        aside = self._am_dir / "stale-locks"
        aside.mkdir(parents=True, exist_ok=True)
        target = aside / f"{lock.name}.{int(time.time())}.{os.getpid()}"
        try:
            os.replace(lock, target)
        except FileNotFoundError:
            return True
        log.warning("moved a stale Git lock aside (%.0f s old): %s -> %s", age, lock, target)
        return True

    def _wait_git_lock(self, lock: Path, deadline: float) -> None:
        if self._clear_stale_git_lock(lock):
            return
        if time.monotonic() >= deadline:
            raise LockTimeoutError(
                f"Git's lock file {lock} is held",
                hint="another git command is running; if none is, remove that file",
            )
        time.sleep(0.005)

    # ------------------------------------------------------------ writing

    def _check_not_dirty(self, changes: Sequence[Change], base_tree: pygit2.Tree | None,
                         index: pygit2.Index) -> None:
        for change in changes:
            p = str(change.path)
            try:
                base_id: str | None = str(base_tree[p].id) if base_tree is not None else None
            except KeyError:
                base_id = None
            if change.base is not None and base_id != change.base:
                raise ConflictError(
                    f"{p} changed in the vault while am was writing it",
                    hint="run the command again; it will start from the new version",
                )
            if change.base is None and base_id is not None and base_id != hash_blob(change.data):
                raise ConflictError(f"{p} already exists in the vault", hint="choose another id")
            full = self.root / p
            try:
                on_disk: str | None = hash_blob(full.read_bytes())
            except FileNotFoundError:
                on_disk = None
            except IsADirectoryError:
                raise DirtyFileError(f"{p} is a folder in the work tree") from None
            new_id = hash_blob(change.data)
            if on_disk not in (base_id, new_id):
                raise DirtyFileError(
                    f"{p} has uncommitted changes",
                    hint="commit or discard them first (git add/commit or git checkout -- FILE), then retry",
                )
            entry = index[p] if p in index else None
            staged = None if entry is None else str(entry.id)
            if staged not in (base_id, new_id):
                raise DirtyFileError(
                    f"{p} has staged changes",
                    hint="commit them first (git commit), or unstage them (git restore --staged FILE)",
                )

    def _safe_target(self, rel: PurePosixPath) -> Path:
        target = self.root / rel
        parent = self.root
        for part in rel.parts[:-1]:
            parent = parent / part
            if parent.is_symlink():
                raise DirtyFileError(f"{parent.relative_to(self.root)} is a symbolic link; am will not write through it")
        if target.is_symlink():
            raise DirtyFileError(f"{rel} is a symbolic link; am will not write through it")
        return target

    def _write_file(self, rel: PurePosixPath, data: bytes, *, sync: bool = True) -> None:
        target = self._safe_target(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".{target.name}.am-{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if sync:
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        os.close(fd)
        os.replace(tmp, target)
        if sync:
            _fsync_dir(target.parent)

    def _build_tree(self, base: pygit2.Tree | None, changes: dict[tuple[str, ...], pygit2.Oid]) -> pygit2.Oid:
        builder = self.repo.TreeBuilder(base) if base is not None else self.repo.TreeBuilder()
        groups: dict[str, dict[tuple[str, ...], pygit2.Oid]] = defaultdict(dict)
        for parts, oid in changes.items():
            if len(parts) == 1:
                builder.insert(parts[0], oid, FileMode.BLOB)
            else:
                groups[parts[0]][parts[1:]] = oid
        for name, sub in groups.items():
            sub_base = None
            if base is not None and name in base:
                entry = base[name]
                if entry.type_str != "tree":
                    raise ConflictError(f"{name} is a file in the vault where am needs a folder")
                sub_base = self.repo[entry.id]
            builder.insert(name, self._build_tree(sub_base, sub), FileMode.TREE)
        return builder.write()

    def commit(self, changes: Sequence[Change], *, message: str, author: tuple[str, str],
               committer: tuple[str, str] | None = None) -> str:
        """Write files and commit them as one commit on HEAD's branch; return the commit id.

        The caller holds ``write_lock``.
        """
        if "\x00" in message:
            raise GitError("a commit message may not contain NUL")
        ref = self.head_ref()
        author_sig = pygit2.Signature(*author)
        committer_sig = pygit2.Signature(*(committer or author))
        # Objects and files are flushed with one syncfs per write instead of an
        # fsync (and a folder fsync) each, as git's core.fsyncMethod=batch does:
        # the branch moves only after syncfs returned, and the ref itself is
        # fsynced. Without syncfs (not Linux) every object is fsynced.
        batch = _syncfs is not None
        with _OBJECT_WRITES, _fsync_paused(batch):
            blobs = {tuple(c.path.parts): self.repo.create_blob(c.data) for c in changes}
        failpoint("before-write")
        written = False
        committed = False
        previous: dict[PurePosixPath, bytes | None] = {}
        try:
            for _attempt in range(_MAX_CAS_RETRIES):
                tip = self.branch_tip(ref)
                base_tree = None if tip is None else self.repo[tip].peel(pygit2.Tree)
                index = self._read_index()
                self._check_not_dirty(changes, base_tree, index)
                if not written:
                    for c in changes:
                        previous[c.path] = self._read_or_none(c.path)
                        self._write_file(c.path, c.data, sync=not batch)
                    written = True
                    failpoint("after-file")
                try:
                    with _OBJECT_WRITES:
                        if batch:
                            oid = self._commit_synced(ref, author_sig, committer_sig, message, base_tree, blobs, tip)
                        else:
                            tree = self._build_tree(base_tree, blobs)
                            oid = self._create_commit(ref, author_sig, committer_sig, message, tree, tip)
                except _Moved:
                    continue
                committed = True
                failpoint("after-commit")
                try:
                    self._update_index([(c.path, blobs[tuple(c.path.parts)]) for c in changes])
                except LockTimeoutError as err:
                    # The write is committed and durable; only Git's index lags, and doctor repairs that.
                    log.warning("committed %s, but Git's index was not updated (%s); run: am doctor --fix",
                                str(oid)[:10], err)
                failpoint("after-index")
                return str(oid)
            raise GitError(f"could not move {ref}: it kept changing under am")
        except BaseException:
            if written and not committed:
                self._roll_back(changes, previous)
            raise

    def _sync_filesystems(self) -> None:
        """Flush the file systems of the work tree and the Git directory (one syncfs each)."""
        assert _syncfs is not None
        # One call per file system: the work tree and .git are usually on the same one.
        folders = {os.stat(f).st_dev: f for f in (self.gitdir / "objects", self.root)}
        for folder in folders.values():
            fd = os.open(folder, os.O_RDONLY)
            try:
                if _syncfs(fd) != 0:
                    raise GitError(f"could not flush {folder} to disk: {os.strerror(ctypes.get_errno())}")
            finally:
                os.close(fd)

    def _read_index(self) -> pygit2.Index:
        """Return Git's index, read afresh; retry a torn read.

        libgit2 takes the index file's size with stat() and then reads it, so
        a `git add` replacing the file in between gives "extension is
        truncated" or "could not read"; 16 writers racing a `git commit` loop
        hit it. The file itself is always whole (git renames it into place).
        """
        kept = self._index_kept
        if kept is not None and kept[0] == self._index_stamp():
            return kept[1]  # the index am wrote last is still the one on disk
        for attempt in range(50):
            try:
                index = self.repo.index
                index.read(attempt > 0)
                return index
            except (pygit2.GitError, OSError) as err:
                if attempt == 49:
                    raise GitError(f"could not read Git's index: {err}") from None
                time.sleep(0.002)
        raise AssertionError("unreachable")

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
            try:
                if before is None:
                    (self.root / c.path).unlink()
                else:
                    self._write_file(c.path, before)
            except OSError as err:
                log.warning("could not put back %s after a failed write: %s", c.path, err)

    def _commit_synced(self, ref: str, author: pygit2.Signature, committer: pygit2.Signature, message: str,
                       base_tree: pygit2.Tree | None, blobs: dict[tuple[str, ...], pygit2.Oid],
                       tip: str | None) -> pygit2.Oid:
        """Write trees and the commit unsynced, flush them with syncfs, then move the branch by compare-and-swap."""
        with _fsync_paused(True):
            tree = self._build_tree(base_tree, blobs)
            parents = [] if tip is None else [pygit2.Oid(hex=tip)]
            oid = self.repo.create_commit(None, author, committer, message, tree, parents)
        self._sync_filesystems()
        reflog = "commit: " + message.split("\n", 1)[0]
        lock = self.gitdir / (ref + ".lock")
        deadline = time.monotonic() + _GIT_LOCK_WAIT
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
                return oid
            except (pygit2.AlreadyExistsError, ValueError):
                raise _Moved() from None
            except (pygit2.GitError, OSError) as err:
                if "does not match" in str(err) or self.branch_tip(ref) != tip:
                    raise _Moved() from None
                if "lock" not in str(err):
                    raise GitError(f"could not move {ref}: {err}") from None
                self._wait_git_lock(lock, deadline)

    def _create_commit(self, ref: str, author: pygit2.Signature, committer: pygit2.Signature,
                       message: str, tree: pygit2.Oid, tip: str | None) -> pygit2.Oid:
        lock = self.gitdir / (ref + ".lock")
        deadline = time.monotonic() + _GIT_LOCK_WAIT
        while True:
            try:
                parents = [] if tip is None else [pygit2.Oid(hex=tip)]
                return self.repo.create_commit(ref, author, committer, message, tree, parents)
            except pygit2.GitError as err:
                # libgit2 re-checks the tip under the ref lock: someone moved it.
                if "current tip" in str(err) or "first parent" in str(err) or self.branch_tip(ref) != tip:
                    raise _Moved() from None
                raise GitError(f"could not commit: {err}") from None
            except OSError as err:
                if "lock" not in str(err):
                    raise GitError(f"could not commit: {err}") from None
                self._wait_git_lock(lock, deadline)
                if self.branch_tip(ref) != tip:
                    raise _Moved() from None

    def _update_index(self, entries: Sequence[tuple[PurePosixPath, pygit2.Oid]],
                      removed: Sequence[PurePosixPath] = ()) -> None:
        """Set Git's index entries for these paths, holding index.lock as git does."""
        index_path = self.gitdir / "index"
        lock = self.gitdir / "index.lock"
        deadline = time.monotonic() + _GIT_LOCK_WAIT
        while True:
            try:
                os.close(os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
                break
            except FileExistsError:
                self._wait_git_lock(lock, deadline)
        # Holding index.lock, nobody else can replace the index. If it is still
        # the file am wrote last, the Index kept from then is current: no copy,
        # no re-parse (each costs ~20 ms at 10k files).
        tmp = self._am_dir / f"index.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            kept = self._index_kept
            if kept is not None and kept[0] == self._index_stamp() and kept[2] == tmp:
                index = kept[1]
            else:
                self._index_kept = None
                if index_path.exists():
                    shutil.copyfile(index_path, tmp)
                else:
                    tmp.unlink(missing_ok=True)
                index = pygit2.Index(str(tmp))
            for rel, oid in entries:
                index.add(_StatEntry(str(rel), oid, (self.root / rel).stat()))
            for rel in removed:
                if str(rel) in index:
                    index.remove(str(rel))
            index.write()  # to tmp, fsynced by libgit2 (enable_fsync_gitdir)
            os.replace(tmp, index_path)
            self._index_kept = (self._index_stamp(), index, tmp)
        except BaseException:
            self._index_kept = None
            tmp.unlink(missing_ok=True)
            raise
        finally:
            lock.unlink(missing_ok=True)

    def _index_stamp(self) -> tuple[int, int, int, int] | None:
        """Return what tells one index file from another: inode, size, mtime and ctime."""
        try:
            st = (self.gitdir / "index").stat()
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    # ------------------------------------------------------------ repair: undo, recover, doctor, hooks

    def staged_entries(self, index_file: str | None = None) -> dict[str, str]:
        """Return {path: blob id} of Git's index, or of the index file a hook was handed."""
        if index_file:
            index = pygit2.Index(index_file)
        else:
            index = self.repo.index
            index.read(False)
        return {entry.path: str(entry.id) for entry in index}

    def changed_files(self, commit: str) -> list[tuple[str, str | None]]:
        """Return (path, new blob id or None) for what one commit changed against its first parent."""
        info = self.commit_info(commit)
        parent = info.parents[0] if info.parents else None
        if parent is None:
            tree = self.repo[commit].peel(pygit2.Tree)
            return [(p, str(e)) for p, e in self._all_files(tree, "")]
        return self.diff_paths(parent, commit)

    def _all_files(self, tree: pygit2.Tree, prefix: str) -> Iterator[tuple[str, pygit2.Oid]]:
        for entry in tree:
            path = f"{prefix}{entry.name}"
            if entry.type_str == "tree":
                yield from self._all_files(self.repo[entry.id].peel(pygit2.Tree), path + "/")
            elif entry.type_str == "blob":
                yield path, entry.id

    def _tree_of(self, commit: str | None) -> pygit2.Tree:
        if commit is None:
            return self.repo[self.repo.TreeBuilder().write()].peel(pygit2.Tree)
        return self.repo[commit].peel(pygit2.Tree)

    def revert_tree(self, commit: str, onto: str) -> str:
        """Return the tree of ``onto`` with one commit's changes reverted; raise ConflictError on conflicts."""
        c = self.repo[commit].peel(pygit2.Commit)
        if len(c.parent_ids) > 1:
            raise ConflictError(f"{commit[:10]} is a merge commit; am undo reverts one write at a time")
        index = self.repo.revert_commit(c, self.repo[onto].peel(pygit2.Commit))
        return self._merged_tree(index, f"reverting {commit[:10]}")

    def pick_tree(self, commit: str, onto: str | None) -> str:
        """Return the tree of ``onto`` with one commit's changes applied (a cherry-pick without a work tree)."""
        c = self.repo[commit].peel(pygit2.Commit)
        parent = str(c.parent_ids[0]) if c.parent_ids else None
        index = self.repo.merge_trees(self._tree_of(parent), self._tree_of(onto), c.tree)
        return self._merged_tree(index, f"restoring {commit[:10]}")

    def _merged_tree(self, index: pygit2.Index, what: str) -> str:
        if index.conflicts is not None:
            paths = sorted({(e.path if e is not None else "?") for trio in index.conflicts for e in trio if e})
            raise ConflictError(
                f"{what} conflicts with later changes in: {', '.join(paths)}",
                hint="nothing was changed; edit those records by hand (or supersede the facts) instead",
            )
        return str(index.write_tree(self.repo))

    def tree_id(self, commit: str | None) -> str:
        """Return the tree id of a commit (the empty tree for None)."""
        return str(self._tree_of(commit).id)

    def commit_tree(self, make_tree: Any, *, message: str, author: tuple[str, str],
                    committer: tuple[str, str] | None = None) -> str | None:
        """Commit ``make_tree(tip)`` (a tree id) on HEAD's branch with the compare-and-swap of ``commit``.

        Only the paths that differ from the tip are written to the work tree and
        Git's index; a user's uncommitted edit to one of them is refused. Returns
        None when the tree equals the tip's (nothing to do). The caller holds
        ``write_lock``.
        """
        if "\x00" in message:
            raise GitError("a commit message may not contain NUL")
        ref = self.head_ref()
        author_sig = pygit2.Signature(*author)
        committer_sig = pygit2.Signature(*(committer or author))
        for _attempt in range(_MAX_CAS_RETRIES):
            tip = self.branch_tip(ref)
            with _OBJECT_WRITES:  # never while another thread has libgit2's fsync paused
                tree_id = str(make_tree(tip))
            base_tree = self._tree_of(tip)
            if tree_id == str(base_tree.id):
                return None
            new_tree = self.repo[tree_id].peel(pygit2.Tree)
            diff = self.repo.diff(base_tree, new_tree)  # type: ignore[call-overload]
            writes: list[tuple[PurePosixPath, pygit2.Oid, str | None]] = []
            removes: list[tuple[PurePosixPath, str]] = []
            for delta in diff.deltas:
                if delta.status_char() in ("D", "R") or delta.old_file.path != delta.new_file.path:
                    removes.append((PurePosixPath(delta.old_file.path), str(delta.old_file.id)))
                if delta.status_char() != "D":
                    old = None if delta.status_char() == "A" else str(delta.old_file.id)
                    writes.append((PurePosixPath(delta.new_file.path), delta.new_file.id, old))
            index = self._read_index()
            self._check_not_dirty(
                [Change(p, self.read_object(str(oid)), base) for p, oid, base in writes], base_tree, index)
            for rel, base in removes:
                self._check_removable(rel, base, index)
            for rel, oid, _ in writes:
                self._write_file(rel, self.read_object(str(oid)))
            for rel, _ in removes:
                target = self._safe_target(rel)
                target.unlink(missing_ok=True)
            try:
                with _OBJECT_WRITES:
                    oid = self._create_commit(ref, author_sig, committer_sig, message, pygit2.Oid(hex=tree_id), tip)
            except _Moved:
                continue
            self._update_index([(p, o) for p, o, _ in writes], removed=[p for p, _ in removes])
            return str(oid)
        raise GitError(f"could not move {ref}: it kept changing under am")

    def _check_removable(self, rel: PurePosixPath, base: str, index: pygit2.Index) -> None:
        full = self.root / rel
        try:
            on_disk: str | None = hash_blob(full.read_bytes())
        except FileNotFoundError:
            on_disk = None
        entry = index[str(rel)] if str(rel) in index else None
        if on_disk not in (base, None) or (entry is not None and str(entry.id) != base):
            raise DirtyFileError(f"{rel} has uncommitted changes",
                                 hint="commit or discard them first, then retry")

    def stage_paths(self, paths: Sequence[PurePosixPath]) -> None:
        """Set Git's index entries of these paths to their blobs in HEAD (repairs an interrupted write)."""
        entries = []
        for rel in paths:
            oid = self.blob_id(rel)
            if oid is not None and (self.root / rel).is_file():
                entries.append((rel, pygit2.Oid(hex=oid)))
        if entries:
            self._update_index(entries)

    def work_tree_status(self) -> dict[str, str]:
        """Return {path: 'untracked'|'modified'|'deleted'|'staged'} for files that differ from HEAD."""
        out: dict[str, str] = {}
        FS = pygit2.enums.FileStatus
        for path, flags in self.repo.status(untracked_files="all").items():
            if flags & FS.WT_NEW:
                out[path] = "untracked"
            elif flags & FS.WT_DELETED:
                out[path] = "deleted"
            elif flags & FS.WT_MODIFIED:
                out[path] = "modified"
            elif flags & (FS.INDEX_NEW | FS.INDEX_MODIFIED | FS.INDEX_DELETED | FS.INDEX_RENAMED):
                out[path] = "staged"
        return out

    def git_locks(self) -> list[tuple[Path, float]]:
        """Return Git's lock files in this repository with their age in seconds."""
        found = []
        candidates = [self.gitdir / n for n in ("index.lock", "HEAD.lock", "packed-refs.lock", "config.lock")]
        candidates += list((self.gitdir / "refs").rglob("*.lock"))
        now = time.time()
        for lock in candidates:
            try:
                found.append((lock, now - lock.stat().st_mtime))
            except FileNotFoundError:
                continue
        return found

    def clear_stale_git_locks(self) -> list[Path]:
        """Move Git lock files older than AM_GIT_LOCK_STALE aside; return the ones moved. Hold write_lock."""
        moved = []
        for lock, age in self.git_locks():
            if age >= _GIT_LOCK_STALE and self._clear_stale_git_lock(lock):
                moved.append(lock)
        return moved

    def reflog(self, ref: str) -> list[tuple[str, str, str]]:
        """Return (old id, new id, message) of a ref's reflog, newest first (empty when there is none)."""
        reference = self.repo.references.get(ref)
        if reference is None:
            return []
        try:
            return [(str(e.oid_old), str(e.oid_new), e.message or "") for e in reference.log()]
        except (pygit2.GitError, KeyError):
            return []

    def _reachable_from_refs(self) -> set[str]:
        walker = None
        for name in self.repo.references:
            if name == "HEAD" or name.startswith("refs/am-"):
                continue
            try:
                target = self.repo.references[name].resolve().peel(pygit2.Commit).id
            except (pygit2.GitError, KeyError, ValueError, pygit2.InvalidSpecError):
                continue
            if walker is None:
                walker = self.repo.walk(target, pygit2.enums.SortMode.NONE)
            else:
                walker.push(target)
        head = self.head()
        if head is not None:
            if walker is None:
                walker = self.repo.walk(head, pygit2.enums.SortMode.NONE)
            else:
                walker.push(pygit2.Oid(hex=head))
        return set() if walker is None else {str(c.id) for c in walker}

    def lost_commits(self, *, scan_objects: bool = True) -> list[tuple[CommitInfo, str]]:
        """Return commits no branch or tag reaches, oldest first, each with how it was found.

        The reflogs are read first (``reflog``); with ``scan_objects`` every
        object in the database is then looked at too (``unreachable``), like
        ``git fsck --unreachable``, for a repository without reflogs.
        """
        reachable = self._reachable_from_refs()
        found: dict[str, str] = {}

        def collect(start: str, how: str) -> None:
            if start in reachable or start in found or set(start) == {"0"}:
                return
            try:
                walker = self.repo.walk(start, pygit2.enums.SortMode.NONE)
            except (pygit2.GitError, KeyError, ValueError):
                return
            for c in walker:
                cid = str(c.id)
                if cid in reachable or cid in found:
                    walker.hide(c.id)
                    continue
                found[cid] = how

        refs = ["HEAD", *self.repo.references]
        for name in refs:
            for old, new, _ in self.reflog(name):
                collect(new, "reflog")
                collect(old, "reflog")
        if scan_objects:
            commit_type = pygit2.enums.ObjectType.COMMIT
            for oid in self.repo.odb:
                if str(oid) in reachable or str(oid) in found:
                    continue
                try:
                    kind = self.repo.odb.read_header(oid)[0]
                except (pygit2.GitError, KeyError, ValueError):
                    continue
                if kind == commit_type:
                    collect(str(oid), "unreachable")
        infos = [self.commit_info(cid) for cid in found]
        # Oldest first, parents before children, so restoring them replays history in order.
        order = {cid: i for i, cid in enumerate(self._topo_order(found))}
        infos.sort(key=lambda i: order[i.id])
        return [(info, found[info.id]) for info in infos]

    def _topo_order(self, ids: dict[str, str]) -> list[str]:
        """Return ids so that every commit comes after its parents among them (ties by time)."""
        infos = {cid: self.commit_info(cid) for cid in ids}
        done: list[str] = []
        seen: set[str] = set()

        def visit(cid: str) -> None:
            stack = [(cid, False)]
            while stack:
                node, expanded = stack.pop()
                if expanded:
                    if node not in seen:
                        seen.add(node)
                        done.append(node)
                    continue
                if node in seen:
                    continue
                stack.append((node, True))
                for parent in infos[node].parents:
                    if parent in infos and parent not in seen:
                        stack.append((parent, False))

        for cid in sorted(infos, key=lambda c: (infos[c].time, c)):
            visit(cid)
        return done


class _Moved(Exception):
    """The branch moved between reading its tip and creating the commit."""

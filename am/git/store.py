"""The GitStore: a front that owns the objects doing the work (importing this imports pygit2).

``GitStore(repo, root)`` builds, each given what it needs:

* ``reader`` (reading.py): refs, trees, blobs, history, ancestry;
* ``staging`` (staging.py): Git's index, lock files and compare-and-swap branch moves, and what the writers
  of this process share (the group, the batch's object handle, the index lock a move holds);
* ``locking`` (locking.py): am's write lock and the per-statement key locks, the queue while one waits;
* ``worktree`` (write/worktree.py): the work tree's files, each replaced only if it is still what was checked;
* ``guards`` (write/guards.py): request checks, signing, the dirty check, healing of Git's index;
* ``plain_writer`` (write/plain.py) and ``writer`` (write/transaction.py): the write transaction;
* ``repairer`` (repair.py): undo, recovery, doctor, hooks; ``lost`` (lost.py): the commits no ref reaches.

The methods here are the store's public surface (what am above this package calls), each
handing the call to the one object that does it.

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path, PurePosixPath
from typing import Any, Self

import pygit2

from am.errors import GitError, NotAVaultError
from am.git.coord.group import AfterHook, Request, Who
from am.git.locking import Locking
from am.git.lost import LostCommits
from am.git.formats.packs import BatchObjects
from am.git.reading import Reader
from am.git.repair import Repairer
from am.git.staging import Staging
from am.git.values import Change, CommitInfo
from am.git.write.guards import Guards
from am.git.write.plain import PlainWriter
from am.git.write.transaction import Writer
from am.git.write.worktree import WorkTree

__all__ = ["GitStore"]


class GitStore:
    """A vault's (or a code repository's) Git repository, seen through the operations am needs."""

    def __init__(self, repo: pygit2.Repository, root: Path) -> None:
        self.repo = repo
        self.root = root
        self.reader = Reader(repo, root)
        self.gitdir = self.reader.gitdir
        self.staging = Staging(self.reader)
        self._am_dir = self.staging.am_dir
        self.locking = Locking(self.reader, self.staging)
        self.worktree = WorkTree(repo, root)
        self.guards = Guards(self.reader, self.staging, self.worktree, self.config_value)
        self.plain_writer = PlainWriter(self.staging)
        self.writer = Writer(self.reader, self.staging, self.locking, self.guards, self.worktree, self.plain_writer)
        self.repairer = Repairer(self.reader, self.staging, self.guards, self.worktree)
        self.lost = LostCommits(self.reader, self.staging.am_dir)

    # ------------------------------------------------------------ open / init

    @classmethod
    def open(cls, root: Path) -> Self:
        """Open the repository whose work tree is ``root``."""
        try:
            repo = pygit2.Repository(str(root), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
        except (pygit2.GitError, KeyError, ValueError) as err:
            cls._unsupported(root, err)
            raise NotAVaultError(
                f"{root} is not a Git repository",
                hint=f"give the folder that holds .git (to make a new vault there: am init {root})",
            ) from None
        if repo.is_bare or repo.workdir is None:
            raise NotAVaultError(f"{root} is a bare Git repository; a vault needs a work tree")
        return cls(repo, Path(repo.workdir).resolve())

    @staticmethod
    def _unsupported(root: Path, err: BaseException) -> None:
        """Raise a clear error for a Git repository libgit2 cannot open (SHA-256 object ids, newer formats)."""
        if "object format" in str(err) or "extension" in str(err):
            raise NotAVaultError(
                f"{root} is a Git repository am cannot use: {err}",
                hint="am supports SHA-1 repositories only (git init --object-format=sha1); "
                     "convert the vault with git fast-export | git fast-import into a new one",
            ) from None

    @classmethod
    def open_code(cls, root: Path) -> Self:
        """Open a code repository (work tree or bare) to read its commit graph."""
        try:
            repo = pygit2.Repository(str(root), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
        except (pygit2.GitError, KeyError):
            raise GitError(f"{root} is not a Git repository",
                           hint="give the folder of a local clone (the one holding .git)") from None
        return cls(repo, Path(repo.workdir or repo.path).resolve())

    @classmethod
    def init(cls, root: Path, *, branch: str = "main") -> Self:
        """Create a repository at ``root``, or open the one that is there."""
        if (root / ".git").exists():
            return cls.open(root)
        if (root / "HEAD").is_file() and (root / "objects").is_dir() and (root / "refs").is_dir():
            raise NotAVaultError(f"{root} is a bare Git repository; a vault needs a work tree",
                                 hint=f"clone it and make the vault in the clone: git clone {root} DIR && am init DIR")
        root.mkdir(parents=True, exist_ok=True)
        repo = pygit2.init_repository(str(root), initial_head=branch)
        return cls(repo, Path(repo.workdir).resolve())

    # ------------------------------------------------------------ config (kept here: remote.py and
    # am/upkeep/merges.py drop the memo from the store after changing the config with the git program)

    def config_value(self, key: str) -> str | None:
        """Return a git config value, or None."""
        # One Config kept per store: libgit2 re-reads a config file that changed
        # on every lookup, and opening a Config for each is most of its cost.
        config = self.__dict__.get("_config")
        if config is None:
            config = self.__dict__["_config"] = self.repo.config
        try:
            return str(config[key])
        except KeyError:
            return None

    # ------------------------------------------------------------ reading (reading.py)

    def build_commit(self, branch: str, files: dict[str, bytes], *, parents: Sequence[str], message: str,
                     author: tuple[str, str, int, int]) -> str:
        """Commit files over the first parent's tree and move ``branch`` there (for repositories am generates)."""
        return self.reader.build_commit(branch, files, parents=parents, message=message, author=author)

    def check_out(self, branch: str) -> None:
        """Point HEAD at a branch and write its files into a fresh work tree."""
        self.reader.check_out(branch)

    def head_ref(self) -> str:
        """Return the branch HEAD points at, e.g. ``refs/heads/main`` (the direct ref a symbolic chain ends at)."""
        return self.reader.head_ref()

    def head(self) -> str | None:
        """Return the commit id HEAD resolves to, or None on an unborn branch."""
        return self.reader.head()

    def branch_tip(self, ref: str) -> str | None:
        """Return the commit a ref points at, or None."""
        return self.reader.branch_tip(ref)

    def symbolic_target(self, ref: str) -> str | None:
        """Return the ref a symbolic ref names (``refs/remotes/origin/HEAD`` -> ``refs/remotes/origin/main``), or None."""
        return self.reader.symbolic_target(ref)

    def resolve(self, rev: str) -> str:
        """Resolve a revision (sha, branch, tag, HEAD~2) to a commit id."""
        return self.reader.resolve(rev)

    def read_blob(self, path: PurePosixPath | str, *, commit: str | None = None) -> bytes | None:
        """Return a file's bytes in a commit (HEAD by default), or None."""
        return self.reader.read_blob(path, commit=commit)

    def read_object(self, oid: str) -> bytes:
        """Return the bytes of a blob by id (a partial clone's left-out blob fetched as git fetches it)."""
        return self.reader.read_object(oid)

    def object_size(self, oid: str) -> int:
        """Return the size in bytes of an object by id, without reading it."""
        return self.reader.object_size(oid)

    def blob_size(self, oid: str) -> int:
        """Return a blob's size without reading it; 0 when it is not here (a partial clone's, fetched when read)."""
        return self.reader.blob_size(oid)

    def blob_id(self, path: PurePosixPath | str, *, commit: str | None = None) -> str | None:
        """Return the blob id of a path in a commit (HEAD by default), or None."""
        return self.reader.blob_id(path, commit=commit)

    def blob_ids(self, paths: Iterable[str], *, commit: str) -> dict[str, str | None]:
        """Return each path's blob id in a commit (None: no file there), looking the commit up once."""
        return self.reader.blob_ids(paths, commit=commit)

    def blob_as_git_stores(self, path: PurePosixPath | str, data: bytes) -> str | None:
        """Return the blob id git would store for these work-tree bytes at ``path``, after its filters (autocrlf)."""
        return self.reader.blob_as_git_stores(path, data)

    def tree_files(self, prefixes: Sequence[str], *, commit: str | None = None) -> Iterator[tuple[str, str]]:
        """Yield (path, blob id) of every file under the given top-level folders."""
        return self.reader.tree_files(prefixes, commit=commit)

    def diff_paths(self, old: str | None, new: str | None) -> list[tuple[str, str | None]]:
        """Return (path, new blob id or None if deleted) for every file that differs."""
        return self.reader.diff_paths(old, new)

    def tree_changes(self, old: str | None, new: str | None, *,
                     modes: dict[str, int] | None = None) -> list[tuple[str, str | None]]:
        """Like diff_paths, but skip subtrees whose ids are equal; ``modes`` receives non-100644 modes (Reader's)."""
        return self.reader.tree_changes(old, new, modes=modes)

    def file_changes(self, old: str | None, new: str | None) -> list[tuple[str, str | None]]:
        """Return what diff_paths does (its files, its order), reading only the folders that differ."""
        return self.reader.file_changes(old, new)

    def commit_info(self, oid: str) -> CommitInfo:
        """Return one commit's metadata."""
        return self.reader.commit_info(oid)

    def walk(self, start: str | None = None) -> Iterator[CommitInfo]:
        """Yield commits reachable from ``start`` (HEAD), newest first."""
        return self.reader.walk(start)

    def find_commit(self, rev: str) -> str | None:
        """Return the full id of the commit a sha prefix, branch or tag names, or None."""
        return self.reader.find_commit(rev)

    def ancestors(self, tip: str, *, known: str | None = None) -> set[str]:
        """Return ``tip`` and every commit reachable from it, walking the history once."""
        return self.reader.ancestors(tip, known=known)

    def topo_history(self, tip: str) -> list[tuple[str, tuple[str, ...]]]:
        """Return (commit, parents) for ``tip`` and every ancestor, parents before children."""
        return self.reader.topo_history(tip)

    def touched_paths(self, commit: str) -> list[str]:
        """Return the files a commit changed itself: against its parent, or a merge's against every parent."""
        return self.reader.touched_paths(commit)

    def ref_names(self) -> list[str]:
        """Return the names of every reference (refs/heads/..., refs/remotes/..., refs/tags/...)."""
        return self.reader.ref_names()

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """Return whether ``ancestor`` is ``descendant`` or reachable from it."""
        return self.reader.is_ancestor(ancestor, descendant)

    def last_change(self, path: str, *, start: str | None = None) -> str | None:
        """Return the newest commit on ``start``'s (HEAD's) first-parent line that changed ``path``."""
        return self.reader.last_change(path, start=start)

    def last_commit_at(self, moment: float, *, start: str | None = None) -> str | None:
        """Return the newest commit reachable from ``start`` (HEAD) committed at or before a Unix time."""
        return self.reader.last_commit_at(moment, start=start)

    # ------------------------------------------------------------ locks (locking.py)

    def write_lock(self, *, timeout: float = 30.0, op: str = "write", request: Request | None = None,
                   in_git_hook: bool = False) -> AbstractContextManager[None]:
        """Hold the vault's write lock (an flock on a file of am's own) for one write."""
        return self.locking.write_lock(timeout=timeout, op=op, request=request, in_git_hook=in_git_hook)

    def key_lock(self, key: int, *, timeout: float = 30.0) -> AbstractContextManager[None]:
        """Hold one of 256 locks, chosen by ``key``, across a check and the write it decides."""
        return self.locking.key_lock(key, timeout=timeout)

    def _in_branch(self, commit: str) -> bool:
        """Return whether HEAD's branch reaches ``commit``."""
        return self.locking.in_branch(commit)

    # ------------------------------------------------------------ writing (write/transaction.py)

    def commit(self, changes: Sequence[Change], *, message: str, author: Who,
               committer: Who | None = None) -> str:
        """Write files and commit them as one commit on HEAD's branch; return the commit id."""
        return self.writer.commit(changes, message=message, author=author, committer=committer)

    def commit_grouped(self, changes: Sequence[Change], *, message: str, author: Who,
                       committer: Who | None = None, op: str = "write",
                       after: AfterHook | None = None, queue: bool = True) -> str:
        """Commit as one commit of its own, sharing the flush, ref move and index rewrite with concurrent writers.

        ``queue=False``: never left in another process's queue (a write with an override the holder of the lock
        does not take from the queue, am/git/checks.py ``check_queued``).
        """
        return self.writer.commit_grouped(changes, message=message, author=author, committer=committer, op=op,
                                          after=after, queue=queue)

    def _commit_batch(self, batch: Sequence[Request]) -> str | None:
        """Commit each request as its own commit, chained on the branch tip (the caller holds ``write_lock``)."""
        return self.writer.commit_batch(batch)

    def _batch_objects(self) -> BatchObjects:
        """This store's second handle on the repository, whose new objects are kept for one pack a batch."""
        return self.staging.batch_objects()

    # ------------------------------------------------------------ repairs (repair.py)

    def staged_entries(self, index_file: str | None = None) -> dict[str, str]:
        """Return {path: blob id} of Git's index, or of the index file a hook was handed."""
        return self.repairer.staged_entries(index_file)

    def rebuild_index(self) -> Path:
        """Replace a damaged `.git/index` with HEAD's tree (the damaged file is kept in .git/am/); return where it went."""
        return self.repairer.rebuild_index()

    def changed_files(self, commit: str) -> list[tuple[str, str | None]]:
        """Return (path, new blob id or None) for what one commit changed against its first parent."""
        return self.repairer.changed_files(commit)

    def revert_tree(self, commit: str, onto: str) -> str:
        """Return the tree of ``onto`` with one commit's changes reverted; raise ConflictError on conflicts."""
        return self.repairer.revert_tree(commit, onto)

    def pick_tree(self, commit: str, onto: str | None) -> str:
        """Return the tree of ``onto`` with one commit's changes applied (a cherry-pick without a work tree)."""
        return self.repairer.pick_tree(commit, onto)

    def tree_id(self, commit: str | None) -> str:
        """Return the tree id of a commit (the empty tree for None)."""
        return self.repairer.tree_id(commit)

    def commit_tree(self, make_tree: Any, *, message: str, author: Who,
                    committer: Who | None = None) -> str | None:
        """Commit ``make_tree(tip)`` (a tree id) on HEAD's branch with the compare-and-swap of ``commit``."""
        return self.repairer.commit_tree(make_tree, message=message, author=author, committer=committer)

    def stage_paths(self, paths: Sequence[PurePosixPath]) -> None:
        """Set Git's index entries of these paths to their blobs in HEAD (repairs an interrupted write)."""
        self.repairer.stage_paths(paths)

    def work_tree_status(self) -> dict[str, str]:
        """Return {path: 'untracked'|'modified'|'deleted'|'staged'} for files that differ from HEAD."""
        return self.repairer.work_tree_status()

    def git_locks(self) -> list[tuple[Path, float]]:
        """Return Git's lock files in this repository with their age in seconds."""
        return self.repairer.git_locks()

    def left_by_dead_am(self, lock: Path) -> bool:
        """Return whether a Git lock file was left by an am process that is gone (cleared without waiting)."""
        return self.repairer.left_by_dead_am(lock)

    def clear_stale_git_locks(self) -> list[Path]:
        """Move aside Git lock files older than AM_GIT_LOCK_STALE or left by a dead am; return them. Hold write_lock."""
        return self.repairer.clear_stale_git_locks()

    def reflog(self, ref: str) -> list[tuple[str, str, str]]:
        """Return (old id, new id, message) of a ref's reflog, newest first (empty when there is none)."""
        return self.lost.reflog(ref)

    def left_by(self, ids: set[str]) -> dict[str, str]:
        """Return, for each of ``ids`` a reflog shows leaving a ref, the message of the newest entry that took it off."""
        return self.lost.left_by(ids)

    def lost_commits(self, *, scan_objects: bool = True) -> list[tuple[CommitInfo, str]]:
        """Return commits no branch or tag reaches, oldest first, each with how it was found."""
        return self.lost.lost_commits(scan_objects=scan_objects)

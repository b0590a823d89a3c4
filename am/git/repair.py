"""Repairs (``Repairer``): undo, recovery of lost commits, doctor's checks, staging for hooks.

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import pygit2

import am.git.common as common
import am.git.coord.inflight as inflight
from am.errors import ConflictError, DirtyFileError, GitError
from am.git.common import _MAX_CAS_RETRIES, _Moved
from am.git.coord.group import Who
from am.git.reading import Reader
from am.git.staging import IndexView, Staging
from am.git.values import Change, hash_blob
from am.git.write.guards import Guards
from am.git.write.worktree import WorkTree


class Repairer:
    """Undo, recover, doctor and hooks: history-level operations."""

    def __init__(self, reader: Reader, staging: Staging, guards: Guards, worktree: WorkTree) -> None:
        self.reader = reader
        self.staging = staging
        self.guards = guards
        self.worktree = worktree
        self.repo = reader.repo
        self.root = reader.root
        self.gitdir = reader.gitdir

    def staged_entries(self, index_file: str | None = None) -> dict[str, str]:
        """Return {path: blob id} of Git's index, or of the index file a hook was handed."""
        try:
            if index_file:
                index = pygit2.Index(index_file)
            else:
                index = self.repo.index
                index.read(False)
            return {entry.path: str(entry.id) for entry in index}
        except (pygit2.GitError, OSError, ValueError) as err:
            raise GitError(f"could not read Git's index {index_file or self.gitdir / 'index'}: {err}",
                           hint="run: am doctor --fix (it rebuilds the index from HEAD)") from None

    def rebuild_index(self) -> Path:
        """Replace a damaged `.git/index` with HEAD's tree (the damaged file is kept in .git/am/); return where it went.

        Its entries carry no stat data, so git re-reads each file once; a
        staged change that only the damaged file held is lost with it.
        """
        lock = self.staging.lock_index()
        try:
            index = pygit2.Index()
            head = self.reader.head()
            if head is not None:
                index.read_tree(self.repo[head].peel(pygit2.Tree))
            tmp = self.staging.am_dir / f"index.{os.getpid()}.tmp"
            index_path = self.gitdir / "index"
            kept = self.staging.am_dir / f"index.damaged.{int(time.time())}"
            if index_path.exists():
                shutil.copyfile(index_path, kept)
            tmp.unlink(missing_ok=True)
            written = pygit2.Index(str(tmp))
            for entry in index:
                written.add(entry)
            written.write()
            os.replace(tmp, index_path)
            self.staging.index_kept = None
            return kept
        finally:
            lock.unlink(missing_ok=True)

    def changed_files(self, commit: str) -> list[tuple[str, str | None]]:
        """Return (path, new blob id or None) for what one commit changed against its first parent."""
        info = self.reader.commit_info(commit)
        parent = info.parents[0] if info.parents else None
        if parent is None:
            tree = self.repo[commit].peel(pygit2.Tree)
            return [(p, str(e)) for p, e in self._all_files(tree, "")]
        return self.reader.diff_paths(parent, commit)

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
        self._fetch_left_out(str(c.parent_ids[0]) if c.parent_ids else None, commit, onto)
        index = self.repo.revert_commit(c, self.repo[onto].peel(pygit2.Commit))
        return self._merged_tree(index, f"reverting {commit[:10]}")

    def pick_tree(self, commit: str, onto: str | None) -> str:
        """Return the tree of ``onto`` with one commit's changes applied (a cherry-pick without a work tree)."""
        c = self.repo[commit].peel(pygit2.Commit)
        parent = str(c.parent_ids[0]) if c.parent_ids else None
        self._fetch_left_out(parent, commit, onto)
        # No rename detection: two record files share most of their frontmatter, so a fact deleted and another
        # added since looks like a rename, and the lost commit's change would land in the other fact's file.
        index = self.repo.merge_trees(self._tree_of(parent), self._tree_of(onto), c.tree,
                                      flags=pygit2.enums.MergeFlag(0))
        return self._merged_tree(index, f"restoring {commit[:10]}")

    def _fetch_left_out(self, parent: str | None, commit: str, onto: str | None) -> None:
        """Bring in the blobs a three-way merge of one commit's change reads that a partial clone left out.

        libgit2 cannot fetch them; ``read_object`` asks git, which does (am/git/program/partial.py).
        """
        for path, _ in self.reader.file_changes(parent, commit):
            for rev in (parent, commit, onto):
                oid = self.reader.blob_id(path, commit=rev) if rev is not None else None
                if oid is not None and oid not in self.repo:
                    self.reader.read_object(oid)

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

    def commit_tree(self, make_tree: Any, *, message: str, author: Who,
                    committer: Who | None = None) -> str | None:
        """Commit ``make_tree(tip)`` (a tree id) on HEAD's branch with the compare-and-swap of ``commit``.

        Only the paths that differ from the tip are written to the work tree and
        Git's index; a user's uncommitted edit to one of them is refused. Returns
        None when the tree equals the tip's (nothing to do). The caller holds
        ``write_lock``.
        """
        if "\x00" in message:
            raise GitError("a commit message may not contain NUL")
        ref = self.reader.head_ref()
        author_sig = pygit2.Signature(*author)
        committer_sig = pygit2.Signature(*(committer or author))
        for _attempt in range(_MAX_CAS_RETRIES):
            tip = self.reader.branch_tip(ref)
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
            index = self.staging.read_index()
            allowed = self.guards.check_not_dirty(
                [Change(p, self.reader.read_object(str(oid)), base) for p, oid, base in writes], base_tree, index)
            for rel, base in removes:
                self._check_removable(rel, base, index)
            for (rel, oid, _), ok in zip(writes, allowed):
                self.worktree.write_file(rel, self.reader.read_object(str(oid)), allowed=ok)
            for rel, _ in removes:
                target = self.worktree.safe_target(rel)
                target.unlink(missing_ok=True)
            try:
                oid = self._create_commit(ref, author_sig, committer_sig, message, pygit2.Oid(hex=tree_id), tip)
            except _Moved:
                continue
            self.staging.update_index([(p, o) for p, o, _ in writes], removed=[p for p, _ in removes])
            return str(oid)
        raise GitError(f"could not move {ref}: it kept changing under am")

    def _check_removable(self, rel: PurePosixPath, base: str, index: IndexView) -> None:
        full = self.root / rel
        try:
            on_disk: str | None = hash_blob(full.read_bytes())
        except FileNotFoundError:
            on_disk = None
        staged = index.staged(str(rel))
        if on_disk not in (base, None) or (staged is not None and staged != base):
            raise DirtyFileError(f"{rel} has uncommitted changes",
                                 hint="commit or discard them first, then retry")

    def stage_paths(self, paths: Sequence[PurePosixPath]) -> None:
        """Set Git's index entries of these paths to their blobs in HEAD (repairs an interrupted write)."""
        entries = []
        for rel in paths:
            oid = self.reader.blob_id(rel)
            if oid is not None and (self.root / rel).is_file():
                entries.append((rel, pygit2.Oid(hex=oid)))
        if entries:
            self.staging.update_index(entries)

    def work_tree_status(self) -> dict[str, str]:
        """Return {path: 'untracked'|'modified'|'deleted'|'staged'} for files that differ from HEAD."""
        out: dict[str, str] = {}
        FS = pygit2.enums.FileStatus
        try:
            found = self.repo.status(untracked_files="all").items()
        except pygit2.GitError as err:
            raise GitError(f"could not compare the work tree with Git's index: {err}",
                           hint="run: am doctor --fix (it rebuilds the index from HEAD)") from None
        for path, flags in found:
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
        if self.reader.common_dir() != self.gitdir:  # a linked worktree: its branches' locks are in the common folder
            candidates += [self.reader.common_dir() / "packed-refs.lock", *(self.reader.common_dir() / "refs").rglob("*.lock")]
        now = time.time()
        for lock in candidates:
            try:
                found.append((lock, now - lock.stat().st_mtime))
            except FileNotFoundError:
                continue
        return found

    def left_by_dead_am(self, lock: Path) -> bool:
        """Return whether a Git lock file was left by an am process that is gone (cleared without waiting)."""
        return inflight.owned_by_dead_am(lock, inflight.read(self.staging.am_dir))

    def clear_stale_git_locks(self) -> list[Path]:
        """Move aside Git lock files older than AM_GIT_LOCK_STALE or left by a dead am; return them. Hold write_lock."""
        moved = []
        for lock, age in self.git_locks():
            if (age >= common._GIT_LOCK_STALE or self.left_by_dead_am(lock)) and self.staging.clear_stale_git_lock(lock):
                moved.append(lock)
        return moved

    def _create_commit(self, ref: str, author: pygit2.Signature, committer: pygit2.Signature,
                       message: str, tree: pygit2.Oid, tip: str | None) -> pygit2.Oid:
        """Commit ``tree`` on ``ref`` in one libgit2 call (it moves the ref); raise _Moved if ``ref`` left ``tip``."""
        lock = self.staging.ref_lock(ref)
        deadline = time.monotonic() + common._GIT_LOCK_WAIT
        while True:
            try:
                parents = [] if tip is None else [pygit2.Oid(hex=tip)]
                return self.repo.create_commit(ref, author, committer, message, tree, parents)
            except pygit2.GitError as err:
                # libgit2 re-checks the tip under the ref lock: someone moved it.
                if "current tip" in str(err) or "first parent" in str(err) or self.reader.branch_tip(ref) != tip:
                    raise _Moved() from None
                raise GitError(f"could not commit: {err}") from None
            except OSError as err:
                if "lock" not in str(err):
                    raise GitError(f"could not commit: {err}") from None
                self.staging.wait_git_lock(lock, deadline, error=err)
                if self.reader.branch_tip(ref) != tip:
                    raise _Moved() from None

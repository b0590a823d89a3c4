"""What keeps a write from harming anything that is not its own (``Guards``, used by write/transaction.py and repair.py).

* every request is checked the same way, whoever made it (``checks.py``);
* a repository that asks for signed commits is refused (am does not sign);
* a file to be written must hold the tip's version or the new one (the dirty
  check); the work tree re-checks that under the replace (write/worktree.py), so a
  person's edit that lands meanwhile is kept and the write refused;
* Git's index entries a killed or blocked write left out are set by the next
  write (``coord/inflight.py``), and entries are never staged on the index of a
  branch that was checked out while am was writing.

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import errno
import os
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath

import pygit2

import am.git.checks as checks
import am.git.coord.inflight as inflight
from am.errors import (
    AmError,
    ConflictError,
    DirtyFileError,
    GitError,
    PathTakenError,
    UsageError,
    storage_error,
)
from am.git.common import log
from am.git.coord.group import Request
from am.git.reading import Reader, tree_blob_ids
from am.git.staging import IndexView, Staging
from am.git.formats.trees import Kept
from am.git.values import Change, hash_blob, hash_file, worktree_blob_id
from am.git.write.worktree import WorkTree

_TRUE = frozenset({"true", "yes", "on", "1"})
# am's temporary files in .git/am/ and its queue, each naming the process that wrote it (coord/spool.py, staging.py, coord/inflight.py).
_LEFTOVER = re.compile(r"^(?:index\.(?P<pid>\d+)\.tmp|\.inflight\.(?P<pid2>\d+)\.tmp"
                       r"|\.?(?P<pid3>\d+)-\d+-[0-9a-f]+\.(?:req|claimed|done|tmp|done\.tmp))$")


def _read_only(folder: Path) -> bool:
    """Return whether a folder is on a file system mounted read-only."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


class Guards:
    """Request checks, signing, the dirty check and index healing."""

    def __init__(self, reader: Reader, staging: Staging, worktree: WorkTree,
                 config_value: Callable[[str], str | None]) -> None:
        self.reader = reader
        self.staging = staging
        self.worktree = worktree
        self.config_value = config_value  # the store's (its Config is kept there)
        self.repo = reader.repo
        self.root = reader.root
        self.gitdir = reader.gitdir
        self._am_dir = staging.am_dir
        self._signing_memo: tuple[float, bool] | None = None
        # Git's mode of each entry ``to_heal`` returned last that is not a 100644 file (a killed sync's
        # executables and links): staged with that mode, as HEAD's tree has it.
        self.heal_modes: dict[str, int] = {}

    def check_not_dirty(self, changes: Sequence[Change], base_tree: pygit2.Tree | None, index: IndexView, *,
                         odb: pygit2.Repository | None = None, kept: Kept | None = None) -> list[frozenset[str | None]]:
        """Raise if a file to be written carries someone else's change; return each file's allowed blob ids.

        What may be on disk is the tip's version or the new one (a retried
        write); ``write_file`` checks that again under its replace.
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
                on_disk = self.worktree.as_git_sees(full, p, on_disk)  # as git compares it, after its filters
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


    def check_request(self, r: Request) -> None:
        """Raise the error of a request a write must not commit (paths, identities, message)."""
        if not isinstance(r.message, str) or "\x00" in r.message:
            raise GitError("a commit message may not contain NUL")
        checks.check_message(r.message)
        for c in r.changes:
            checks.check_path(c.path, records_only=r.records_only)
            if not isinstance(c.data, bytes):
                raise UsageError(f"refused to write {c.path}: its content is not bytes")
        checks.check_who(r.author, field="author")
        if r.committer is not None:
            checks.check_who(r.committer, field="committer")
        if r.remote is not None:
            self.check_queued(r)

    def check_queued(self, r: Request) -> None:
        """Raise the error of a request from the queue that a direct write would have had (checks.check_queued)."""
        def committed(blob: str) -> bytes | None:
            try:
                return bytes(self.repo[blob].peel(pygit2.Blob).data)
            except (KeyError, ValueError, pygit2.GitError):
                return None

        checks.check_queued(r.changes, r.message, r.author, committed=committed)

    def check_writable(self) -> None:
        """Refuse a write before anything is done when Git's folder cannot be written (Git's index lives there).

        Without this, an immutable or read-only ``.git`` let the commit land
        (objects and refs are in folders below it) and left Git's index
        behind, saying the new files were deleted.
        """
        if not os.access(self.gitdir, os.W_OK):
            err = OSError(errno.EROFS if _read_only(self.gitdir) else errno.EPERM, "not writable", str(self.gitdir))
            raise storage_error(err, f"write in Git's folder {self.gitdir}")

    def check_signing(self) -> None:
        """Refuse to write where Git is configured to sign every commit (am would write unsigned ones).

        Looked up at most once a second: each lookup is a libgit2 call that
        lets go of Python's lock, which busy writer threads then hold ~0.5 ms.
        """
        now = time.monotonic()
        memo = self._signing_memo
        if memo is None or now - memo[0] >= 1.0:
            refused = ((self.config_value("commit.gpgsign") or "").lower() in _TRUE
                       and (self.config_value("am.allowUnsigned") or "").lower() not in _TRUE)
            memo = self._signing_memo = (now, refused)
        if not memo[1]:
            return
        raise GitError(
            "this repository signs every commit (commit.gpgsign=true), and am does not sign its commits",
            hint="let am write unsigned commits here with: git config am.allowUnsigned true "
                 "(or turn signing off: git config commit.gpgsign false)",
        )

    def sweep_leftovers(self) -> None:
        """Remove what killed am writers left in `.git/am/` (once a process; the write lock is held).

        Temporary index files and notes, and queue files of processes that
        are gone: their writes were never acknowledged (a live writer's
        request stays, its lock says it lives). Temporary packs go with the
        pack merge (formats/packs.py).
        """
        group = self.staging.process_group()
        if group.swept:
            return
        group.swept = True
        for folder in (self._am_dir, self._am_dir / "queue"):
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                m = _LEFTOVER.match(name)
                if m is None:
                    continue
                pid = int(m["pid"] or m["pid2"] or m["pid3"])
                if pid == os.getpid() or inflight.pid_alive(pid):
                    continue
                try:
                    os.unlink(folder / name)
                except OSError:
                    pass

    # ------------------------------------------------------------ Git's index after a killed or moved write

    def _drifted(self, note: inflight.Note) -> list[tuple[PurePosixPath, pygit2.Oid]]:
        """Return the noted entries Git's index still lacks: HEAD, the note and the work-tree file agree on them."""
        ref = self.staging.head_branch()
        tip = None if ref is None else self.reader.branch_tip(ref)
        if tip is None:
            return []
        tree = self.repo[tip].peel(pygit2.Tree)
        index = self.staging.read_index()
        out = []
        modes: dict[str, int] = {}
        # Each folder's tree found once: a killed import's note holds a whole batch of one large folder.
        committed = tree_blob_ids(self.repo, tree, [str(path) for path, _ in note.entries], kinds=None, modes=modes)
        root = f"{self.root}/"
        for path, oid in note.entries:
            if committed[str(path)] != oid:
                continue
            if index.staged(str(path)) == oid:
                continue
            try:
                if worktree_blob_id(root + str(path)) != oid:  # a link's blob is its target, as Git stages it
                    continue
            except OSError:
                continue
            out.append((path, pygit2.Oid(hex=oid)))
        self.heal_modes = {str(p): modes[str(p)] for p, _ in out if str(p) in modes}
        return out

    def to_heal(self) -> list[tuple[PurePosixPath, pygit2.Oid]]:
        """Return the index entries an unfinished earlier write left out (held write lock: no batch is under way).

        Their modes, where not 100644, are left in ``heal_modes`` for the index to take with them.
        """
        self.heal_modes = {}
        note = inflight.read(self._am_dir)
        if note is None:
            return []
        if note.dead():
            # Killed inside the branch move or the index update: its lock files go at once.
            for lock in (self.staging.ref_lock(note.ref), self.gitdir / "index.lock"):
                if inflight.owned_by_dead_am(lock, note):
                    self.staging.clear_stale_git_lock(lock)
        try:
            heal = self._drifted(note)
        except (AmError, OSError, pygit2.GitError) as err:
            log.warning("could not check Git's index against an unfinished write (%s); am doctor will", err)
            return []
        if not heal:
            inflight.clear(self._am_dir)
        elif heal:
            log.info("setting %d index entries an unfinished write left out", len(heal))
        return heal

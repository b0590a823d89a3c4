"""What keeps a write from harming anything that is not its own (used by writing.py).

* every request is checked the same way, whoever made it (``checks.py``);
* a repository that asks for signed commits is refused (am does not sign);
* a work-tree file is replaced only if it is still what the dirty check saw,
  re-checked under the replace: a person's edit that lands meanwhile is kept
  and the write refused;
* Git's index entries a killed or blocked write left out are set by the next
  write (``inflight.py``), and entries are never staged on the index of a
  branch that was checked out while am was writing.
"""

from __future__ import annotations

import errno
import os
import re
import time
from pathlib import Path, PurePosixPath

import pygit2

import am.git.checks as checks
import am.git.inflight as inflight
import am.git.lease as lease
from am.errors import AmError, DirtyFileError, GitError, UsageError, storage_error
from am.git.common import _fsync_dir, log
from am.git.group import Request
from am.git.reading import tree_blob_ids
from am.git.staging import Staging
from am.git.values import hash_blob, hash_fd

_TRUE = frozenset({"true", "yes", "on", "1"})
# am's temporary files in .git/am/ and its queue, each naming the process that wrote it (spool.py, staging.py, inflight.py).
_LEFTOVER = re.compile(r"^(?:index\.(?P<pid>\d+)\.tmp|\.inflight\.(?P<pid2>\d+)\.tmp"
                       r"|\.?(?P<pid3>\d+)-\d+-[0-9a-f]+\.(?:req|claimed|done|tmp|done\.tmp))$")


def os_error(err: OSError, what: str) -> GitError:
    """Return the one-line error for a failed file operation (am.errors.storage_error)."""
    return storage_error(err, what)


def _read_only(folder: Path) -> bool:
    """Return whether a folder is on a file system mounted read-only."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _read_all(fd: int) -> bytes:
    """Read a whole file from the start through an open descriptor."""
    parts: list[bytes] = []
    at = 0
    while True:
        chunk = os.pread(fd, 1 << 20, at)
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)
        at += len(chunk)


class Guards(Staging):
    """Request checks, signing, the checked replace and index healing."""

    def _check_request(self, r: Request) -> None:
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

    def _check_writable(self) -> None:
        """Refuse a write before anything is done when Git's folder cannot be written (Git's index lives there).

        Without this, an immutable or read-only ``.git`` let the commit land
        (objects and refs are in folders below it) and left Git's index
        behind, saying the new files were deleted.
        """
        if not os.access(self.gitdir, os.W_OK):
            err = OSError(errno.EROFS if _read_only(self.gitdir) else errno.EPERM, "not writable", str(self.gitdir))
            raise storage_error(err, f"write in Git's folder {self.gitdir}")

    def _check_signing(self) -> None:
        """Refuse to write where Git is configured to sign every commit (am would write unsigned ones).

        Looked up at most once a second: each lookup is a libgit2 call that
        lets go of Python's lock, which busy writer threads then hold ~0.5 ms.
        """
        now = time.monotonic()
        memo: tuple[float, bool] | None = self.__dict__.get("_signing_memo")
        if memo is None or now - memo[0] >= 1.0:
            refused = ((self.config_value("commit.gpgsign") or "").lower() in _TRUE
                       and (self.config_value("am.allowUnsigned") or "").lower() not in _TRUE)
            memo = self.__dict__["_signing_memo"] = (now, refused)
        if not memo[1]:
            return
        raise GitError(
            "this repository signs every commit (commit.gpgsign=true), and am does not sign its commits",
            hint="let am write unsigned commits here with: git config am.allowUnsigned true "
                 "(or turn signing off: git config commit.gpgsign false)",
        )

    def _as_git_sees(self, file: Path, rel: PurePosixPath | str, raw: str) -> str:
        """Return the blob id git would store for a work-tree file, after its filters (autocrlf, attributes).

        Called only when the file's raw bytes match no expected blob: with
        ``core.autocrlf=true`` a checked-out record has CRLF line ends that
        git's clean filter turns back into the committed blob.
        """
        try:
            return str(self.repo.hashfile(str(file), as_path=str(rel)))
        except (pygit2.GitError, OSError, ValueError, TypeError):
            return raw

    def _sweep_leftovers(self) -> None:
        """Remove what killed am writers left in `.git/am/` (once a process; the write lock is held).

        Temporary index files and notes, and queue files of processes that
        are gone: their writes were never acknowledged (a live writer's
        request stays, its lock says it lives). Temporary packs go with the
        pack merge (packs.py).
        """
        group = self._process_group()
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

    # ------------------------------------------------------------ the checked replace

    def _replace_checked(self, rel: PurePosixPath, target: Path, tmp: Path,
                         allowed: frozenset[str | None], ours: bytes) -> None:
        """Put ``tmp`` at ``target`` only if the file there is one of ``allowed`` (blob ids; None: absent).

        The file in place is opened, leased (lease.py: a program opening it
        for writing meanwhile is seen) and checked, then replaced by the
        rename (so the name never goes missing: an editor's open-for-append
        never makes a new file). If a program began opening the old file for
        writing meanwhile, the old file is put back under its name before the
        lease is let go, so the person's write lands in it, and am's write is
        refused. Without leases, the old file is read again through the
        descriptor kept open: a write that reached it puts the person's
        version back. A new file is linked in, which fails if someone created
        one meanwhile (theirs stays).
        """
        try:
            fd = os.open(target, os.O_RDONLY)
        except FileNotFoundError:
            fd = None
        if fd is None:
            if None not in allowed:
                tmp.unlink(missing_ok=True)
                raise DirtyFileError(f"{rel} was deleted while am was writing it",
                                     hint="restore it (git checkout -- FILE) or commit the deletion, then retry")
            self._link_new(rel, target, tmp)
            return
        try:
            with lease.hold(fd) as held:
                raw = hash_fd(fd)  # a mebibyte at a time: a session log is not read whole
                seen = raw if raw in allowed else self._as_git_sees(target, rel, raw)
                if seen not in allowed:
                    tmp.unlink(missing_ok=True)
                    raise DirtyFileError(f"{rel} has uncommitted changes",
                                         hint="commit or discard them first (git add/commit or git checkout -- FILE), "
                                              "then retry")
                old = self._link_old(target) if held.held else None
                try:
                    mine = os.stat(tmp).st_ino
                    os.replace(tmp, target)
                except BaseException:
                    if old is not None:
                        os.unlink(old)
                    raise
                if held.broken():
                    self._restore_old(target, old, mine)
                    raise DirtyFileError(f"{rel} was opened for writing by another program while am was writing it",
                                         hint="their version is kept; commit or discard it, then retry")
                changed = hash_fd(fd) != raw
                theirs = _read_all(fd) if changed else b""
                if old is not None:
                    os.unlink(old)
            if changed:
                self._put_back(target, theirs, ours)
                raise DirtyFileError(f"{rel} was changed by someone else while am was writing it",
                                     hint="their version is kept; commit or discard it, then retry")
        except lease.FileBusy:
            tmp.unlink(missing_ok=True)
            raise DirtyFileError(f"{rel} is open for writing in another program",
                                 hint="save and close it there (or wait for it to finish), then retry") from None
        finally:
            os.close(fd)

    @staticmethod
    def _link_old(target: Path) -> str | None:
        """Give the file about to be replaced a second name, so it can be put back; None if that cannot be done."""
        old = lease.backup_name(target)
        try:
            os.unlink(old)  # left by a killed process with this one's pid
        except FileNotFoundError:
            pass
        try:
            os.link(target, old)
        except OSError:
            return None
        return old

    @staticmethod
    def _restore_old(target: Path, old: str | None, mine: int) -> None:
        """Put the replaced file back under its name (a program is about to write to it); keep it aside if that name was taken again."""
        if old is None:
            log.warning("%s was opened for writing while am replaced it, and its old file could not be kept", target)
            return
        try:
            still_mine = os.stat(target).st_ino == mine
        except FileNotFoundError:
            still_mine = True
        if still_mine:
            os.replace(old, target)
            return
        kept = target.with_name(f"{target.name}.am-kept-{os.getpid()}")
        os.replace(old, kept)
        log.warning("%s changed twice while am was writing it; the earlier version is in %s", target, kept)

    def _remove_checked(self, rel: PurePosixPath, target: Path, ours: bytes) -> None:
        """Remove a work-tree file am wrote, only if it is still am's (leased as in ``_replace_checked``)."""
        try:
            fd = os.open(target, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            with lease.hold(fd) as held:
                if _read_all(fd) != ours:
                    raise DirtyFileError(f"{rel} was changed by someone else while am was writing it")
                aside = lease.backup_name(target)
                os.replace(target, aside)
                if held.broken() or _read_all(fd) != ours:
                    try:
                        os.link(aside, target)  # back under its name, unless someone made a new one there
                        os.unlink(aside)
                    except FileExistsError:
                        kept = target.with_name(f"{target.name}.am-kept-{os.getpid()}")
                        os.replace(aside, kept)
                        log.warning("%s changed twice while am removed it; the earlier version is in %s", target, kept)
                    raise DirtyFileError(f"{rel} was opened for writing by another program while am removed it")
                os.unlink(aside)
        except lease.FileBusy:
            raise DirtyFileError(f"{rel} is open for writing in another program") from None
        finally:
            os.close(fd)

    def _link_new(self, rel: PurePosixPath, target: Path, tmp: Path) -> None:
        """Put a new file in place unless someone made one there meanwhile."""
        try:
            os.link(tmp, target)
        except FileExistsError:
            tmp.unlink(missing_ok=True)
            raise DirtyFileError(f"{rel} was created by someone else while am was writing it",
                                 hint="look at it, commit or remove it, then retry") from None
        except OSError as err:
            if err.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            os.replace(tmp, target)  # a file system without hard links: the rename is the best there is
            return
        tmp.unlink()

    def _put_back(self, target: Path, theirs: bytes, ours: bytes) -> None:
        """Put a person's version back over am's file; if that changed too, keep theirs beside it."""
        back = target.with_name(f".{target.name}.am-{os.getpid()}.back")
        back.write_bytes(theirs)
        try:
            now = target.read_bytes()
        except FileNotFoundError:
            now = ours
        if now == ours:
            os.replace(back, target)
            return
        kept = target.with_name(f"{target.name}.am-kept-{os.getpid()}")
        os.replace(back, kept)
        log.warning("%s changed twice while am was writing it; the earlier version is in %s", target, kept)

    def _write_new_file(self, rel: PurePosixPath, target: Path, data: bytes, sync: bool,
                        allowed: frozenset[str | None] | None) -> None:
        """Write ``data`` to a temporary file beside ``target`` and put it in place (checked when ``allowed``)."""
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
        if allowed is None:
            os.replace(tmp, target)
        else:
            self._replace_checked(rel, target, tmp, allowed, data)
        if sync:
            _fsync_dir(target.parent)

    # ------------------------------------------------------------ Git's index after a killed or moved write

    def _drifted(self, note: inflight.Note) -> list[tuple[PurePosixPath, pygit2.Oid]]:
        """Return the noted entries Git's index still lacks: HEAD, the note and the work-tree file agree on them."""
        ref = self._head_branch()
        tip = None if ref is None else self.branch_tip(ref)
        if tip is None:
            return []
        tree = self.repo[tip].peel(pygit2.Tree)
        index = self._read_index()
        out = []
        # Each folder's tree found once: a killed import's note holds a whole batch of one large folder.
        committed = tree_blob_ids(self.repo, tree, [str(path) for path, _ in note.entries], kinds=None)
        for path, oid in note.entries:
            if committed[str(path)] != oid:
                continue
            if index.staged(str(path)) == oid:
                continue
            try:
                if hash_blob((self.root / path).read_bytes()) != oid:
                    continue
            except OSError:
                continue
            out.append((path, pygit2.Oid(hex=oid)))
        return out

    def _to_heal(self) -> list[tuple[PurePosixPath, pygit2.Oid]]:
        """Return the index entries an unfinished earlier write left out (held write lock: no batch is under way)."""
        note = inflight.read(self._am_dir)
        if note is None:
            return []
        if note.dead():
            # Killed inside the branch move or the index update: its lock files go at once.
            for lock in (self._ref_lock(note.ref), self.gitdir / "index.lock"):
                if inflight.owned_by_dead_am(lock, note):
                    self._clear_stale_git_lock(lock)
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

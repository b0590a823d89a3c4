"""The work tree's files as a write changes them: each replaced only if it is still what the dirty check saw.

* a file is written to a temporary name beside it and put in place by a rename
  (fsynced, with its folder, unless the batch's one syncfs does it);
* the file in place is leased and checked under the replace (``_replace_checked``):
  a person's edit that lands meanwhile is kept and the write refused;
* a failed write's files are put back (``roll_back``), checked the same way.

Owned by ``GitStore`` (am/git/store.py); used by the write transaction (write/transaction.py)
and repairs (repair.py).

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

import pygit2

import am.git.coord.lease as lease
from am.errors import AmError, DirtyFileError, GitError, storage_error
from am.git.common import _fsync_dir, log
from am.git.values import Change, hash_blob, hash_fd


def os_error(err: OSError, what: str) -> GitError:
    """Return the one-line error for a failed file operation (am.errors.storage_error)."""
    return storage_error(err, what)


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


class WorkTree:
    """Writing, checking and putting back the work tree's files of a write."""

    def __init__(self, repo: pygit2.Repository, root: Path) -> None:
        self.repo = repo
        self.root = root

    def as_git_sees(self, file: Path, rel: PurePosixPath | str, raw: str) -> str:
        """Return the blob id git would store for a work-tree file, after its filters (autocrlf, attributes).

        Called only when the file's raw bytes match no expected blob: with
        ``core.autocrlf=true`` a checked-out record has CRLF line ends that
        git's clean filter turns back into the committed blob.
        """
        try:
            return str(self.repo.hashfile(str(file), as_path=str(rel)))
        except (pygit2.GitError, OSError, ValueError, TypeError):
            return raw

    def safe_target(self, rel: PurePosixPath) -> Path:
        parts, parent = rel.parts, str(self.root)
        for i in range(len(parts)):  # each folder on the way, then the file: strings, not a Path a step
            parent = f"{parent}/{parts[i]}"
            if os.path.islink(parent):
                raise DirtyFileError(f"{'/'.join(parts[:i + 1])} is a symbolic link; am will not write through it")
        return self.root / rel

    def write_file(self, rel: PurePosixPath, data: bytes, *, sync: bool = True,
                    allowed: frozenset[str | None] | None = None) -> None:
        """Write a work-tree file atomically; with ``allowed``, only over one of those versions (see ``_replace_checked``)."""
        target = self.safe_target(rel)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            self._write_new_file(rel, target, data, sync, allowed)
        except (FileExistsError, NotADirectoryError) as err:
            raise os_error(err, f"write {rel}") from None
        except OSError as err:
            if isinstance(err, (FileNotFoundError, InterruptedError)):
                raise
            raise os_error(err, f"write {rel}") from None

    def _replace_checked(self, rel: PurePosixPath, target: Path, tmp: Path,
                         allowed: frozenset[str | None], ours: bytes) -> None:
        """Put ``tmp`` at ``target`` only if the file there is one of ``allowed`` (blob ids; None: absent).

        The file in place is opened, leased (coord/lease.py: a program opening it
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
                seen = raw if raw in allowed else self.as_git_sees(target, rel, raw)
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

    def read_or_none(self, rel: PurePosixPath) -> bytes | None:
        try:
            return (self.root / rel).read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            return None

    def roll_back(self, changes: Sequence[Change], previous: dict[PurePosixPath, bytes | None]) -> None:
        """Put back the work-tree files of a write that failed before its commit (only if still ours)."""
        for c in changes:
            if self.read_or_none(c.path) != c.data or c.path not in previous:
                continue
            before = previous[c.path]
            if before == c.data:
                continue  # the file holds what it held before (an orphan committed as it was): nothing to put back
            # Checked as any write is: a person's edit that reaches the file meanwhile is kept.
            try:
                if before is None:
                    self._remove_checked(c.path, self.safe_target(c.path), c.data)
                else:
                    self.write_file(c.path, before, allowed=frozenset((hash_blob(c.data),)))
            except DirtyFileError:
                log.info("%s was edited while am put it back after a failed write; the edit is kept", c.path)
            except (OSError, AmError) as err:
                log.warning("could not put back %s after a failed write: %s", c.path, err)

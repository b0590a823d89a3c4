"""Reading the work tree as Git stores it: regular files only, never through a symbolic link.

A vault is often a clone of someone else's repository, so its work tree is
untrusted input. Git stores a symbolic link as a link (its target is the
blob), never the file it points at, and does not store FIFOs or devices at
all. am reads the same way: a record file is read only when it is a regular
file reached without following any link, and only up to a size cap checked
before reading (a link to ``/dev/zero`` or a FIFO must not exhaust memory or
hang a command). Anything else is reported as a problem, never as a record.

Pure ``os`` calls, no pygit2: a read on a fresh cache must not import it.

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from collections.abc import Iterable, Iterator
from typing import Self

__all__ = ["UNREAD_BLOB", "WorkFile", "WorkTreeReader", "is_real_dir", "markdown_files", "read_work_file",
           "real_subdirs"]

# The blob id a cache records for a file it did not read (too large, a FIFO): never a real one, so the
# file counts as differing from HEAD and is looked at again by every command (a stat, not a read).
UNREAD_BLOB = "-"

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


@dataclass(frozen=True)
class WorkFile:
    """One work-tree file as am may read it: its bytes, or why it was not read."""

    stat: os.stat_result
    data: bytes | None
    problem: str | None = None
    link: bytes | None = None  # a symbolic link's target: what Git stores for it

    def blob_source(self) -> bytes | None:
        """Return the bytes Git would store for this entry (the file, or a link's target), None if unread."""
        return self.data if self.data is not None else self.link


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def is_real_dir(path: str) -> bool:
    """Return whether ``path`` is a folder itself, not a symbolic link to one."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def real_subdirs(dirpath: str, names: list[str]) -> list[str]:
    """Return the names that are folders themselves (not links to one) and not hidden, sorted (for os.walk)."""
    return sorted(d for d in names if not d.startswith(".") and is_real_dir(os.path.join(dirpath, d)))


def markdown_files(root: str, tops: Iterable[str]) -> Iterator[str]:
    """Yield the vault-relative path of every ``.md`` file under each of ``tops``, in order, sorted per folder.

    Dot-files and dot-folders are left out, and no link is followed (a top that is a link is skipped).
    """
    for top in tops:
        base = os.path.join(root, top)
        if not is_real_dir(base):
            continue  # missing, or a link: never followed out of the vault
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = real_subdirs(dirpath, dirnames)
            rel = top if dirpath == base else f"{top}/{os.path.relpath(dirpath, base).replace(os.sep, '/')}"
            for name in sorted(filenames):
                if name.endswith(".md") and not name.startswith("."):
                    yield f"{rel}/{name}"


class WorkTreeReader:
    """Reads files under one root without following links; keeps the last folder open (reads come sorted)."""

    def __init__(self, root: str, *, cap: int) -> None:
        self.root = root
        self.cap = cap
        self._dir: tuple[str, int] | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the folder kept open."""
        if self._dir is not None:
            os.close(self._dir[1])
            self._dir = None

    def _open_dir(self, folder: str) -> int | WorkFile | None:
        """Return a descriptor of a vault folder, why it cannot be read, or None when it does not exist."""
        if self._dir is not None and self._dir[0] == folder:
            return self._dir[1]
        self.close()
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        walked = []
        for part in folder.split("/") if folder else ():
            walked.append(part)
            try:
                inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as err:
                try:
                    st = os.lstat(part, dir_fd=fd)
                except OSError:
                    return None
                finally:
                    os.close(fd)
                if stat.S_ISLNK(st.st_mode):
                    return WorkFile(st, None, f"it is under {'/'.join(walked)}, a symbolic link "
                                              "(am never reads through one)")
                if stat.S_ISDIR(st.st_mode):
                    return WorkFile(st, None, f"its folder {'/'.join(walked)} cannot be opened ({err.strerror})")
                return None
            os.close(fd)
            fd = inner
        self._dir = (folder, fd)
        return fd

    def read(self, rel: str) -> WorkFile | None:
        """Return the file at a vault-relative POSIX path, or None when there is none."""
        folder, _, name = rel.rpartition("/")
        dir_fd = self._open_dir(folder)
        if dir_fd is None:
            return None
        if isinstance(dir_fd, WorkFile):
            return dir_fd
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            return None
        except OSError as err:
            try:
                st = os.lstat(name, dir_fd=dir_fd)
            except FileNotFoundError:
                return None
            if stat.S_ISLNK(st.st_mode):
                try:
                    target = os.readlink(name.encode(), dir_fd=dir_fd)
                except OSError:
                    target = b""
                shown = target.decode("utf-8", "replace")
                return WorkFile(st, None, f"a symbolic link to {shown} (am reads the link as Git stores it, "
                                          "not the file it points at)", target)
            return WorkFile(st, None, f"{_kind(st.st_mode)}; it cannot be opened ({err.strerror})")
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return WorkFile(st, None, f"{_kind(st.st_mode)}, not a regular file (am reads only those)")
            if st.st_size > self.cap:
                return WorkFile(st, None, f"larger than {self.cap // 1024} KiB ({st.st_size} bytes)")
            chunks = []
            left = self.cap + 1
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            data = b"".join(chunks)
            if len(data) > self.cap:
                return WorkFile(st, None, f"larger than {self.cap // 1024} KiB (it grew while read)")
            return WorkFile(st, data)
        finally:
            os.close(fd)


def read_work_file(root: str, rel: str, *, cap: int) -> WorkFile | None:
    """Read one file under ``root`` as ``WorkTreeReader.read`` does."""
    with WorkTreeReader(root, cap=cap) as reader:
        return reader.read(rel)


def read_capped(root: str, rel: str, *, cap: int, hint: str) -> bytes | None:
    """Return a file's bytes read as ``read_work_file`` does; None when there is none; raise when it is not read."""
    from am.errors import InvalidRecordError

    found = read_work_file(root, rel, cap=cap)
    if found is None:
        return None
    if found.data is None:
        raise InvalidRecordError(f"{found.problem}", path=rel, hint=hint)
    return found.data

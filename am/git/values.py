"""The values and small helpers every part of am's Git code shares: no pygit2, nothing else of am.git but its ref files.

``Change`` (a file a write puts in the tree), ``CommitInfo`` (a commit as am
reads it), the crash tests' failpoints and Git's blob ids. It is the floor of
``am.git``: every other module may import it, it imports only ``am.git.refs``
(where ``failpoint`` lives, for processes that cannot afford dataclasses).
``am.git.light`` re-exports it for code above ``am.git``.

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from am.git.refs import failpoint

__all__ = ["FAILPOINTS", "Change", "CommitInfo", "failpoint", "hash_blob", "hash_fd", "hash_file",
           "worktree_blob_id"]

FAILPOINTS = (
    "before-write",      # lock held, nothing written
    "after-file",        # working-tree file written, no commit
    "after-objects",     # the batch's commits written (unsynced), branch not moved
    "after-commit",      # commit created and branch moved, Git's index not updated
    "index-locked",      # branch moved, .git/index.lock taken, the index not yet replaced
    "after-index",       # index updated, cache not yet
)

def hash_blob(data: bytes | memoryview) -> str:
    """Return the Git blob id of some bytes."""
    import hashlib  # OpenSSL's start-up (~5 ms) is paid only by commands that hash files

    # Git's object id: SHA-1 of "blob <size>\0" and the bytes (what pygit2.hash computes), fed in two
    # parts so that a large file (a session log) is not copied to be hashed.
    digest = hashlib.sha1(b"blob %d\x00" % len(data))
    digest.update(data)
    return digest.hexdigest()


def worktree_blob_id(path: str) -> str | None:
    """Return the Git blob id of the work-tree entry at ``path`` as Git would stage it, or None (none, or a folder).

    A symbolic link's blob is its target, never the file it points to (what
    ``git add`` stores under mode 120000); a file's is its bytes.
    """
    import os
    import stat

    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            return hash_blob(os.fsencode(os.readlink(path)))
        if not stat.S_ISREG(st.st_mode):
            return None
        fd = os.open(path, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        return hash_fd(fd)
    finally:
        os.close(fd)


def hash_fd(fd: int) -> str:
    """Return the Git blob id of a file read through an open descriptor from its start, a mebibyte at a time.

    A large file (a session log) is never held whole to be hashed. Should the
    file change size while it is read, it is read whole and hashed as read.
    """
    import hashlib
    import os

    size = os.fstat(fd).st_size
    digest = hashlib.sha1(b"blob %d\x00" % size)
    at = 0
    while chunk := os.pread(fd, 1 << 20, at):
        digest.update(chunk)
        at += len(chunk)
    if at != size:
        parts, at = [], 0
        while chunk := os.pread(fd, 1 << 20, at):
            parts.append(chunk)
            at += len(chunk)
        return hash_blob(b"".join(parts))
    return digest.hexdigest()


def hash_file(path: Path) -> str:
    """Return the Git blob id of a file's bytes, read a mebibyte at a time (FileNotFoundError if absent)."""
    import os

    fd = os.open(path, os.O_RDONLY)
    try:
        return hash_fd(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Change:
    """One file a write puts in the tree; ``base`` is the blob it was computed from (None: new)."""

    path: PurePosixPath
    data: bytes
    base: str | None = None
    # The blob id of ``data`` when it was already written to the object store (am/git/formats/bigblob.py): the write
    # names it instead of handing the bytes to libgit2 again (which copies a buffer it writes to a backend).
    blob: str | None = None


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

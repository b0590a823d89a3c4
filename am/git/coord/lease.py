"""Knowing when another program opens a work-tree file for writing while am replaces it (used by write/worktree.py).

am replaces a file by renaming a new one over it. A program that opened the
old file just before the rename (an editor saving with ``open(O_APPEND)``,
Obsidian's ``writeFile``) and writes just after would write into a file that
no longer has a name: the person's edit would be lost without a trace.

Linux file leases (``fcntl(F_SETLEASE)``) close that window. A read lease:

* cannot be taken while any program has the file open for writing (am then
  waits a moment, and refuses the write if the file stays open);
* makes any other ``open()`` for writing or truncation of the file wait in the
  kernel until the lease is let go, and marks the lease as being broken.

So am takes the lease, checks the file, renames its own over it, and looks at
the lease before letting it go: if someone began opening the old file
meanwhile, the old file is put back under its name first (a hard link made
before the rename), so their write lands where they meant it to, and am's
write is refused.

The kernel tells the lease holder of a break with a signal (SIGIO unless set
otherwise, which would end the process); am asks for SIGURG, which every
process ignores by default, and reads the lease state instead.

Where leases are not available (not Linux, a file system without them, a file
owned by another user), ``hold`` yields a lease that never reports a break and
the re-read of the old file through its descriptor (write/worktree.py) is the check.

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import errno
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["FileBusy", "Lease", "hold"]

# How long am waits for a program that has the file open for writing to close it.
_BUSY_WAIT = 1.0


class FileBusy(Exception):
    """The file stayed open for writing by another program."""


class Lease:
    """A read lease on an open file, or none (``held`` False)."""

    def __init__(self, fd: int, held: bool) -> None:
        self.fd = fd
        self.held = held

    def broken(self) -> bool:
        """Return whether another program has begun opening the file for writing since the lease was taken."""
        if not self.held or fcntl is None:
            return False
        try:
            # While a break is pending the kernel reports the type the breaker needs (F_UNLCK).
            return bool(fcntl.fcntl(self.fd, fcntl.F_GETLEASE) != fcntl.F_RDLCK)
        except OSError:
            return True


def _take(fd: int) -> bool:
    """Take a read lease on ``fd``; False where leases are not available. Raise FileBusy if it stays open for writing."""
    setlease = getattr(fcntl, "F_SETLEASE", None)
    setsig = getattr(fcntl, "F_SETSIG", None)
    if fcntl is None or setlease is None or setsig is None:
        return False
    try:
        fcntl.fcntl(fd, setsig, signal.SIGURG)  # a break must not deliver SIGIO, whose default ends the process
    except OSError:
        return False
    deadline = time.monotonic() + _BUSY_WAIT
    while True:
        try:
            fcntl.fcntl(fd, setlease, fcntl.F_RDLCK)
            return True
        except OSError as err:
            if err.errno != errno.EAGAIN:
                return False  # EACCES (another user's file), EINVAL (no leases on this file system), ...
            if time.monotonic() >= deadline:
                raise FileBusy() from None
            time.sleep(0.005)


@contextmanager
def hold(fd: int) -> Iterator[Lease]:
    """Hold a read lease on ``fd`` (opened read-only) for the block, let go at its end."""
    lease = Lease(fd, _take(fd))
    try:
        yield lease
    finally:
        if lease.held:
            try:
                fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
            except OSError:
                pass  # closing the descriptor lets it go too


def backup_name(target: os.PathLike[str] | str) -> str:
    """Return the name of the hard link that keeps the old file reachable while it is replaced."""
    head, tail = os.path.split(os.fspath(target))
    return os.path.join(head, f".{tail}.am-{os.getpid()}.old")

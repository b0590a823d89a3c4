"""Shared pieces of the Git store: fsync control, lock waits; the value types and failpoints live in am/git/values.py.

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pygit2
from pygit2 import IndexEntry
from pygit2.enums import FileMode

log = logging.getLogger("am")

# libgit2 ignores core.fsync; memory that a power cut can eat is no memory.
pygit2.settings.enable_fsync_gitdir(True)
# libgit2 keeps parsed trees of at most 4 KiB in its object cache; a day's folder of
# facts passes that at ~75 facts, and was then read and parsed again on every
# lookup of a path in it (~0.1 ms at 50k facts). A source without times (an MCP
# memory file) puts a whole import in one day's folder: 1.1 MB at 20k facts, whose
# read and parse (~20-35 ms) came back on each of the write path's per-file checks,
# 80% of a 20k import. 32 MiB: a folder of ~600,000 facts (the cache's total stays
# libgit2's 256 MiB).
pygit2.settings.cache_object_limit(pygit2.enums.ObjectType.TREE, 32 << 20)

_GIT_LOCK_WAIT = float(os.environ.get("AM_GIT_LOCK_WAIT", "10"))
_GIT_LOCK_STALE = float(os.environ.get("AM_GIT_LOCK_STALE", "60"))
_MAX_CAS_RETRIES = 1000
def _load_syncfs() -> Any:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.syncfs
    except (OSError, AttributeError):  # not Linux: keep an fsync per object
        return None


_syncfs = _load_syncfs()


def _load_writeback() -> Any:
    try:
        call = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):  # not Linux: the file is flushed when it is synced, as before
        return None
    call.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)

    def start(fd: int) -> None:
        # SYNC_FILE_RANGE_WRITE: start writing the dirty pages out, do not wait. A
        # failure is not checked here: the syncfs or fsync that follows reports it.
        call(fd, 0, 0, 2)
    return start


# Starts the flush of a written file without waiting for it (a later syncfs or fsync finishes it).
start_writeback = _load_writeback()


class _StatEntry(IndexEntry):
    """An index entry that carries the file's stat data, so `git status` need not rehash it."""

    def __init__(self, path: str, object_id: pygit2.Oid, st: os.stat_result, *, mode: int = FileMode.BLOB) -> None:
        super().__init__(path, object_id, FileMode(mode))
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


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (os.write may write less than it is given)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _flock_now(fd: int) -> bool:
    """Take an exclusive flock on ``fd`` if it is free; return whether it was taken."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as err:
        if err.errno not in (errno.EAGAIN, errno.EACCES):
            raise
        return False


def _unlock_close(fd: int) -> None:
    """Release an flock taken on ``fd`` and close it (closed even if the release fails)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _flock_within(fd: int, timeout: float, progress: Callable[[], object] | None = None) -> bool:
    """Take an exclusive flock on ``fd``, waiting at most ``timeout`` seconds; return whether it was taken.

    ``progress``: a mark of other writers getting through (``_progress_mark``); while it changes
    from one ``timeout`` to the next, the wait goes on, so only ``timeout`` seconds in which
    nobody got anywhere give up.

    Waiting is a blocking flock in a helper thread, not polling: with polling,
    a writer that just released the lock wins it back before sleepers wake, and
    16 busy writers starved one past a 30 s timeout. The thread waits on a dup
    of ``fd`` (same open file, same lock); if we give up first, it drops its
    dup when it finally gets the lock, which releases it.
    """
    if _flock_now(fd):
        return True
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
    seen = progress() if progress is not None else None
    while not got.wait(timeout):
        mark = progress() if progress is not None else None
        if progress is None or mark == seen:
            break
        seen = mark
    else:
        return True
    with guard:
        if got.is_set():
            return True
        abandoned = True
    return False


class _Moved(Exception):
    """The branch moved between reading its tip and creating the commit."""

"""The cache's database file: its lock, its stamp, the cheap damage checks, moving it aside.

No SQL here (am/cache/index.py owns the connection): this module only looks at the
file. The main database file changes only when the WAL is checkpointed, and am
does that under ``.am/cache/index.lock``, after which it records the file's
size, modification time and inode in ``index.sqlite.stamp``. A file that does
not match its stamp was changed by something else (a crash before the stamp,
or damage) and must be checked before it is trusted.

Decisions: docs/decisions/cache.md.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["DB_NAME", "CacheDamaged", "CacheFile", "distrust_opened"]

log = logging.getLogger("am")

DB_NAME = "index.sqlite"
_MAGIC = b"SQLite format 3\x00"


class CacheDamaged(Exception):
    """The cache file cannot be trusted; the message says why."""


class _ProcessLock:
    """One lock file as this process holds it: re-entrant across its threads and finalizers.

    flock belongs to an open file, so two opens of the same lock file in one
    process exclude each other: a thread (or a garbage-collector finalizer
    running inside it) that took the lock and asks again would wait for itself
    forever. So a process holds each lock file through one descriptor, counted.
    """

    def __init__(self) -> None:
        self.mutex = threading.RLock()
        self.depth = 0
        self.fd = -1
        self.exclusive = False


_LOCKS: dict[str, _ProcessLock] = {}
_LOCKS_GUARD = threading.Lock()


def _process_lock(path: Path) -> _ProcessLock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(str(path), _ProcessLock())


def _flock(fd: int, mode: int, deadline: float | None) -> bool:
    if deadline is None:
        fcntl.flock(fd, mode)
        return True
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)


# How many connections this process has open on each database file. POSIX drops
# every lock a process holds on a file when it closes any descriptor of that file,
# so reading the header with open() and close() while one of this process's SQLite
# connections has the file open would drop that connection's locks; another process
# closing its last connection would then take itself for the last user and delete
# the -shm file from under this one (seen: "disk I/O error" on every later open in
# this process). SQLite itself never closes such a descriptor early. So the header
# is read only while this process has no connection on the file.
_CONNECTED: dict[str, int] = {}
_CONNECTED_GUARD = threading.Lock()
_OPENED: set[Path] = set()  # the stamp of every cache file this process opened (see distrust_opened)


def distrust_opened() -> None:
    """Drop the stamp of every cache this process opened: one failed in use, so the next open checks it.

    A page damaged after am stamped the file (by the disk, or a restored copy) passes
    the cheap checks at open; SQLite finds it only when a query reads that page.
    Without its stamp, the next open runs ``PRAGMA quick_check``, and a damaged file
    is moved aside and rebuilt.
    """
    for stamp in list(_OPENED):
        stamp.unlink(missing_ok=True)


class CacheFile:
    """The database file, its lock and its stamp; closes cleanly even from a finalizer."""

    def __init__(self, path: Path, *, schema: int) -> None:
        self.path = path
        self.schema = schema
        self.lock_path = path.with_name("index.lock")
        self.stamp_path = path.with_name(DB_NAME + ".stamp")
        _OPENED.add(self.stamp_path)
        self._conn: Any = None
        self._key = os.path.realpath(path)  # one file, however a vault was opened (see _CONNECTED)

    @property
    def conn(self) -> Any:
        """The open sqlite3 connection, set by am/cache/index.py (counted in ``_CONNECTED``)."""
        return self._conn

    @conn.setter
    def conn(self, value: Any) -> None:
        """Set or clear the connection; clear it only once it is closed (the count guards its locks)."""
        self._count((value is not None) - (self._conn is not None))
        self._conn = value

    def _count(self, delta: int) -> None:
        with _CONNECTED_GUARD:
            count = _CONNECTED.get(self._key, 0) + delta
            if count:
                _CONNECTED[self._key] = count
            else:
                _CONNECTED.pop(self._key, None)

    @contextmanager
    def locked(self, *, exclusive: bool, timeout: float | None = None) -> Iterator[bool]:
        """Hold the cache lock (shared to open and check, exclusive to write); yield False on timeout."""
        lock = _process_lock(self.lock_path)
        deadline = None if timeout is None else time.monotonic() + timeout
        if not lock.mutex.acquire(timeout=-1 if timeout is None else timeout):
            yield False
            return
        try:
            if lock.depth == 0:
                lock.fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
                lock.exclusive = False
            held = True
            if exclusive and not lock.exclusive:
                held = _flock(lock.fd, fcntl.LOCK_EX, deadline)
                lock.exclusive = held
            elif lock.depth == 0:
                held = _flock(lock.fd, fcntl.LOCK_SH, deadline)
            lock.depth += 1
            try:
                yield held
            finally:
                lock.depth -= 1
                if lock.depth == 0:
                    os.close(lock.fd)  # releases the flock
                    lock.fd = -1
        finally:
            lock.mutex.release()

    def file_stamp(self) -> list[int] | None:
        """Return [size, mtime_ns, inode] of the database file, or None if it is missing."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return [st.st_size, st.st_mtime_ns, st.st_ino]

    def write_stamp(self) -> None:
        """Record the file as am leaves it (call under the exclusive lock)."""
        text = json.dumps({"schema": self.schema, "db": self.file_stamp()})
        try:
            if self.stamp_path.read_text() == text:
                return  # WAL mode: the main file changes only at a checkpoint, so this is the usual case
        except (OSError, UnicodeDecodeError):
            pass
        tmp = self.stamp_path.with_name(f"{self.stamp_path.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, self.stamp_path)

    def close(self) -> None:
        """Close the connection; the last one to close checkpoints, so do it under the lock and stamp."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            # Bounded: this also runs from a finalizer, which must never hang a
            # thread. Without the lock the stamp is left alone; if the file then
            # changed, the next open checks it (quick_check) before trusting it.
            with self.locked(exclusive=True, timeout=5.0) as held:
                conn.close()
                if held:
                    self.write_stamp()
        except OSError:
            pass
        finally:
            self._count(-1)  # counted until closed

    def check(self) -> bool:
        """Raise CacheDamaged on a missing, empty, foreign or truncated file; return whether it matches its stamp."""
        stamp = self.file_stamp()
        if stamp is None:
            raise CacheDamaged("missing")
        if stamp[0] == 0:
            raise CacheDamaged("zero-length file")
        with _CONNECTED_GUARD:
            if _CONNECTED.get(self._key):
                header = None  # open here already, and checked when it was opened (see _CONNECTED)
            else:
                with open(self.path, "rb") as handle:
                    header = handle.read(100)
        if header is not None:
            self._check_header(header, stamp)
        try:
            recorded = json.loads(self.stamp_path.read_text())
        except (OSError, ValueError):
            return False
        return bool(recorded.get("schema") == self.schema and recorded.get("db") == stamp)

    def _check_header(self, header: bytes, stamp: list[int]) -> None:
        if len(header) < 100 or not header.startswith(_MAGIC):
            raise CacheDamaged("not an SQLite file (bad header)")
        page_size = int.from_bytes(header[16:18], "big")
        page_size = 65536 if page_size == 1 else page_size
        pages = int.from_bytes(header[28:32], "big")
        # The header's page count is valid only when its version number matches the change counter.
        valid = header[24:28] == header[92:96]
        if page_size < 512 or stamp[0] % page_size or (valid and stamp[0] < pages * page_size):
            raise CacheDamaged("truncated file")

    def move_aside(self, reason: str) -> None:
        """Move a damaged file (and its WAL) to .am/cache/aside/, keeping only the latest for a post-mortem.

        One copy at most: a 100k-fact cache is ~140 MB, and the latest damage is the
        one worth looking at. A missing or older-format file is not damage: it is
        removed, not kept.
        """
        keep = reason != "missing" and not reason.startswith(("older format", "newer format"))
        if keep:
            log.info("the search cache %s was %s; moved it aside and rebuilding", self.path, reason)
        aside = self.path.parent / "aside"
        if keep and aside.is_dir():
            for old in aside.glob(f"{DB_NAME}.*"):
                old.unlink(missing_ok=True)
        when = time.strftime("%Y%m%d-%H%M%S")
        for suffix in ("", "-wal", "-shm"):
            source = self.path.with_name(DB_NAME + suffix)
            if not source.exists():
                continue
            if not keep or source.stat().st_size == 0:
                source.unlink()
                continue
            aside.mkdir(exist_ok=True)
            os.replace(source, aside / f"{DB_NAME}.{when}.{os.getpid()}{suffix}")
        self.stamp_path.unlink(missing_ok=True)

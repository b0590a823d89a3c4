"""The cache's look at the vault's folders: which changed, what is in them, and a rolling sample of files.

A mixin of ``Index`` (am/cache/index.py); it reads and writes the ``files`` and
``dirs`` tables through ``self.conn`` and imports no sqlite3 itself.

Decisions: docs/decisions/cache.md.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISDIR
from typing import Any

from am.cache.rows import SLOTS, TOPS
from am.git import hash_blob
from am.git.workfiles import (
    UNREAD_BLOB,
    WorkFile,
    WorkTreeReader,
    is_real_dir,
    real_subdirs,
)
from am.records.codec import MAX_RECORD_BYTES

Payload = bytes | WorkFile | None  # a file's bytes, why it was not read, or None (gone)
_SWEEP_FILES = 500  # about this many files per command (~1-2 ms unloaded)


def blob_of(data: bytes | WorkFile) -> str:
    """Return the blob id Git would give a file (a link: its target), or UNREAD_BLOB for one not read."""
    if isinstance(data, WorkFile):
        source = data.blob_source()
        return hash_blob(source) if source is not None else UNREAD_BLOB
    return hash_blob(data)


@dataclass
class FolderNames:
    """The names the cache holds per folder, as of ``token`` (see _note_own_folders)."""

    token: int | None = None
    names: dict[str, frozenset[str]] = field(default_factory=dict)


_shared: dict[str, FolderNames] = {}
_shared_lock = threading.Lock()


def folder_names_for(cache: Path) -> FolderNames:
    """The folder names remembered for one cache file, shared by every connection of this process to it.

    Writer threads of one process each have a connection of their own, and
    each batch's cache update is done by whichever of them leads it.
    """
    with _shared_lock:
        return _shared.setdefault(str(cache), FolderNames())


class FolderScans:
    """Folder times, folder listings and the rolling sweep of the cache (see docs/cache.md)."""

    conn: Any
    root: Any
    store: Any
    _folder_names: FolderNames

    def _names_token(self) -> int:
        """The cache's token that changes whenever a row of files or dirs comes or goes."""
        return int(self.conn.execute("SELECT n FROM names_token").fetchone()[0])

    def records_token(self) -> int:
        """The cache's token that changes whenever a record row comes, goes or changes (one row, no scan)."""
        return int(self.conn.execute("SELECT n FROM records_token").fetchone()[0])

    def _rolling_sweep(self) -> list[str]:
        """Return files of this second's slots whose stat data changed (an in-place save)."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'files'").fetchone()
        # Kept in meta: count(*) reads the whole table.
        count = int(row[0]) if row else self.conn.execute("SELECT count(*) FROM files").fetchone()[0]
        width = max(1, min(SLOTS, SLOTS * _SWEEP_FILES // max(count, 1)))
        first = (int(time.time()) * width) % SLOTS
        slots = [(first + i) % SLOTS for i in range(width)]
        rows = self.conn.execute(
            f"SELECT path, mtime_ns, size, ino FROM files WHERE slot IN ({','.join(map(str, slots))})").fetchall()
        root, stat, out = f"{self.root}/", os.lstat, []  # a link is looked at as itself, never followed
        for path, mtime, size, ino in rows:
            try:
                st = stat(root + path)
            except (FileNotFoundError, NotADirectoryError):
                out.append(path)
                continue
            if (st.st_mtime_ns, st.st_size, st.st_ino) != (mtime, size, ino):
                out.append(path)
        return out

    def _git_index_stamp(self) -> str:
        """The stat data of Git's index file: a change means someone staged or committed."""
        try:
            st = os.stat(self.store.gitdir / "index")
        except FileNotFoundError:
            return ""
        return f"{st.st_mtime_ns}:{st.st_size}:{st.st_ino}"

    def _full_sweep_always(self) -> bool:
        """Whether every check looks at every file (AM_CACHE_SWEEP=0 turns the cheap checks off)."""
        return os.environ.get("AM_CACHE_SWEEP") == "0"

    def _stale(self, paths: Iterable[str]) -> bool:
        """Return whether any of these files changed since the cache saw them (the ones known dirty)."""
        for path in paths:
            row = self.conn.execute("SELECT mtime_ns, size, ino FROM files WHERE path = ?", (path,)).fetchone()
            try:
                st = os.lstat(os.path.join(self.root, path))
            except (FileNotFoundError, NotADirectoryError):
                if row is not None:
                    return True
                continue
            if row is None or tuple(row) != (st.st_mtime_ns, st.st_size, st.st_ino):
                return True
        return False

    def _changed_dirs(self) -> list[tuple[str, int]]:
        out = []
        root, stat = f"{self.root}/", os.lstat  # this loop is most of a no-change check
        for path, mtime in self.conn.execute("SELECT path, mtime_ns FROM dirs").fetchall():
            try:
                st = stat(root + path)
                # A folder replaced by a link counts as gone: nothing is read through it.
                now = st.st_mtime_ns if S_ISDIR(st.st_mode) else -1
            except (FileNotFoundError, NotADirectoryError):
                now = -1
            if now != mtime:
                out.append((path, now))
        return out

    def _scan_dir(self, path: str, mtime: int) -> set[str]:
        """Return the files to look at in a folder whose time changed, and record its new time."""
        found: set[str] = set()
        lo, hi = path + "/", path + "0"  # '0' sorts right after '/'
        known_files = [p for (p,) in self.conn.execute(
            "SELECT path FROM files WHERE path >= ? AND path < ?", (lo, hi))]
        if mtime == -1:
            self.conn.execute("DELETE FROM dirs WHERE path = ? OR (path >= ? AND path < ?)", (path, lo, hi))
            if path in TOPS:
                self.conn.execute("INSERT INTO dirs VALUES (?, -1)", (path,))
            return set(known_files)
        self.conn.execute("INSERT OR REPLACE INTO dirs VALUES (?, ?)", (path, mtime))
        known_dirs = {p for (p,) in self.conn.execute("SELECT path FROM dirs WHERE path >= ? AND path < ?", (lo, hi))}
        found.update(p for p in known_files if "/" not in p[len(lo):])
        try:
            entries = list(os.scandir(os.path.join(self.root, path)))
        except (FileNotFoundError, NotADirectoryError):
            return found
        for entry in entries:
            if entry.name.startswith("."):
                continue
            rel = f"{path}/{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                if rel not in known_dirs:
                    # A new folder: take it in whole (its own time is recorded by the scan).
                    found.update(self._scan_dir(rel, entry.stat(follow_symlinks=False).st_mtime_ns))
            elif entry.name.endswith(".md"):
                found.add(rel)
        return found

    def _keyed(self, query: str, keys: Sequence[str] | Sequence[int]) -> list[tuple[Any, ...]]:
        """Run ``query`` (ending in "IN") over the keys, 500 at a time; return every row."""
        rows: list[tuple[Any, ...]] = []
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            rows += self.conn.execute(f"{query} ({','.join('?' * len(chunk))})", chunk).fetchall()
        return rows

    def _note_own_folders(self, written: Sequence[str], token: int) -> None:
        """Record the new times of the folders am's own write went into, if their listing shows nothing else new.

        A write changes its folder's time (and, for a new folder, its parent's);
        left unrecorded, every later check would list the whole folder (today's,
        for facts) again. Deepest first, each changed folder is listed; the time
        is taken before the listing, so a file saved after that changes it
        again. A folder whose names (files and subfolders) are exactly those the
        cache knows is recorded (a new one is added); anything else is left to
        the next check's scan. A file someone replaced under the same name
        meanwhile is found by the rolling sweep, as an in-place save is.
        """
        root = f"{self.root}/"
        # The names the cache knows per folder, kept from the last note (by any
        # connection of this process) while no row of files or dirs came or went
        # since: ``token`` is the cache's names token before this update's own
        # rows. A day's folder then costs one listing per write, not a query of all its rows.
        shared = self._folder_names
        if shared.token != token:
            shared.names.clear()
        memo = shared.names
        folders = {"/".join(p.split("/")[:i]) for p in written for i in range(1, p.count("/") + 1)}
        recorded: set[str] = set()
        for folder in sorted(folders, key=lambda f: (-f.count("/"), f)):
            row = self.conn.execute("SELECT mtime_ns FROM dirs WHERE path = ?", (folder,)).fetchone()
            base = root + folder
            try:
                mtime = os.stat(base).st_mtime_ns
                if row is not None and row[0] == mtime:
                    continue
                listed = set(os.listdir(base))  # names only: a day's folder can hold thousands
            except (FileNotFoundError, NotADirectoryError):
                continue
            lo, hi = folder + "/", folder + "0"  # '0' sorts right after '/'
            cut = len(lo)
            if folder in memo:
                # Set operations only: the names known last time, this write's own
                # files as its upsert recorded them, and folders recorded just now.
                known = set(memo[folder])
                for path in written:
                    if path.rpartition("/")[0] == folder:
                        (known.add if os.path.isfile(root + path) else known.discard)(path[cut:])
                known.update(d[cut:] for d in recorded if d.rpartition("/")[0] == folder)
                same = known <= listed and all(n.startswith(".") for n in listed - known)
            else:
                names = [n for n in listed if not n.startswith(".")]
                files = {n for n in names if n.endswith(".md")}
                # Only a name without .md can be a folder; a folder named *.md counts
                # as a file here, unknown to the cache, so the next scan sorts it out.
                subdirs = {n for n in names if not n.endswith(".md") and is_real_dir(f"{base}/{n}")}
                known_files = {p[cut:] for (p,) in self.conn.execute(
                    "SELECT path FROM files WHERE path > ? AND path < ?", (lo, hi)) if "/" not in p[cut:]}
                known_dirs = {p[cut:] for (p,) in self.conn.execute(
                    "SELECT path FROM dirs WHERE path > ? AND path < ?", (lo, hi)) if "/" not in p[cut:]}
                same = files == known_files and subdirs == known_dirs
                known = files | subdirs
            if same:
                self.conn.execute("INSERT OR REPLACE INTO dirs VALUES (?, ?)", (folder, mtime))
                memo[folder] = frozenset(known)
                recorded.add(folder)
            else:
                memo.pop(folder, None)

    def _walk(self) -> tuple[list[tuple[str, int]], list[str]]:
        dirs: list[tuple[str, int]] = []
        files: list[str] = []
        root = str(self.root)
        cut = len(root) + 1
        for top in TOPS:
            base = os.path.join(root, top)
            try:
                st = os.lstat(base)
            except FileNotFoundError:
                st = None
            if st is None or not S_ISDIR(st.st_mode):
                dirs.append((top, -1))  # missing, or a link (never followed out of the vault)
                continue
            dirs.append((top, st.st_mtime_ns))
            for dirpath, dirnames, filenames in os.walk(base):
                dirnames[:] = real_subdirs(dirpath, dirnames)
                rel = dirpath[cut:]
                for d in dirnames:
                    try:
                        dirs.append((f"{rel}/{d}", os.lstat(os.path.join(dirpath, d)).st_mtime_ns))
                    except FileNotFoundError:
                        continue
                files += [f"{rel}/{n}" for n in sorted(filenames) if n.endswith(".md") and not n.startswith(".")]
        return dirs, files

    def _read(self, path: str, reader: WorkTreeReader | None = None) -> tuple[os.stat_result | None, Payload]:
        """Return a file's stat data and bytes, or why it is not read (a link, a FIFO, too large); None: gone."""
        if reader is None:
            with WorkTreeReader(str(self.root), cap=MAX_RECORD_BYTES) as own:
                found = own.read(path)
        else:
            found = reader.read(path)
        if found is None:
            return None, None
        return found.stat, (found.data if found.problem is None else found)

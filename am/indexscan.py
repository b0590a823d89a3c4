"""The cache's look at the vault's folders: which changed, what is in them, and a rolling sample of files.

A mixin of ``Index`` (am/index.py); it reads and writes the ``files`` and
``dirs`` tables through ``self.conn`` and imports no sqlite3 itself.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from am.indexrows import SLOTS, TOPS

_SWEEP_FILES = 500  # about this many files per command (~1-2 ms unloaded)


class FolderScans:
    """Folder times, folder listings and the rolling sweep of the cache (see docs/cache.md)."""

    conn: Any
    root: Any

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
        root, stat, out = f"{self.root}/", os.stat, []
        for path, mtime, size, ino in rows:
            try:
                st = stat(root + path)
            except (FileNotFoundError, NotADirectoryError):
                out.append(path)
                continue
            if (st.st_mtime_ns, st.st_size, st.st_ino) != (mtime, size, ino):
                out.append(path)
        return out

    def _changed_dirs(self) -> list[tuple[str, int]]:
        out = []
        root, stat = f"{self.root}/", os.stat  # this loop is most of a no-change check
        for path, mtime in self.conn.execute("SELECT path, mtime_ns FROM dirs").fetchall():
            try:
                now = stat(root + path).st_mtime_ns
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
            if entry.is_dir():
                if rel not in known_dirs:
                    # A new folder: take it in whole (its own time is recorded by the scan).
                    found.update(self._scan_dir(rel, entry.stat().st_mtime_ns))
            elif entry.name.endswith(".md"):
                found.add(rel)
        return found

    def _note_own_folders(self, written: Sequence[str]) -> None:
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
        folders = {"/".join(p.split("/")[:i]) for p in written for i in range(1, p.count("/") + 1)}
        for folder in sorted(folders, key=lambda f: (-f.count("/"), f)):
            row = self.conn.execute("SELECT mtime_ns FROM dirs WHERE path = ?", (folder,)).fetchone()
            try:
                mtime = os.stat(root + folder).st_mtime_ns
                if row is not None and row[0] == mtime:
                    continue
                files, subdirs = set(), set()
                for entry in os.scandir(root + folder):
                    if entry.name.startswith("."):
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        subdirs.add(f"{folder}/{entry.name}")
                    elif entry.name.endswith(".md"):
                        files.add(f"{folder}/{entry.name}")
            except (FileNotFoundError, NotADirectoryError):
                continue
            lo, hi = folder + "/", folder + "0"  # '0' sorts right after '/'
            known_files = {p for (p,) in self.conn.execute(
                "SELECT path FROM files WHERE path > ? AND path < ?", (lo, hi)) if "/" not in p[len(lo):]}
            known_dirs = {p for (p,) in self.conn.execute(
                "SELECT path FROM dirs WHERE path > ? AND path < ?", (lo, hi)) if "/" not in p[len(lo):]}
            if files == known_files and subdirs == known_dirs:
                self.conn.execute("INSERT OR REPLACE INTO dirs VALUES (?, ?)", (folder, mtime))

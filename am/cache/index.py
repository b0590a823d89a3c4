"""The disposable cache: an incremental SQLite index of a vault, and full-text search.

The only module that imports sqlite3: it opens, checks, builds and updates the database. am/cache/query.py
holds the read side (a mixin of ``Index``), am/cache/rows.py what a file becomes in the cache, am/cache/file.py
the file's lock, stamp and damage checks. The cache lives at ``<vault>/.am/cache/index.sqlite`` (WAL) and
reflects the vault's *working tree* (so an uncommitted edit in Obsidian counts) together with the commit HEAD
pointed at when it was last brought up to date. Delete it and nothing is lost: the next command rebuilds it.

Public API (stable; worlds/slice and search build on it)::

    idx = Index.open(vault)                 # open (repair/rebuild if needed) and refresh
    idx.refresh(full=False) -> Refresh      # bring up to date; cheap when nothing changed
    idx.rebuild(progress=None) -> int       # from scratch; returns the number of files read
    idx.head -> str | None                  # the vault commit the cache reflects
    idx.lookup(id) -> PurePosixPath | None  # path of the record with that id
    idx.get(id) -> (path, Record) | None
    idx.records(type=None, topic=None, status=None, ids=None) -> list[(path, Record)]
                                            # sorted by id; topic= matches a fact's topics,
                                            # a relation's ends, or the topic itself
    idx.record_values(type=None) -> list[Record]   # the same, without paths, faster
    idx.fact_world_rows() -> list[tuple]    # the world fields of every fact (for slice)
    idx.links(source=None, target=None, dangling=None) -> list[IndexedLink]
    idx.search(match, since=, until=, statuses=, topic=, repo=, types=, limit=) -> list[Hit]
                                            # ``match`` is a user's text; BM25, best first
    idx.ids_with_prefix(prefix, limit=) -> list[Hit]
    idx.status() -> IndexStatus
    idx.close()

``Record`` values are the frozen dataclasses of am/records/model.py, rebuilt from the
cache without re-reading the files. ``progress`` callbacks receive
``(done, total)``; ``am.cache.progress.progress_hook`` (set by the command line) supplies
one when a command triggers a rebuild by itself.

Fresh without scanning (docs/cache.md): each command diffs HEAD's tree with the
cached commit's, compares the record folders' times (new, deleted, renamed and
checked-out files change them), re-checks last time's dirty files and stats a
rolling ~500 others (in-place saves); blob ids tell unchanged files apart.

Integrity (am/cache/file.py): a damaged, foreign or older-format file is moved aside to ``.am/cache/aside/``
and rebuilt; a lost WAL only loses the last updates, which the next refresh redoes from Git. A sparse checkout
that leaves a record folder out is refused (am/git/program/sparse.py): the cache would read the vault without it.
Decisions: docs/decisions/cache.md.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Protocol

import am.cache.progress
from am.cache.file import DB_NAME, CacheDamaged, CacheFile
from am.cache.progress import Progress
from am.cache.query import IndexQueries
from am.cache.recent import RecentQueries
from am.cache.rows import (_SCHEMA, NOTE_ERROR, SCHEMA_VERSION, TOPS, Hit, IndexedLink, IndexStatus, Known, Refresh,
                           body_links, check_known, file_slot, is_record_path, name_refs, note_row, rank_rowid, record_names,
                           record_rows, resolve_refs, segment)
from am.cache.scan import FolderScans, Payload, blob_of, folder_names_for
from am.cache.statements import StatementQueries
from am.errors import AmError, explained
from am.git import hash_blob
from am.git.program.sparse import refuse_hidden
from am.git.workfiles import UNREAD_BLOB, WorkFile, WorkTreeReader
from am.records.codec import MAX_RECORD_BYTES, decode_record_bytes, parse_record

if TYPE_CHECKING:
    from am.git import LazyStore
    from am.records.model import Record

__all__ = ["VaultFiles", "Index", "Hit", "IndexedLink", "IndexStatus", "Refresh", "SCHEMA_VERSION", "open_cache",
           "segment", "body_links"]

log = logging.getLogger("am")

CACHE_DIR = PurePosixPath(".am/cache")
_BATCH = 1000
_STEP = 250  # files read between two progress reports of a build


class VaultFiles(Protocol):
    """What the cache needs of a vault: its folder and its Git store (``am.vault.Vault`` is one)."""

    root: Path
    store: LazyStore


def open_cache(vault: VaultFiles) -> Index | None:
    """Return the vault's open cache, refreshed at most once a second; None (logged) if unusable."""
    state = vault.__dict__
    index: Index | None = state.get("_cache")
    if index is None:
        refuse_hidden(vault.root, vault.store.gitdir)
        if state.get("_cache_failed"):
            return None
        try:
            index = Index.open(vault)
        except (AmError, OSError, sqlite3.Error) as err:
            log.warning("the search cache cannot be used (%s); reading the files instead", explained(err, vault.root / CACHE_DIR))
            state["_cache_failed"] = True
            return None
        state["_cache"] = index
    elif time.monotonic() - index.refreshed_at > 1.0:
        # Long-lived callers (an agent server) see edits made since the last call.
        index.refresh()
    return index


class Index(IndexQueries, RecentQueries, StatementQueries, FolderScans):
    """A vault's cache: records, topic membership, links and a full-text index."""

    def __init__(self, vault: VaultFiles, path: Path) -> None:
        # No reference to the vault itself: the vault holds its cache, and a cycle
        # would leave closing to the garbage collector at an arbitrary moment.
        self.root = vault.root
        self.store = vault.store
        self.path = path
        self._handle = CacheFile(path, schema=SCHEMA_VERSION)
        self._finalizer = weakref.finalize(self, self._handle.close)
        self.rebuilt: str | None = None
        self.built_files: int | None = None  # how many files the last build by this object read
        self.refreshed_at = time.monotonic()
        self._folder_names = folder_names_for(path)  # see FolderScans._note_own_folders
        self._topics_changed = False  # a topic came, went or changed: names in other files resolve anew

    @property
    def conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = self._handle.conn
        if conn is None:
            raise AmError("the search cache is closed")
        return conn

    # ------------------------------------------------------------ open / close

    @classmethod
    def open(cls, vault: VaultFiles, *, refresh: bool = True, progress: Progress | None = None) -> Index:
        """Open the vault's cache, repairing or rebuilding it if needed, and bring it up to date."""
        folder = vault.root / CACHE_DIR
        folder.mkdir(parents=True, exist_ok=True)
        index = cls(vault, folder / DB_NAME)
        reason = None
        with index._handle.locked(exclusive=False):
            try:
                index._handle.conn = index._connect_checked()
            except CacheDamaged as err:
                reason = str(err)
        if reason is not None:
            index._repair(reason, progress)
        elif refresh:
            index.refresh(progress=progress)
        return index

    def close(self) -> None:
        """Close the database and record its stamp."""
        self._finalizer()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=30000")
        return conn

    def _connect_checked(self) -> sqlite3.Connection:
        is_known = self._handle.check()
        try:
            conn = self._connect()
        except sqlite3.DatabaseError as err:  # a damaged schema page fails the first statement
            raise CacheDamaged(f"damaged ({err})") from None
        try:
            row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None or row[0] != str(SCHEMA_VERSION):
                found = str(row[0]) if row else "unknown"  # newer: two am versions on one machine take turns
                newer = found.isdigit() and int(found) > SCHEMA_VERSION
                raise CacheDamaged(f"newer format {found}, written by a newer am" if newer else f"older format {found}")
            if not is_known:
                # Changed since am last closed it (a crash, or damage): a corrupted
                # SQLite file still answers queries, so check it before trusting it.
                problems = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
                if problems != ["ok"]:
                    # quick_check can report what is not there (SQLite 3.40: a NULL in every row of a WITHOUT
                    # ROWID table whose key is declared out of column order); the full check decides before a
                    # healthy cache is moved aside and rebuilt (25 s at 100k facts).
                    problems = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
                    if problems != ["ok"]:
                        raise CacheDamaged(f"damaged ({problems[0]})")
                conn.execute("INSERT INTO search(search, rank) VALUES ('integrity-check', 1)")
                conn.execute("INSERT INTO notes(notes, rank) VALUES ('integrity-check', 1)")
                self._handle.write_stamp()
        except sqlite3.DatabaseError as err:
            conn.close()
            raise CacheDamaged(f"damaged ({err})") from None
        except CacheDamaged:
            conn.close()
            raise
        return conn

    def _repair(self, reason: str, progress: Progress | None, *, force: bool = False) -> None:
        handle = self._handle
        with handle.locked(exclusive=True):
            if handle.conn is not None:
                handle.conn.close()
                handle.conn = None
            # Another process may have rebuilt it while this one waited.
            try:
                if force:
                    raise CacheDamaged(reason)
                handle.conn = self._connect_checked()
                return
            except CacheDamaged as again:
                reason = str(again)
            self._handle.move_aside(reason)
            self._build_fresh(progress)
        self.rebuilt = reason

    # ------------------------------------------------------------ meta

    def _set_meta(self, **values: str | None) -> None:
        self.conn.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", list(values.items()))

    @property
    def head(self) -> str | None:
        """Return the vault commit the cache reflects."""
        row = self.conn.execute("SELECT value FROM meta WHERE key='head'").fetchone()
        return row[0] if row and row[0] else None

    def content_token(self) -> tuple[int, int]:
        """Return a token that changes whenever the cache's content may have changed, by any writer.

        SQLite's ``data_version`` moves when another connection commits, and the
        connection's ``total_changes`` when this one writes; both are per connection,
        so compare tokens of one Index only. A long-lived reader (the MCP server)
        keys what it derived from the cache on it.
        """
        version = self.conn.execute("PRAGMA data_version").fetchone()[0]
        return int(version), self.conn.total_changes

    def valid_time_bounds(self) -> list[str]:
        """Return the distinct valid_from and valid_until values of records: where holding changes with time."""
        rows = self.conn.execute("SELECT valid_from FROM records WHERE valid_from IS NOT NULL "
                                 "UNION SELECT valid_until FROM records WHERE valid_until IS NOT NULL")
        return [str(value) for (value,) in rows]

    # ------------------------------------------------------------ rebuild

    def rebuild(self, *, progress: Progress | None = None) -> int:
        """Rebuild the cache from the working tree; return the number of files read."""
        with self._handle.locked(exclusive=True):
            if self._handle.conn is not None:
                self._handle.conn.close()
                self._handle.conn = None
            return self._build_fresh(progress)

    def _build_fresh(self, progress: Progress | None) -> int:
        """Build a new file beside the old one and move it into place; the lock is held."""
        handle = self._handle
        for stale in self.path.parent.glob(f"{DB_NAME}.build-*"):
            stale.unlink(missing_ok=True)  # left by a crash: builds only happen under the lock
        tmp = self.path.with_name(f"{DB_NAME}.build-{os.getpid()}")
        conn = sqlite3.connect(tmp, isolation_level=None, check_same_thread=False)
        handle.conn = conn
        try:
            # No journal while building: a crash leaves only this temporary file.
            conn.execute("PRAGMA journal_mode=OFF")
            conn.execute("PRAGMA synchronous=OFF")
            conn.executescript(_SCHEMA)
            conn.execute("BEGIN")
            count = self._fill(progress)
            self._set_meta(schema=str(SCHEMA_VERSION))
            conn.execute("COMMIT")
            conn.execute("PRAGMA journal_mode=WAL")
        finally:
            conn.close()
            handle.conn = None
        for suffix in ("-wal", "-shm"):
            self.path.with_name(DB_NAME + suffix).unlink(missing_ok=True)
        os.replace(tmp, self.path)
        handle.conn = self._connect()
        handle.write_stamp()
        self.built_files = count
        return count

    def _fill(self, progress: Progress | None) -> int:
        hook = am.cache.progress.progress_hook
        if progress is None and hook is not None:
            progress = hook()
        head = self.store.head()
        dirs, files = self._walk()
        self.conn.executemany("INSERT INTO dirs(path, mtime_ns) VALUES (?, ?)", dirs)
        total = len(files)
        # Topics first (TOPS order), so that names in facts and relations find them in the same build.
        files.sort(key=lambda p: (TOPS.index(p.split("/", 1)[0]), p))
        with WorkTreeReader(str(self.root), cap=MAX_RECORD_BYTES) as reader:
            for start in range(0, total, _STEP):
                self._upsert([(p, *self._read(p, reader)) for p in files[start:start + _STEP]], fresh=True)
                if progress is not None:
                    progress(min(start + _STEP, total), total)
        self._topics_changed = False
        tree = dict(self.store.tree_files(TOPS, commit=head)) if head else {}
        dirty = [p for p, blob in self.conn.execute("SELECT path, blob FROM files") if tree.get(p) != blob]
        self._set_meta(head=head or "", git_index=self._git_index_stamp(), swept_at=str(time.time()),
                       dirty=json.dumps(sorted(dirty)), files=str(total))
        return total

    # ------------------------------------------------------------ reading one file

    def _upsert(self, items: Sequence[tuple[str, os.stat_result | None, Payload]], *,
                fresh: bool = False, known: Known | None = None) -> tuple[int, int]:
        """Store files (None data: gone); return how many were removed and how the count of ``files`` rows changed.

        ``known``: the records am's own write rendered, by path, with the bytes it
        rendered them to; a file holding exactly those bytes is not parsed again.

        A file that is not read (a symbolic link, a FIFO, too large: ``WorkFile``) is a row with its
        problem as the error, never a record; a link's blob is its target, as Git stores it.
        """
        files: list[tuple[Any, ...]] = []
        records: list[tuple[Any, ...]] = []
        members: list[tuple[int, str]] = []
        links: list[tuple[int, str, str]] = []
        texts: list[tuple[Any, ...]] = []
        removed = dropped = 0
        names: list[tuple[str, int, str, str, int]] = []
        notes: list[tuple[str, ...]] = []
        pending: list[tuple[int, str, Any]] = []  # records naming others by a name: resolved once names are in
        topics_changed = False
        used: set[int] = set()  # row ids this batch gives out (its rows are written at the end)
        if not fresh:
            topics_changed = any(p.startswith("topics/") for p, _, _ in items)
            # Only a path with a files row has rows elsewhere: a batch of new files deletes nothing.
            gone = [(p,) for (p,) in self._keyed("SELECT path FROM files WHERE path IN", [p for p, _, _ in items])]
            rowids = [(r,) for (r,) in self._keyed("SELECT rowid FROM records WHERE path IN", [p for (p,) in gone])]
            for table in ("members", "links", "search", "names"):
                self.conn.executemany(f"DELETE FROM {table} WHERE rowid = ?", rowids)
            self.conn.executemany("DELETE FROM notes WHERE path = ?", gone)
            self.conn.executemany("DELETE FROM namerefs WHERE path = ?", gone)
            self.conn.executemany("DELETE FROM records WHERE path = ?", gone)
            dropped = self.conn.executemany("DELETE FROM files WHERE path = ?", gone).rowcount
        parsed: list[tuple[str, Record, int]] = []
        for path, st, data in items:
            if st is None or data is None:
                removed += 1
                continue
            if isinstance(data, WorkFile):
                source = data.blob_source()
                blob = hash_blob(source) if source is not None else UNREAD_BLOB
                files.append((path, blob, st.st_mtime_ns, st.st_size, st.st_ino, f"{path}: {data.problem}",
                              file_slot(path)))
                continue
            blob = hash_blob(data)
            error = None
            ours = None if known is None else known.get(path)
            if ours is not None and ours[0] == data:
                record = check_known(path, data, ours[1])
            else:
                try:
                    record = parse_record(decode_record_bytes(data, path=path), path)
                except AmError as err:
                    note = note_row(path, data)  # a note is searchable, never a record, never invalid
                    error, record = str(err) if note is None else NOTE_ERROR, None
                    notes += [note] if note is not None else []
            files.append((path, blob, st.st_mtime_ns, st.st_size, st.st_ino, error, file_slot(path)))
            if record is not None:
                parsed.append((path, record, rank_rowid(record)))  # a static rank (am/cache/rows.py)
        # The ranks already taken, asked once for the batch (not once a record); a taken
        # rank, or one this batch gave out, moves to the next free id.
        asked = {rowid for _, _, rowid in parsed}
        taken = {r for (r,) in self._keyed("SELECT rowid FROM records WHERE rowid IN", sorted(asked))}
        for path, record, rowid in parsed:
            while rowid in used or (rowid in taken if rowid in asked else
                                    self.conn.execute("SELECT 1 FROM records WHERE rowid = ?", (rowid,)).fetchone()):
                rowid += 1
            used.add(rowid)
            names += record_names(rowid, path, record)
            topics_changed = topics_changed or path.startswith("topics/")
            if name_refs(record):
                pending.append((rowid, path, record))
                continue
            row, member_rows, link_rows, text = record_rows(rowid, path, record)
            records.append(row)
            members += member_rows
            links += link_rows
            texts.append(text)
        self.conn.executemany("INSERT OR IGNORE INTO names VALUES (?, ?, ?, ?, ?)", names)
        for prowid, path, record in pending:
            row, member_rows, link_rows, text = record_rows(prowid, path, resolve_refs(record, self._resolve_name))
            records.append(row)
            members += member_rows
            links += link_rows
            texts.append(text)
        self.conn.executemany("INSERT OR IGNORE INTO namerefs VALUES (?)", [(p,) for _, p, _ in pending])
        self._topics_changed = self._topics_changed or topics_changed
        self.conn.executemany("INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, ?)", files)
        self.conn.executemany("INSERT INTO records VALUES (" + ", ".join("?" * 26) + ")", records)
        self.conn.executemany("INSERT OR IGNORE INTO members(rowid, topic) VALUES (?, ?)", members)
        self.conn.executemany("INSERT OR IGNORE INTO links VALUES (?, ?, ?)", links)
        self.conn.executemany("INSERT INTO search(rowid, title, body, aliases, tags) VALUES (?, ?, ?, ?, ?)", texts)
        self.conn.executemany("INSERT INTO notes(title, body, aliases, tags, path, raw) VALUES (?, ?, ?, ?, ?, ?)",
                              notes)
        return removed, len(files) - dropped

    def _resolve_name(self, ref: str) -> str | None:
        """Return the id a "[[Name]]" reference names (file name, id, title, alias; first by path), or None."""
        from am.records.names import name_key
        from am.records.properties import split_link

        parts = split_link(ref)
        return None if parts is None or parts[1] is not None else self.resolve_name_key(name_key(parts[0]))

    def _redo_name_refs(self, done: set[str]) -> list[tuple[str, os.stat_result | None, Payload]]:
        """Return the files that name records by a name, to take in again after topics changed."""
        if not self._topics_changed:
            return []
        self._topics_changed = False
        return [(p, *self._read(p)) for (p,) in self.conn.execute("SELECT path FROM namerefs").fetchall()
                if p not in done]

    # ------------------------------------------------------------ refresh

    def refresh(self, *, full: bool = False, progress: Progress | None = None) -> Refresh:
        """Bring the cache up to date with HEAD and the working tree; cheap when nothing changed."""
        began = time.perf_counter()
        self.refreshed_at = time.monotonic()
        try:
            return self._refresh(full, trusted_paths=(), began=began)
        except sqlite3.DatabaseError as err:
            reason = f"unreadable ({err})"
        self._repair_now(reason, progress)
        return Refresh(0, 0, 0, rebuilt=reason, seconds=time.perf_counter() - began)

    def _repair_now(self, reason: str, progress: Progress | None) -> None:
        handle = self._handle
        with handle.locked(exclusive=True):
            if handle.conn is not None:
                try:
                    handle.conn.close()
                except sqlite3.Error:
                    pass
                handle.conn = None
        self._repair(reason, progress, force=True)

    def after_commit(self, commit: str, paths: Sequence[PurePosixPath], *, base: str | None = None,
                     blobs: Mapping[str, str] | None = None, known: Known | None = None) -> None:
        """Take in am's own write (``base``: where a group of commits began; ``blobs``: its blobs); never raises.

        ``known``: records the write rendered (see ``_upsert``).
        """
        try:
            # Only its record files: a session log (sessions/) or .am/vault.yml is no record and no note.
            trusted = [str(p) for p in paths if is_record_path(str(p))]
            self._refresh(False, trusted_paths=trusted, began=time.perf_counter(), chain=(base, commit), written=blobs,
                          known=known)
        except (sqlite3.Error, OSError, AmError) as err:
            # The commit stands; the next command catches up from the tree diff.
            log.warning("could not update the search cache after commit %s (%s)", commit[:10], err)

    def _refresh(self, full: bool, *, trusted_paths: Sequence[str], began: float, chain: Any = None,
                 written: Mapping[str, str] | None = None, known: Known | None = None) -> Refresh:
        meta = self._meta()
        head = self.store.head()
        git_index = self._git_index_stamp()
        dirty: list[str] = json.loads(meta.get("dirty") or "[]")
        sweep = full or self._full_sweep_always()
        if not (sweep or trusted_paths or head != (meta.get("head") or None)
                or git_index != meta.get("git_index") or self._changed_dirs() or self._stale(dirty)
                or self._rolling_sweep()):
            return Refresh(0, 0, 0, seconds=time.perf_counter() - began)
        with self._handle.locked(exclusive=True):
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                result = self._update(head, git_index, sweep, trusted_paths, chain, written, known)
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self._handle.write_stamp()
        return Refresh(*result, seconds=time.perf_counter() - began)

    def _update(self, head: str | None, git_index: str, sweep: bool, trusted_paths: Sequence[str],
                chain: Any = None, written: Mapping[str, str] | None = None,
                known: Known | None = None) -> tuple[int, int, int]:
        meta = self._meta()  # again, under the lock: another process may have done the work
        old_head = meta.get("head") or None
        # Paths whose dirtiness (working copy != HEAD) may have changed.
        recheck: set[str] = set(trusted_paths) | set(json.loads(meta.get("dirty") or "[]"))
        # am's own commit (or group commit, ``chain``) on top of what the cache knew: the diff is exactly its paths.
        own = bool(trusted_paths) and head is not None and (self.store.commit_info(head).parents[:1] == (
            (old_head,) if old_head else ()) or (old_head is not None and chain == (old_head, head)))
        if head != old_head and not own:
            try:
                recheck.update(p for p, _ in self.store.tree_changes(old_head, head) if is_record_path(p))
            except Exception:  # noqa: BLE001 - e.g. the old commit was collected after a rebase
                sweep = True  # no diff to trust: look at everything
        candidates = set(recheck)
        token = self._names_token() if own else None  # before this update's own rows
        if not own:
            candidates.update(self._rolling_sweep())
        # After am's own commit the written paths are all there is to take in;
        # the folders it wrote into are noted after the upsert (_note_own_folders).
        if not own:
            for path, mtime in self._changed_dirs():
                candidates.update(self._scan_dir(path, mtime))
        if sweep:
            dirs, files = self._walk()
            self.conn.execute("DELETE FROM dirs")
            self.conn.executemany("INSERT INTO dirs VALUES (?, ?)", dirs)
            candidates.update(files)
            candidates.update(p for (p,) in self.conn.execute("SELECT path FROM files"))
        checked = len(candidates)
        changes: list[tuple[str, os.stat_result | None, Payload]] = []
        rows: dict[str, tuple[Any, ...]] | None = None
        if len(candidates) > 500 and sweep:
            rows = {r[0]: r[1:] for r in self.conn.execute("SELECT path, blob, mtime_ns, size, ino FROM files")}
        elif len(candidates) > 50:
            # Their own rows by key, not their folders' (an import's day folder holds all it wrote so far).
            rows = {r[0]: r[1:] for r in self._keyed("SELECT path, blob, mtime_ns, size, ino FROM files WHERE path IN",
                                                    sorted(candidates))}
        root, stat = f"{self.root}/", os.lstat  # a link is looked at as itself, never followed
        reader = WorkTreeReader(str(self.root), cap=MAX_RECORD_BYTES)
        try:
            for path in sorted(candidates):
                if rows is not None:
                    row = rows.get(path)
                else:
                    row = self.conn.execute("SELECT blob, mtime_ns, size, ino FROM files WHERE path = ?",
                                            (path,)).fetchone()
                try:
                    st = stat(root + path)
                except (FileNotFoundError, NotADirectoryError):
                    if row is not None:
                        changes.append((path, None, None))
                        recheck.add(path)
                    continue
                if row is not None and tuple(row[1:]) == (st.st_mtime_ns, st.st_size, st.st_ino):
                    continue
                fresh, data = self._read(path, reader)
                if fresh is not None and data is not None and row is not None and blob_of(data) == row[0]:
                    self.conn.execute("UPDATE files SET mtime_ns=?, size=?, ino=? WHERE path=?",
                                      (fresh.st_mtime_ns, fresh.st_size, fresh.st_ino, path))
                    continue
                if fresh is None and row is None:
                    continue  # appeared and vanished again
                changes.append((path, fresh, data))
                recheck.add(path)
        finally:
            reader.close()
        removed = counted = 0
        self._topics_changed = False
        for start in range(0, len(changes), _BATCH):
            gone, delta = self._upsert(changes[start:start + _BATCH], known=known)
            removed += gone
            counted += delta
        redo = self._redo_name_refs(set())
        if redo:
            counted += self._upsert(redo)[1]
        if token is not None:
            self._note_own_folders(trusted_paths, token)
        # Files whose working copy differs from HEAD (or is untracked): re-checked every time.
        if sweep:
            tree = dict(self.store.tree_files(TOPS, commit=head)) if head else {}
            dirty = [p for p, blob in self.conn.execute("SELECT path, blob FROM files ORDER BY path")
                     if tree.get(p) != blob]
        else:
            dirty = []
            # HEAD's blobs: known for am's own write when HEAD is that write (no parse of a day folder that
            # an import grew to megabytes); many others looked up with HEAD found once, not a blob_id() each.
            ours = written if written and chain is not None and head == chain[1] else {}
            committed: dict[str, str | None] = {p: ours[p] for p in recheck if p in ours}
            rest = [p for p in recheck if p not in committed]
            committed.update(self.store.blob_ids(rest, commit=head) if head is not None and len(rest) > 64 else {})
            wanted = sorted(recheck)
            cached = dict(self._keyed("SELECT path, blob FROM files WHERE path IN", wanted))  # by key, 500 a query
            for path in wanted:
                if path not in cached:
                    continue
                blob = None if head is None else (committed[path] if path in committed
                                                  else self.store.blob_id(path, commit=head))
                if blob != cached[path]:
                    dirty.append(path)
        swept = {"swept_at": str(time.time())} if sweep else {}
        if sweep or "files" not in meta:
            swept["files"] = str(self.conn.execute("SELECT count(*) FROM files").fetchone()[0])
        elif counted:  # count(*) reads the whole table: ~2 ms a write at 50k files
            swept["files"] = str(int(meta["files"]) + counted)
        self._set_meta(head=head or "", git_index=git_index, dirty=json.dumps(dirty), **swept)
        if token is not None:
            self._folder_names.token = self._names_token()  # the names noted above hold as of now
        return checked, len(changes) - removed, removed

"""The disposable cache: an incremental SQLite index of a vault, and full-text search.

The only module that imports sqlite3. The cache lives at
``<vault>/.am/cache/index.sqlite`` (WAL) and reflects the vault's *working
tree* (so an uncommitted edit in Obsidian counts) together with the commit
HEAD pointed at when it was last brought up to date. Delete it and nothing is
lost: the next command rebuilds it.

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
    idx.links(source=None, target=None, dangling=None) -> list[IndexedLink]
    idx.search(match, since=, until=, statuses=, topic=, repo=, types=, limit=) -> list[Hit]
                                            # ``match`` is a user's text; BM25, best first
    idx.ids_with_prefix(prefix, limit=) -> list[Hit]
    idx.status() -> IndexStatus
    idx.close()

``Record`` values are the frozen dataclasses of am/model.py, rebuilt from the
cache without re-reading the files. ``progress`` callbacks receive
``(done, total)``; ``Index.progress_hook`` (set by the command line) supplies
one when a command triggers a rebuild by itself.

How it stays fresh without scanning (docs/cache.md): every command compares
HEAD with the commit the cache recorded and diffs the two trees
(``GitStore.diff_paths``); compares the modification times of the record
folders (a new, deleted or renamed file, and every file Git checks out, change
its folder); re-checks the files that were dirty or untracked last time; and
stats a rolling ~500 of the other files (an in-place save changes none of
the above). Blob ids tell an unchanged file from a changed one.
``AM_CACHE_SWEEP=0`` stats every file on every command.

Integrity: the main database file only changes under am's cache lock, after
which am records its size, time and inode in ``index.sqlite.stamp``. A file
that does not match (garbage header, truncation, a flipped page, zero length)
is moved aside to ``.am/cache/aside/`` and rebuilt; a lost WAL only loses the
last updates, which the next refresh redoes from Git.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import re
import sqlite3
import time
import unicodedata
import weakref
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, ClassVar

from am.errors import AmError, InvalidRecordError
from am.gitstore import hash_blob
from am.ids import RECORD_DIRS, parse_timestamp
from am.model import Fact, Record, Relation, Topic
from am.records import decode_record_bytes, parse_record
from am.textseg import _CJK_RANGES, build_match

if TYPE_CHECKING:
    from am.vault import Vault

__all__ = ["Index", "Hit", "IndexedLink", "IndexStatus", "Refresh", "SCHEMA_VERSION", "segment", "body_links"]

log = logging.getLogger("am")

SCHEMA_VERSION = 2
CACHE_DIR = PurePosixPath(".am/cache")
DB_NAME = "index.sqlite"
_TOPS = tuple(RECORD_DIRS.values())
_MAGIC = b"SQLite format 3\x00"
_KEEP_ASIDE = 3
_BATCH = 1000
_SLOTS = 256  # files are spread over slots; each command stats a few slots (the rolling sweep)
_SWEEP_FILES = 500  # about this many files per command (~1-2 ms unloaded)
Progress = Callable[[int, int], None]


# ---------------------------------------------------------------- values

@dataclass(frozen=True)
class Hit:
    """One search result: a record id, where it lives, and its BM25 rank (lower is better)."""

    id: str
    path: PurePosixPath
    type: str
    status: str
    created: str | None
    rank: float


@dataclass(frozen=True)
class IndexedLink:
    """A [[wikilink]] in a record's body; dangling when no record has the target id."""

    source: str
    path: PurePosixPath
    target: str
    vault: str | None
    dangling: bool


@dataclass(frozen=True)
class Refresh:
    """What one refresh did."""

    checked: int
    changed: int
    removed: int
    rebuilt: str | None = None  # why the cache was rebuilt, if it was
    seconds: float = 0.0


@dataclass(frozen=True)
class IndexStatus:
    """The state of the cache, for `am index status`."""

    path: Path
    schema: int
    head: str | None
    counts: dict[str, int]
    files: int
    invalid: list[tuple[str, str]]
    dirty: list[str]
    duplicates: list[str]
    bytes: int
    swept_at: float


# ---------------------------------------------------------------- text helpers

# textseg.segment_for_index walks the text a character at a time; these
# regular expressions find the same runs (``[^\W_]`` is exactly str.isalnum)
# about 10x faster, which matters for a rebuild. A test holds them equal.
_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")
_CJK_CLASS = "".join(f"{chr(low)}-{chr(high)}" for low, high in _CJK_RANGES)
_RUN = re.compile(rf"((?:(?=[{_CJK_CLASS}])[^\W_])+)|((?:(?![{_CJK_CLASS}])[^\W_])+)")


def segment(text: str) -> str:
    """Return text as the FTS column stores it: exactly textseg.segment_for_index, faster."""
    if not text:
        return ""
    if text.isascii():
        return " ".join(_ASCII_WORD.findall(text)).lower()
    tokens: list[str] = []
    for cjk, other in _RUN.findall(unicodedata.normalize("NFKC", text)):
        if cjk:
            tokens += [cjk[i:i + 2] for i in range(len(cjk) - 1)]
            tokens.append(cjk[-1])
        else:
            tokens.append(other.lower())
    return " ".join(tokens)


_WIKILINK = re.compile(r"\[\[([^\[\]\n]*)\]\]")
# Characters that can put a "[[" inside code, HTML, an escape, an entity or a
# table cell; with none of them (and no indented line or "]:" reference
# definition) the wikilinks are exactly the regex's matches, no parser needed.
_MARKDOWN_RISK = re.compile(r"[`<\\&|~\t]|    |\]:")


def body_links(body: str) -> list[tuple[str, str | None]]:
    """Return the distinct (target, vault) wikilinks of a body, as am/links.py finds them."""
    if "[[" not in body:
        return []
    from am import links

    if _MARKDOWN_RISK.search(body):
        found = [(link.target, link.vault) for link in links.parse_links(body)]
    else:
        found = []
        for match in _WIKILINK.finditer(body):
            parts = links._split(match.group(1))
            if parts is not None:
                found.append((parts[0], parts[1]))
    return list(dict.fromkeys(found))


def _timestamp(value: str | None) -> float | None:
    if not value:
        return None
    try:
        moment = parse_timestamp(value)
    except InvalidRecordError:
        return None
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return moment.timestamp()


_CLASSES: dict[str, type[Record]] = {"topic": Topic, "fact": Fact, "relation": Relation}
_FIELDS = {cls: tuple(f.name for f in fields(cls)) for cls in _CLASSES.values()}
_TUPLES = {cls: tuple(i for i, f in enumerate(fields(cls)) if str(f.type).startswith("tuple"))
           for cls in _CLASSES.values()}


def _record_json(record: Record) -> str:
    # A JSON array in field order: the cache's own format, rebuilt without re-validation.
    # A dataclass's __dict__ holds its fields in declaration order.
    return json.dumps(list(record.__dict__.values()), separators=(",", ":"))


def _record_from_json(rtype: str, text: str) -> Record:
    cls = _CLASSES[rtype]
    values = json.loads(text)
    for i in _TUPLES[cls]:
        values[i] = tuple(values[i])
    # The values were validated when the file was parsed; filling the frozen
    # instance's __dict__ directly is ~5x faster than calling __init__.
    record = object.__new__(cls)
    record.__dict__.update(zip(_FIELDS[cls], values))
    return record


def _is_record_path(path: str) -> bool:
    parts = path.split("/")
    return (len(parts) > 1 and parts[0] in _TOPS and path.endswith(".md")
            and not any(p.startswith(".") for p in parts))


# ---------------------------------------------------------------- schema

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
CREATE TABLE files(path TEXT PRIMARY KEY, blob TEXT NOT NULL, mtime_ns INTEGER, size INTEGER,
                   ino INTEGER, error TEXT, slot INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX files_slot ON files(slot);
CREATE TABLE dirs(path TEXT PRIMARY KEY, mtime_ns INTEGER) WITHOUT ROWID;
CREATE TABLE records(rowid INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, id TEXT NOT NULL,
                     type TEXT NOT NULL, status TEXT, kind TEXT, title TEXT, rel TEXT, src TEXT, dst TEXT,
                     repo TEXT, version TEXT, created TEXT, created_ts REAL, pinned INTEGER, data TEXT NOT NULL);
CREATE INDEX records_id ON records(id, path);
CREATE INDEX records_created ON records(created_ts);
CREATE TABLE members(rowid INTEGER NOT NULL, topic TEXT NOT NULL, PRIMARY KEY(topic, rowid)) WITHOUT ROWID;
CREATE INDEX members_rowid ON members(rowid);
CREATE TABLE links(rowid INTEGER NOT NULL, target TEXT NOT NULL, vault TEXT NOT NULL DEFAULT '',
                   PRIMARY KEY(rowid, target, vault)) WITHOUT ROWID;
CREATE INDEX links_target ON links(target);
CREATE VIRTUAL TABLE search USING fts5(title, body, aliases, tags, tokenize = "unicode61 remove_diacritics 2");
"""
# Column weights for bm25(): a title or alias hit outranks a body hit.
_BM25 = "bm25(search, 8.0, 1.0, 6.0, 3.0)"


def open_cache(vault: Vault) -> Index | None:
    """Return the vault's open cache, refreshed at most once a second; None (logged) if unusable."""
    state = vault.__dict__
    index: Index | None = state.get("_cache")
    if index is None:
        if state.get("_cache_failed"):
            return None
        try:
            index = Index.open(vault)
        except (AmError, OSError, sqlite3.Error) as err:
            log.warning("the search cache cannot be used (%s); reading the files instead", err)
            state["_cache_failed"] = True
            return None
        state["_cache"] = index
    elif time.monotonic() - index.refreshed_at > 1.0:
        # Long-lived callers (an agent server) see edits made since the last call.
        index.refresh()
    return index


class _Corrupt(Exception):
    """The cache file cannot be trusted; the message says why."""


# ---------------------------------------------------------------- the file

class _Handle:
    """The database file, its lock and its stamp; closes cleanly even from a finalizer."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock_path = path.with_name("index.lock")
        self.stamp_path = path.with_name(DB_NAME + ".stamp")
        self.conn: sqlite3.Connection | None = None

    @contextmanager
    def locked(self, *, exclusive: bool) -> Iterator[None]:
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            yield
        finally:
            os.close(fd)

    def file_stamp(self) -> list[int] | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return [st.st_size, st.st_mtime_ns, st.st_ino]

    def write_stamp(self) -> None:
        tmp = self.stamp_path.with_name(f"{self.stamp_path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"schema": SCHEMA_VERSION, "db": self.file_stamp()}))
        os.replace(tmp, self.stamp_path)

    def close(self) -> None:
        # The last connection to close checkpoints the WAL into the file: do it
        # under the lock and record the result, so the next open trusts it.
        if self.conn is None:
            return
        try:
            with self.locked(exclusive=True):
                self.conn.close()
                self.write_stamp()
        except OSError:
            pass
        self.conn = None


# ---------------------------------------------------------------- the index

class Index:
    """A vault's cache: records, topic membership, links and a full-text index."""

    progress_hook: ClassVar[Callable[[], Progress | None] | None] = None

    def __init__(self, vault: Vault, path: Path) -> None:
        self.vault = vault
        self.root = vault.root
        self.store = vault.store
        self.path = path
        self._handle = _Handle(path)
        self._finalizer = weakref.finalize(self, self._handle.close)
        self.rebuilt: str | None = None
        self.refreshed_at = time.monotonic()

    @property
    def conn(self) -> sqlite3.Connection:
        conn = self._handle.conn
        if conn is None:
            raise AmError("the search cache is closed")
        return conn

    # ------------------------------------------------------------ open / close

    @classmethod
    def open(cls, vault: Vault, *, refresh: bool = True, progress: Progress | None = None) -> Index:
        """Open the vault's cache, repairing or rebuilding it if needed, and bring it up to date."""
        folder = vault.root / CACHE_DIR
        folder.mkdir(parents=True, exist_ok=True)
        index = cls(vault, folder / DB_NAME)
        reason = None
        with index._handle.locked(exclusive=False):
            try:
                index._handle.conn = index._connect_checked()
            except _Corrupt as err:
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

    def _locked(self, *, exclusive: bool) -> Any:
        return self._handle.locked(exclusive=exclusive)

    def _write_stamp(self) -> None:
        self._handle.write_stamp()

    def _check_file(self) -> bool:
        """Raise _Corrupt on a bad header or size; return whether the file is the one am last wrote."""
        stamp = self._handle.file_stamp()
        if stamp is None:
            raise _Corrupt("missing")
        if stamp[0] == 0:
            raise _Corrupt("zero-length file")
        with open(self.path, "rb") as handle:
            header = handle.read(100)
        if len(header) < 100 or not header.startswith(_MAGIC):
            raise _Corrupt("not an SQLite file (bad header)")
        page_size = int.from_bytes(header[16:18], "big")
        page_size = 65536 if page_size == 1 else page_size
        pages = int.from_bytes(header[28:32], "big")
        valid = header[24:28] == header[92:96]
        if page_size < 512 or stamp[0] % page_size or (valid and stamp[0] < pages * page_size):
            raise _Corrupt("truncated file")
        try:
            recorded = json.loads(self._handle.stamp_path.read_text())
        except (OSError, ValueError):
            return False
        return bool(recorded.get("schema") == SCHEMA_VERSION and recorded.get("db") == stamp)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=30000")
        return conn

    def _connect_checked(self) -> sqlite3.Connection:
        is_known = self._check_file()
        conn = self._connect()
        try:
            row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None or row[0] != str(SCHEMA_VERSION):
                raise _Corrupt(f"older format {row[0] if row else 'unknown'}")
            if not is_known:
                # Changed since am last closed it (a crash, or damage): a corrupted
                # SQLite file still answers queries, so check it before trusting it.
                problems = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
                if problems != ["ok"]:
                    raise _Corrupt(f"damaged ({problems[0]})")
                conn.execute("INSERT INTO search(search, rank) VALUES ('integrity-check', 1)")
                self._write_stamp()
        except sqlite3.DatabaseError as err:
            conn.close()
            raise _Corrupt(f"damaged ({err})") from None
        except _Corrupt:
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
                    raise _Corrupt(reason)
                handle.conn = self._connect_checked()
                return
            except _Corrupt as again:
                reason = str(again)
            self._move_aside(reason)
            self._build_fresh(progress)
        self.rebuilt = reason

    def _move_aside(self, reason: str) -> None:
        if reason != "missing":
            log.warning("the search cache %s was %s; moved it aside and rebuilding", self.path, reason)
        aside = self.path.parent / "aside"
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for suffix in ("", "-wal", "-shm"):
            source = self.path.with_name(DB_NAME + suffix)
            if not source.exists():
                continue
            if source.stat().st_size == 0:
                source.unlink()
                continue
            aside.mkdir(exist_ok=True)
            os.replace(source, aside / f"{DB_NAME}.{stamp}.{os.getpid()}{suffix}")
        self._handle.stamp_path.unlink(missing_ok=True)
        if aside.is_dir():
            kept = sorted(aside.glob(f"{DB_NAME}.*"), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in kept[_KEEP_ASIDE * 3:]:
                old.unlink(missing_ok=True)

    # ------------------------------------------------------------ meta

    def _meta(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT key, value FROM meta").fetchall())

    def _set_meta(self, **values: str | None) -> None:
        self.conn.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                              [(k, v) for k, v in values.items()])

    @property
    def head(self) -> str | None:
        """Return the vault commit the cache reflects."""
        row = self.conn.execute("SELECT value FROM meta WHERE key='head'").fetchone()
        return row[0] if row and row[0] else None

    def _git_index_stamp(self) -> str:
        try:
            st = os.stat(self.store.gitdir / "index")
        except FileNotFoundError:
            return ""
        return f"{st.st_mtime_ns}:{st.st_size}:{st.st_ino}"

    # ------------------------------------------------------------ rebuild

    def rebuild(self, *, progress: Progress | None = None) -> int:
        """Rebuild the cache from the working tree; return the number of files read."""
        with self._locked(exclusive=True):
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
        return count

    def _walk(self) -> tuple[list[tuple[str, int]], list[str]]:
        dirs: list[tuple[str, int]] = []
        files: list[str] = []
        root = str(self.root)
        cut = len(root) + 1
        for top in _TOPS:
            base = os.path.join(root, top)
            try:
                dirs.append((top, os.stat(base).st_mtime_ns))
            except FileNotFoundError:
                dirs.append((top, -1))
                continue
            for dirpath, dirnames, filenames in os.walk(base):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                rel = dirpath[cut:]
                for d in dirnames:
                    try:
                        dirs.append((f"{rel}/{d}", os.stat(os.path.join(dirpath, d)).st_mtime_ns))
                    except FileNotFoundError:
                        continue
                files += [f"{rel}/{n}" for n in sorted(filenames) if n.endswith(".md") and not n.startswith(".")]
        return dirs, files

    def _fill(self, progress: Progress | None) -> int:
        if progress is None and Index.progress_hook is not None:
            progress = Index.progress_hook()
        head = self.store.head()
        dirs, files = self._walk()
        self.conn.executemany("INSERT INTO dirs(path, mtime_ns) VALUES (?, ?)", dirs)
        total = len(files)
        for start in range(0, total, _BATCH):
            self._upsert([(p, *self._read(p)) for p in files[start:start + _BATCH]], fresh=True)
            if progress is not None:
                progress(min(start + _BATCH, total), total)
        tree = dict(self.store.tree_files(_TOPS, commit=head)) if head else {}
        dirty = [p for p, blob in self.conn.execute("SELECT path, blob FROM files") if tree.get(p) != blob]
        self._set_meta(head=head or "", git_index=self._git_index_stamp(), swept_at=str(time.time()),
                       dirty=json.dumps(sorted(dirty)))
        return total

    # ------------------------------------------------------------ reading one file

    def _read(self, path: str) -> tuple[os.stat_result | None, bytes | None]:
        full = os.path.join(self.root, path)
        try:
            with open(full, "rb") as handle:
                st = os.fstat(handle.fileno())
                return st, handle.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None, None

    def _upsert(self, items: Sequence[tuple[str, os.stat_result | None, bytes | None]], *, fresh: bool = False) -> int:
        """Store files (None data: gone); return how many were removed."""
        files, records, members, links, texts = [], [], [], [], []
        removed = 0
        rowid = self.conn.execute("SELECT coalesce(max(rowid), 0) FROM records").fetchone()[0]
        if not fresh:
            gone = [(p,) for p, _, _ in items]
            rowids = [(r,) for (r,) in self.conn.execute(
                f"SELECT rowid FROM records WHERE path IN ({','.join('?' * len(gone))})", [p for (p,) in gone])]
            for table in ("members", "links", "search"):
                self.conn.executemany(f"DELETE FROM {table} WHERE rowid = ?", rowids)
            self.conn.executemany("DELETE FROM records WHERE path = ?", gone)
            self.conn.executemany("DELETE FROM files WHERE path = ?", gone)
        for path, st, data in items:
            if st is None or data is None:
                removed += 1
                continue
            blob = hash_blob(data)
            error = None
            try:
                record = parse_record(decode_record_bytes(data, path=path), path)
            except AmError as err:
                error, record = str(err), None
            files.append((path, blob, st.st_mtime_ns, st.st_size, st.st_ino, error, zlib.crc32(path.encode()) % _SLOTS))
            if record is None:
                continue
            rowid += 1
            records.append(self._row(rowid, path, record))
            title, aliases, tags = "", "", " ".join(record.tags)
            ends: tuple[str, ...]
            if isinstance(record, Topic):
                title, aliases, ends = record.title, " ".join(record.aliases), (record.id,)
            elif isinstance(record, Fact):
                ends = record.topics
            else:
                title, ends = f"{record.from_} {record.rel} {record.to}", (record.from_, record.to)
            members += [(rowid, t) for t in dict.fromkeys(ends)]
            links += [(rowid, target, vault or "") for target, vault in body_links(record.body)]
            texts.append((rowid, segment(title), segment(record.body), segment(aliases), segment(tags)))
        self.conn.executemany("INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, ?)", files)
        self.conn.executemany("INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", records)
        self.conn.executemany("INSERT OR IGNORE INTO members VALUES (?, ?)", members)
        self.conn.executemany("INSERT OR IGNORE INTO links VALUES (?, ?, ?)", links)
        self.conn.executemany("INSERT INTO search(rowid, title, body, aliases, tags) VALUES (?, ?, ?, ?, ?)", texts)
        return removed

    @staticmethod
    def _row(rowid: int, path: str, r: Record) -> tuple[Any, ...]:
        kind = r.kind if isinstance(r, Topic) else None
        title = r.title if isinstance(r, Topic) else None
        rel, src, dst = (r.rel, r.from_, r.to) if isinstance(r, Relation) else (None, None, None)
        repo = None if isinstance(r, Topic) else r.repo
        version = None if isinstance(r, Topic) else r.version
        pinned = int(r.pinned) if isinstance(r, Fact) else 0
        return (rowid, path, r.id, r.type, r.status, kind, title, rel, src, dst, repo, version, r.created,
                _timestamp(r.created), pinned, _record_json(r))

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

    def after_commit(self, commit: str, paths: Sequence[PurePosixPath]) -> None:
        """Take in am's own write: the paths it just committed (never raises; the write is done)."""
        try:
            self._refresh(False, trusted_paths=[str(p) for p in paths], began=time.perf_counter())
        except (sqlite3.Error, OSError, AmError) as err:
            # The commit stands; the next command catches up from the tree diff.
            log.warning("could not update the search cache after commit %s (%s)", commit[:10], err)

    def _full_sweep_always(self) -> bool:
        return os.environ.get("AM_CACHE_SWEEP") == "0"

    def _rolling_sweep(self) -> list[str]:
        """Return files of this second's slots whose stat data changed (an in-place save)."""
        count = self.conn.execute("SELECT count(*) FROM files").fetchone()[0] or 1
        width = max(1, min(_SLOTS, _SLOTS * _SWEEP_FILES // count))
        first = (int(time.time()) * width) % _SLOTS
        slots = [(first + i) % _SLOTS for i in range(width)]
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

    def _changed_dirs(self, only: set[str] | None = None) -> list[tuple[str, int]]:
        out = []
        root, stat = f"{self.root}/", os.stat  # this loop is most of a no-change check
        rows = self.conn.execute("SELECT path, mtime_ns FROM dirs").fetchall()
        for path, mtime in rows if only is None else [r for r in rows if r[0] in only]:
            try:
                now = stat(root + path).st_mtime_ns
            except (FileNotFoundError, NotADirectoryError):
                now = -1
            if now != mtime:
                out.append((path, now))
        return out

    def _refresh(self, full: bool, *, trusted_paths: Sequence[str], began: float) -> Refresh:
        meta = self._meta()
        head = self.store.head()
        git_index = self._git_index_stamp()
        dirty: list[str] = json.loads(meta.get("dirty") or "[]")
        sweep = full or self._full_sweep_always()
        if not (sweep or trusted_paths or head != (meta.get("head") or None)
                or git_index != meta.get("git_index") or self._changed_dirs() or self._stale(dirty)
                or self._rolling_sweep()):
            return Refresh(0, 0, 0, seconds=time.perf_counter() - began)
        with self._locked(exclusive=True):
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                result = self._update(head, git_index, sweep, trusted_paths)
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self._write_stamp()
        return Refresh(*result, seconds=time.perf_counter() - began)

    def _stale(self, paths: Iterable[str]) -> bool:
        for path in paths:
            row = self.conn.execute("SELECT mtime_ns, size, ino FROM files WHERE path = ?", (path,)).fetchone()
            try:
                st = os.stat(os.path.join(self.root, path))
            except (FileNotFoundError, NotADirectoryError):
                if row is not None:
                    return True
                continue
            if row is None or tuple(row) != (st.st_mtime_ns, st.st_size, st.st_ino):
                return True
        return False

    def _update(self, head: str | None, git_index: str, sweep: bool,
                trusted_paths: Sequence[str]) -> tuple[int, int, int]:
        meta = self._meta()  # again, under the lock: another process may have done the work
        old_head = meta.get("head") or None
        # Paths whose dirtiness (working copy != HEAD) may have changed.
        recheck: set[str] = set(trusted_paths) | set(json.loads(meta.get("dirty") or "[]"))
        # am's own commit on top of what the cache knew: the diff is exactly its paths.
        own = bool(trusted_paths) and head is not None and self.store.commit_info(head).parents[:1] == (
            (old_head,) if old_head else ())
        if head != old_head and not own:
            try:
                recheck.update(p for p, _ in self.store.diff_paths(old_head, head) if _is_record_path(p))
            except (KeyError, ValueError, AmError):
                sweep = True  # the old commit is gone (gc after a rebase): look at everything
        candidates = set(recheck)
        if not own:
            candidates.update(self._rolling_sweep())
        folders = None
        if own:
            # Only the folders am just wrote into; others keep their old times
            # and are looked at by the next command's check.
            folders = {str(PurePosixPath(p).parents[i]) for p in trusted_paths
                       for i in range(len(PurePosixPath(p).parts) - 1)}
        for path, mtime in self._changed_dirs(folders):
            candidates.update(self._scan_dir(path, mtime))
        if sweep:
            dirs, files = self._walk()
            self.conn.execute("DELETE FROM dirs")
            self.conn.executemany("INSERT INTO dirs VALUES (?, ?)", dirs)
            candidates.update(files)
            candidates.update(p for (p,) in self.conn.execute("SELECT path FROM files"))
        checked = len(candidates)
        changes: list[tuple[str, os.stat_result | None, bytes | None]] = []
        rows: dict[str, tuple[Any, ...]] | None = None
        if len(candidates) > 500:
            rows = {r[0]: r[1:] for r in self.conn.execute("SELECT path, blob, mtime_ns, size, ino FROM files")}
        for path in sorted(candidates):
            if rows is not None:
                row = rows.get(path)
            else:
                row = self.conn.execute("SELECT blob, mtime_ns, size, ino FROM files WHERE path = ?",
                                        (path,)).fetchone()
            try:
                st = os.stat(os.path.join(self.root, path))
            except (FileNotFoundError, NotADirectoryError):
                if row is not None:
                    changes.append((path, None, None))
                    recheck.add(path)
                continue
            if row is not None and tuple(row[1:]) == (st.st_mtime_ns, st.st_size, st.st_ino):
                continue
            fresh, data = self._read(path)
            if fresh is not None and data is not None and row is not None and hash_blob(data) == row[0]:
                self.conn.execute("UPDATE files SET mtime_ns=?, size=?, ino=? WHERE path=?",
                                  (fresh.st_mtime_ns, fresh.st_size, fresh.st_ino, path))
                continue
            if fresh is None and row is None:
                continue  # appeared and vanished again
            changes.append((path, fresh, data))
            recheck.add(path)
        removed = 0
        for start in range(0, len(changes), _BATCH):
            removed += self._upsert(changes[start:start + _BATCH])
        # Files whose working copy differs from HEAD (or is untracked): re-checked every time.
        if sweep:
            tree = dict(self.store.tree_files(_TOPS, commit=head)) if head else {}
            dirty = [p for p, blob in self.conn.execute("SELECT path, blob FROM files ORDER BY path")
                     if tree.get(p) != blob]
        else:
            dirty = []
            for path in sorted(recheck):
                row = self.conn.execute("SELECT blob FROM files WHERE path = ?", (path,)).fetchone()
                if row is not None and (head is None or self.store.blob_id(path, commit=head) != row[0]):
                    dirty.append(path)
        swept = {"swept_at": str(time.time())} if sweep else {}
        self._set_meta(head=head or "", git_index=git_index, dirty=json.dumps(dirty), **swept)
        return checked, len(changes) - removed, removed

    def _scan_dir(self, path: str, mtime: int) -> set[str]:
        """Return the files to look at in a folder whose time changed, and record its new time."""
        found: set[str] = set()
        lo, hi = path + "/", path + "0"  # '0' sorts right after '/'
        known_files = [p for (p,) in self.conn.execute(
            "SELECT path FROM files WHERE path >= ? AND path < ?", (lo, hi))]
        if mtime == -1:
            self.conn.execute("DELETE FROM dirs WHERE path = ? OR (path >= ? AND path < ?)", (path, lo, hi))
            if path in _TOPS:
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

    # ------------------------------------------------------------ queries

    def lookup(self, record_id: str) -> PurePosixPath | None:
        """Return the path of the record with this id (the first by path if duplicated), or None."""
        row = self.conn.execute("SELECT path FROM records WHERE id = ? ORDER BY path LIMIT 1",
                                (record_id,)).fetchone()
        return PurePosixPath(row[0]) if row else None

    def invalid_paths(self, record_id: str) -> list[PurePosixPath]:
        """Return files named after this id that do not parse as records."""
        name = f"{record_id}.md"
        return [PurePosixPath(p) for (p,) in self.conn.execute(
            "SELECT path FROM files WHERE error IS NOT NULL ORDER BY path") if p.rsplit("/", 1)[-1] == name]

    def get(self, record_id: str) -> tuple[PurePosixPath, Record] | None:
        """Return (path, record) for an id, or None."""
        row = self.conn.execute("SELECT path, type, data FROM records WHERE id = ? ORDER BY path LIMIT 1",
                                (record_id,)).fetchone()
        return (PurePosixPath(row[0]), _record_from_json(row[1], row[2])) if row else None

    def records(self, *, type: str | None = None, topic: str | None = None, status: str | None = None,
                ids: Iterable[str] | None = None) -> list[tuple[PurePosixPath, Record]]:
        """Return (path, record) pairs of the working tree, sorted by id then path."""
        where, args = self._filters(type=type, topic=topic, status=status)
        if ids is not None:
            wanted = list(ids)
            where.append(f"r.id IN (SELECT value FROM json_each(?))")
            args.append(json.dumps(wanted))
        sql = "SELECT r.path, r.type, r.data FROM records r"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY r.id, r.path"
        return [(PurePosixPath(p), _record_from_json(t, d)) for p, t, d in self.conn.execute(sql, args)]

    def fact_world_rows(self) -> list[tuple[Any, ...]]:
        """Return the world fields of every fact, bodies left out, sorted by id then path.

        Columns: id, status, confidence, repo, version, commit, until_commit,
        valid_from, valid_until, supersedes (JSON list), superseded_by, pinned,
        created, topics (JSON list). A slice judges and ranks these and decodes
        only the facts it shows.
        """
        fields = ("status", "confidence", "repo", "version", "commit", "until_commit", "valid_from",
                  "valid_until", "supersedes", "superseded_by", "pinned", "created", "topics")
        order = _FIELDS[Fact]
        cols = ", ".join(f"json_extract(data, '$[{order.index(name)}]')" for name in fields)
        return self.conn.execute(f"SELECT id, {cols} FROM records WHERE type = 'fact' ORDER BY id, path").fetchall()

    def record_values(self, *, type: str | None = None) -> list[Record]:
        """Return every record of the working tree (or of one type), sorted by id then path."""
        sql = "SELECT type, data FROM records" + (" WHERE type = ?" if type else "") + " ORDER BY id, path"
        return [_record_from_json(t, d) for t, d in self.conn.execute(sql, (type,) if type else ())]

    @staticmethod
    def _filters(*, type: str | None = None, topic: str | None = None, status: str | None = None,
                 statuses: Sequence[str] | None = None, repo: str | None = None,
                 types: Sequence[str] | None = None, since: datetime | None = None,
                 until: datetime | None = None) -> tuple[list[str], list[Any]]:
        where: list[str] = []
        args: list[Any] = []
        if type is not None:
            where.append("r.type = ?")
            args.append(type)
        if types:
            where.append(f"r.type IN ({','.join('?' * len(types))})")
            args += list(types)
        if topic is not None:
            where.append("r.rowid IN (SELECT rowid FROM members WHERE topic = ?)")
            args.append(topic)
        if status is not None:
            where.append("r.status = ?")
            args.append(status)
        if statuses is not None:
            where.append(f"r.status IN ({','.join('?' * len(statuses))})")
            args += list(statuses)
        if repo is not None:
            # A record without a repo holds in every repo's world (DESIGN §5).
            where.append("(r.repo = ? OR r.repo IS NULL)")
            args.append(repo)
        if since is not None:
            where.append("r.created_ts >= ?")
            args.append(since.timestamp())
        if until is not None:
            where.append("r.created_ts < ?")
            args.append(until.timestamp())
        return where, args

    def links(self, *, source: str | None = None, target: str | None = None,
              dangling: bool | None = None) -> list[IndexedLink]:
        """Return body wikilinks, sorted by source then target; cross-vault links never dangle here."""
        sql = ("SELECT r.id, r.path, l.target, l.vault, "
               "l.vault = '' AND NOT EXISTS (SELECT 1 FROM records t WHERE t.id = l.target) "
               "FROM links l JOIN records r ON r.rowid = l.rowid")
        where, args = [], []
        if source is not None:
            where.append("r.id = ?")
            args.append(source)
        if target is not None:
            where.append("l.target = ?")
            args.append(target)
        if where:
            sql += " WHERE " + " AND ".join(where)
        out = [IndexedLink(s, PurePosixPath(p), t, v or None, bool(d))
               for s, p, t, v, d in self.conn.execute(sql + " ORDER BY r.id, r.path, l.target, l.vault", args)]
        return out if dangling is None else [link for link in out if link.dangling == dangling]

    def search(self, match: str, *, limit: int = 20, since: datetime | None = None, until: datetime | None = None,
               statuses: Sequence[str] | None = None, topic: str | None = None, repo: str | None = None,
               types: Sequence[str] | None = None) -> list[Hit]:
        """Return records matching a user's text (all words, CJK found inside runs), best BM25 first.

        Ties are broken by id, so the answer depends only on the files. With
        empty text, return the newest records that pass the filters.
        """
        where, args = self._filters(topic=topic, statuses=statuses, repo=repo, types=types,
                                    since=since, until=until)
        expression = build_match(match) if match.strip() else None
        cols = "r.id, r.path, r.type, r.status, r.created"
        if expression is None:
            sql = f"SELECT {cols}, 0.0 FROM records r"
            if where:
                sql += " WHERE " + " AND ".join(where)
            sql += " ORDER BY r.created_ts DESC, r.id LIMIT ?"
            rows = self.conn.execute(sql, [*args, limit]).fetchall()
            return [Hit(i, PurePosixPath(p), t, s, c, float(rank)) for i, p, t, s, c, rank in rows]
        # Rank inside FTS5 alone (2-3x faster than ranking through a join on a
        # word found in 10k records), then read the best records a few at a time.
        narrowing = any(x is not None for x in (since, until, topic, repo, types))
        cut = None if narrowing else limit * 4 + 50
        while True:
            found, complete = self._best(expression, cols, where, args, limit, cut, narrowing)
            if complete or cut is None:
                return [Hit(i, PurePosixPath(p), t, s, c, float(rank)) for i, p, t, s, c, rank in found]
            cut = None  # the best few were not enough (filtered out, or tied at the cut): rank all

    def _best(self, expression: str, cols: str, where: list[str], args: list[Any], limit: int,
              cut: int | None, narrowing: bool) -> tuple[list[tuple[Any, ...]], bool]:
        """Return the best ``limit`` hits among the ``cut`` best-ranked matches, and whether that is exact."""
        if cut is None:
            pairs = self.conn.execute(f"SELECT rowid, {_BM25} FROM search WHERE search MATCH ?",
                                      (expression,)).fetchall()
            if narrowing:
                # Apply the filters to the set first; a narrow one (a week, a topic) leaves little to rank.
                allowed = {r for (r,) in self.conn.execute(
                    "SELECT r.rowid FROM records r WHERE " + " AND ".join(where), args)}
                pairs = [p for p in pairs if p[0] in allowed]
                where, args = [], []
            pairs.sort(key=lambda p: p[1])
        else:
            pairs = self.conn.execute(f"SELECT rowid, {_BM25} AS rank FROM search WHERE search MATCH ? "
                                      f"ORDER BY rank LIMIT {cut}", (expression,)).fetchall()
        sql = (f"SELECT {cols}, r.rowid FROM records r WHERE r.rowid IN (SELECT value FROM json_each(?))"
               + "".join(f" AND {w}" for w in where))
        ranks = dict(pairs)
        found: list[tuple[Any, ...]] = []
        at, step = 0, limit * 2 + 10
        while at < len(pairs):
            if len(found) >= limit and pairs[at][1] > ranks[found[limit - 1][-1]]:
                break  # nothing further can come before or tie with the last kept hit
            chunk = [rowid for rowid, _ in pairs[at:at + step]]
            at, step = at + step, step * 2
            found += self.conn.execute(sql, [json.dumps(chunk), *args]).fetchall()
            found.sort(key=lambda row: (ranks[row[-1]], row[0]))
        complete = (cut is None or len(pairs) < cut
                    or (len(found) >= limit and pairs[-1][1] > ranks[found[limit - 1][-1]]))
        return [(*row[:-1], ranks[row[-1]]) for row in found[:limit]], complete

    def ids_with_prefix(self, prefix: str, *, limit: int = 20, since: datetime | None = None,
                        until: datetime | None = None, statuses: Sequence[str] | None = None,
                        topic: str | None = None, repo: str | None = None,
                        types: Sequence[str] | None = None) -> list[Hit]:
        """Return records whose id starts with ``prefix`` and pass the filters, sorted by id."""
        where, args = self._filters(topic=topic, statuses=statuses, repo=repo, types=types, since=since, until=until)
        sql = ("SELECT r.id, r.path, r.type, r.status, r.created FROM records r WHERE r.id >= ? AND r.id < ?"
               + "".join(f" AND {w}" for w in where) + " ORDER BY r.id, r.path LIMIT ?")
        rows = self.conn.execute(sql, [prefix, prefix + "\U0010ffff", *args, limit]).fetchall()
        return [Hit(i, PurePosixPath(p), t, s, c, 0.0) for i, p, t, s, c in rows]

    def status(self) -> IndexStatus:
        """Return counts and problems of the cache."""
        meta = self._meta()
        counts = dict(self.conn.execute("SELECT type, count(*) FROM records GROUP BY type").fetchall())
        invalid = self.conn.execute("SELECT path, error FROM files WHERE error IS NOT NULL ORDER BY path").fetchall()
        dup = [i for (i,) in self.conn.execute(
            "SELECT id FROM records GROUP BY id HAVING count(*) > 1 ORDER BY id")]
        size = sum(p.stat().st_size for p in self.path.parent.glob(DB_NAME + "*") if p.is_file())
        return IndexStatus(
            path=self.path, schema=int(meta.get("schema", 0)), head=meta.get("head") or None, counts=counts,
            files=self.conn.execute("SELECT count(*) FROM files").fetchone()[0],
            invalid=[(p, e) for p, e in invalid], dirty=json.loads(meta.get("dirty") or "[]"),
            duplicates=dup, bytes=size, swept_at=float(meta.get("swept_at") or 0),
        )

    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Return the cache's content without bookkeeping (stat data, row ids), for comparisons."""
        return {
            "files": self.conn.execute("SELECT path, blob, error FROM files ORDER BY path").fetchall(),
            "records": self.conn.execute(
                "SELECT path, id, type, status, kind, title, rel, src, dst, repo, version, created, created_ts, "
                "pinned, data FROM records ORDER BY path").fetchall(),
            "members": self.conn.execute(
                "SELECT r.path, m.topic FROM members m JOIN records r USING(rowid) ORDER BY 1, 2").fetchall(),
            "links": [(str(l.path), l.target, l.vault, l.dangling) for l in self.links()],
            "search": self.conn.execute(
                "SELECT r.path, s.title, s.body, s.aliases, s.tags FROM search s JOIN records r "
                "ON r.rowid = s.rowid ORDER BY 1").fetchall(),
            "dirty": [(p,) for p in json.loads(self._meta().get("dirty") or "[]")],
        }

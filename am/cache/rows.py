"""What a record file becomes in the cache: values, search text, links, rows. Pure, no I/O.

am/cache/index.py stores these; am/cache/query.py reads them back. ``segment`` and
``body_links`` are fast equivalents of am/cache/textseg.py and am/records/links.py (tests hold
them equal), because a rebuild calls them for every file.

Decisions: docs/decisions/cache.md.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path, PurePosixPath
from typing import Any

from am.records.ids import RECORD_DIRS, stored_moment
from am.records.model import Fact, Record, Relation, Topic
from am.cache.stems import _STEMS, stem
from am.cache.textseg import _CJK_RANGES

__all__ = [
    "Known", "check_known", "SCHEMA_VERSION", "Hit", "IndexedLink", "Refresh", "IndexStatus", "TOPS", "SLOTS", "rank_rowid",
    "segment", "body_links", "record_json", "record_from_json", "is_record_path", "file_slot", "record_rows",
    "record_names", "name_refs", "resolve_refs", "NOTE_ERROR", "OWN", "by_id", "UNREADABLE_WHERE", "note_row", "statement_key",
    "distinct_repos",
]

SCHEMA_VERSION = 20  # bump whenever _SCHEMA or what a row holds changes: older caches are rebuilt

TOPS = tuple(RECORD_DIRS.values())
SLOTS = 256  # files are spread over slots; each command stats a few slots (the rolling sweep)


# ---------------------------------------------------------------- schema

NOTE_ERROR = "a note (no am frontmatter): searched as a note, never a record"
"""The ``files.error`` of a note: not a record, and not invalid either."""
# The record files that could not be read, committed or not (IndexQueries.unreadable_paths: every list and
# pack names how many, through this partial index, which holds nothing in a healthy vault).
UNREADABLE_WHERE = f"error IS NOT NULL AND error != '{NOTE_ERROR}'"

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
CREATE TABLE files(path TEXT PRIMARY KEY, blob TEXT NOT NULL, mtime_ns INTEGER, size INTEGER,
                   ino INTEGER, error TEXT, slot INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX files_slot ON files(slot, mtime_ns, size, ino);  -- covering: the rolling sweep reads only this
CREATE TABLE dirs(path TEXT PRIMARY KEY, mtime_ns INTEGER) WITHOUT ROWID;
-- A token that changes whenever a row of files or dirs comes or goes (random: a rolled-back change
-- cannot come back to a value seen before), so a process knows whether the folder listings it
-- remembers are still what the cache holds (am/cache/scan.py, _note_own_folders).
CREATE TABLE names_token(n INTEGER NOT NULL);
INSERT INTO names_token VALUES (0);
CREATE TRIGGER files_in AFTER INSERT ON files BEGIN UPDATE names_token SET n = random(); END;
CREATE TRIGGER files_out AFTER DELETE ON files BEGIN UPDATE names_token SET n = random(); END;
CREATE TRIGGER dirs_in AFTER INSERT ON dirs BEGIN UPDATE names_token SET n = random(); END;
CREATE TRIGGER dirs_out AFTER DELETE ON dirs BEGIN UPDATE names_token SET n = random(); END;
CREATE TABLE records(rowid INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, id TEXT NOT NULL, type TEXT NOT NULL,
  status TEXT, kind TEXT, title TEXT, rel TEXT, src TEXT, dst TEXT, repo TEXT, version TEXT, created TEXT, created_ts REAL,
  pinned INTEGER, conf TEXT, commit_id TEXT, until_commit TEXT, valid_from TEXT, valid_until TEXT, supersedes TEXT,
  superseded_by TEXT, topics TEXT, paths TEXT, statement INTEGER, data TEXT NOT NULL);  -- world fields before data: reading them skips its pages
CREATE INDEX records_id ON records(id, path);
CREATE INDEX records_created ON records(created_ts);
-- Covering indexes for a slice (am/packs/cache.py), which judges worlds from these and reads `data` only for
-- the facts a pack shows: world fields by id, grouped by value, in rank order, supersession edges, topics, relations.
CREATE INDEX records_fact ON records(id, status, repo, version, commit_id, until_commit, valid_from, valid_until)
  WHERE type = 'fact';
CREATE INDEX records_world ON records(status, repo, version, commit_id, until_commit, valid_from, valid_until)
  WHERE type = 'fact';
CREATE INDEX records_rank ON records(pinned DESC, (CASE COALESCE(conf, 'medium') WHEN 'high' THEN 0
  WHEN 'medium' THEN 1 WHEN 'low' THEN 2 ELSE 3 END), created_ts DESC, id) WHERE type = 'fact';
CREATE INDEX records_supersedes ON records(id, status, repo, version, commit_id, until_commit, valid_from,
  valid_until, supersedes) WHERE type = 'fact' AND supersedes != '[]';
CREATE INDEX records_successor ON records(superseded_by, id, status, repo, version, commit_id, until_commit,
  valid_from, valid_until) WHERE type = 'fact' AND superseded_by IS NOT NULL;
CREATE INDEX records_topic ON records(id, path, status) WHERE type = 'topic';
-- A fact's statement_key: a fact add asks whether the vault already says the same (am/cache/statements.py).
CREATE INDEX records_statement ON records(statement) WHERE type = 'fact';
-- Changes whenever a record row comes, goes or changes: what is derived from the records and kept beside
-- them (a world's verdicts and supersession, am/packs/worldmemo.py) is good while it stays the same.
CREATE TABLE records_token(n INTEGER NOT NULL);
INSERT INTO records_token VALUES (random());
CREATE TRIGGER records_in AFTER INSERT ON records BEGIN UPDATE records_token SET n = random(); END;
CREATE TRIGGER records_out AFTER DELETE ON records BEGIN UPDATE records_token SET n = random(); END;
CREATE TRIGGER records_changed AFTER UPDATE ON records BEGIN UPDATE records_token SET n = random(); END;
-- The code-repo names records give (validating --repo): read a name at a time, never a scan (distinct_repos).
CREATE INDEX records_repo ON records(repo) WHERE repo IS NOT NULL;
-- Facts that watch code paths (derived staleness, am/worlds/stale.py): few, and read with their world fields.
CREATE INDEX records_watch ON records(repo, type, id, status, version, commit_id, until_commit, valid_from,
  valid_until, paths) WHERE type = 'fact' AND paths IS NOT NULL;  -- type too, or SQLite reads every row's page
CREATE INDEX records_relation ON records(id, path, rel, src, dst, status, repo, version, commit_id, until_commit,
  valid_from, valid_until) WHERE type = 'relation';
-- (type, id) pairs that two or more files hold (a person's copy): kept by triggers, so a reader asks one row,
-- not a scan of every id, whether the first-by-path rule matters.
CREATE TABLE twins(type TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY(type, id)) WITHOUT ROWID;
CREATE TRIGGER records_twin_in AFTER INSERT ON records
  WHEN EXISTS (SELECT 1 FROM records WHERE id = NEW.id AND type = NEW.type AND rowid != NEW.rowid)
  BEGIN INSERT OR IGNORE INTO twins VALUES (NEW.type, NEW.id); END;
CREATE TRIGGER records_twin_out AFTER DELETE ON records
  WHEN (SELECT count(*) FROM records WHERE id = OLD.id AND type = OLD.type) < 2
  BEGIN DELETE FROM twins WHERE type = OLD.type AND id = OLD.id; END;
CREATE TRIGGER records_twin_moved AFTER UPDATE OF id, type ON records BEGIN
  INSERT OR IGNORE INTO twins SELECT NEW.type, NEW.id
    WHERE EXISTS (SELECT 1 FROM records WHERE id = NEW.id AND type = NEW.type AND rowid != NEW.rowid);
  DELETE FROM twins WHERE type = OLD.type AND id = OLD.id
    AND (SELECT count(*) FROM records WHERE id = OLD.id AND type = OLD.type) < 2;
END;
-- Columns in primary-key order: on a WITHOUT ROWID table whose key is declared out of column order, SQLite
-- 3.40's quick_check reports a false "NULL value in members.rowid" for every row (the cache was then moved
-- aside and rebuilt on every copied or restored vault). tests/adversarial/test_cache_health.py holds it.
CREATE TABLE members(topic TEXT NOT NULL, rowid INTEGER NOT NULL, PRIMARY KEY(topic, rowid)) WITHOUT ROWID;
CREATE INDEX members_rowid ON members(rowid);
CREATE TABLE links(rowid INTEGER NOT NULL, target TEXT NOT NULL, vault TEXT NOT NULL DEFAULT '',
                   PRIMARY KEY(rowid, target, vault)) WITHOUT ROWID;
CREATE INDEX links_target ON links(target);
-- The names a link may use for a record (Obsidian: file name; then id, title, aliases: rank 0-3), as
-- am/records/names.py keys them; and the files whose link-valued keys name records by such a name
-- ("[[Li Wei]]"), whose rows hold the resolved ids and are redone when a topic comes, goes or changes.
CREATE TABLE names(key TEXT NOT NULL, rank INTEGER NOT NULL, path TEXT NOT NULL, id TEXT NOT NULL,
                   rowid INTEGER NOT NULL, PRIMARY KEY(key, rank, path)) WITHOUT ROWID;
CREATE INDEX names_rowid ON names(rowid);
CREATE TABLE namerefs(path TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE VIRTUAL TABLE search USING fts5(title, body, aliases, tags, tokenize = "unicode61 remove_diacritics 2");
-- Notes (Markdown without am frontmatter, am/records/notes.py): searchable, never records. The same four
-- columns as `search` (a query's expression fits both), the path, and the text for a snippet.
CREATE VIRTUAL TABLE notes USING fts5(title, body, aliases, tags, path UNINDEXED, raw UNINDEXED,
  tokenize = "unicode61 remove_diacritics 2");
""" + f"CREATE INDEX files_unreadable ON files(path) WHERE {UNREADABLE_WHERE};\n"


# ---------------------------------------------------------------- values

@dataclass(frozen=True)
class Hit:
    """One search result: a record id, where it lives, and its BM25 rank (lower is better).

    ``matched`` of ``terms`` query terms occur in it (-1: not counted, e.g. an id match), and
    ``tier`` says how: 0 the terms as a phrase, 1 every term, 2 some of them.
    """

    id: str
    path: PurePosixPath
    type: str
    status: str
    created: str | None
    rank: float
    matched: int = -1
    terms: int = 0
    tier: int = 0


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
    notes: int = 0  # files that are notes (no am frontmatter): searchable, not records, not invalid



# textseg.segment_for_index walks the text a character at a time; these
# regular expressions find the same runs (``[^\W_]`` is exactly str.isalnum)
# about 10x faster, which matters for a rebuild. A test holds them equal.
_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")
_CJK_CLASS = "".join(f"{chr(low)}-{chr(high)}" for low, high in _CJK_RANGES)
_RUN: list[re.Pattern[str]] = []  # compiled on first use: ~10 ms that a read never needs


def segment(text: str) -> str:
    """Return text as the FTS column stores it: exactly textseg.segment_for_index, faster."""
    if not text:
        return ""
    stems, stem_new = _STEMS, stem
    if text.isascii():
        return " ".join([stems.get(w) or stem_new(w) for w in _ASCII_WORD.findall(text.lower())])
    tokens: list[str] = []
    if not _RUN:
        _RUN.append(re.compile(rf"((?:(?=[{_CJK_CLASS}])[^\W_])+)|((?:(?![{_CJK_CLASS}])[^\W_])+)"))
    for cjk, other in _RUN[0].findall(unicodedata.normalize("NFKC", text)):
        if cjk:
            tokens += [cjk[i:i + 2] for i in range(len(cjk) - 1)]
            tokens.append(cjk[-1])
        else:
            word = other.lower()
            tokens.append(stems.get(word) or stem_new(word))
    return " ".join(tokens)


_WIKILINK = re.compile(r"\[\[([^\[\]\n]*)\]\]")
# Characters that can put a "[[" inside code, HTML, an escape, an entity or a
# table cell; with none of them (and no indented line or "]:" reference
# definition) the wikilinks are exactly the regex's matches, no parser needed.
_MARKDOWN_RISK = re.compile(r"[`<\\&|~\t]|    |\]:")


def body_links(body: str) -> list[tuple[str, str | None]]:
    """Return the distinct (target, vault) wikilinks of a body, as am/records/links.py finds them."""
    if "[[" not in body and "obsidian://" not in body:
        return []
    from am.records import links

    if _MARKDOWN_RISK.search(body) or "obsidian://" in body:
        found = [(link.target, link.vault) for link in links.parse_links(body)]
    else:
        found = []
        for match in _WIKILINK.finditer(body):
            parts = links._split(match.group(1))
            if parts is not None:
                found.append((parts[0], parts[1]))
    return list(dict.fromkeys(found))


def _timestamp(value: str | None) -> float | None:
    moment = stored_moment(value)
    return None if moment is None else moment.timestamp()


_CLASSES: dict[str, type[Record]] = {"topic": Topic, "fact": Fact, "relation": Relation}
RECORD_FIELDS = {cls: tuple(f.name for f in fields(cls)) for cls in _CLASSES.values()}
_TUPLES = {cls: tuple(i for i, f in enumerate(fields(cls)) if str(f.type).startswith("tuple"))
           for cls in _CLASSES.values()}


def record_json(record: Record) -> str:
    """Return a record as the cache stores it: a JSON array of its fields, in order."""
    # A JSON array in field order: the cache's own format, rebuilt without re-validation.
    # A dataclass's __dict__ holds its fields in declaration order.
    return json.dumps(list(record.__dict__.values()), separators=(",", ":"))


# 1 for a record in the file named after its id (am/records/ids.py record_file), else 0. Where two files hold
# one id, that one is the record and the other an impostor (issue 36.8); a person's renamed file (the only one
# with its id, docs/obsidian.md) is still the record. Ids hold no GLOB metacharacters (am/records/ids.py).
OWN = "(path GLOB '*/' || id || '.md')"


def by_id(alias: str = "", *, twins: bool) -> str:
    """Return the ORDER BY of records by id: where two files share an id (``twins``), the one named after it first.

    Without twins it is ``id, path``, which the index on (id, path) gives without a sort (a slice reads every
    fact so); with twins the file named after its id comes first, as ``IndexQueries.lookup`` takes it.
    """
    if not twins:
        return f"{alias}id, {alias}path"
    own = OWN.replace("path", f"{alias}path").replace("|| id", f"|| {alias}id")
    return f"{alias}id, {own} DESC, {alias}path"


def distinct_repos(conn: Any) -> list[str]:
    """Return the code-repo names the records give, sorted: one index seek per name (a skip scan), so the cost
    grows with the number of names, not of records (``SELECT DISTINCT`` reads every entry: 50 ms at 100k)."""
    names: list[str] = []
    sql = "SELECT min(repo) FROM records INDEXED BY records_repo WHERE repo IS NOT NULL"
    row = conn.execute(sql).fetchone()
    while row is not None and row[0] is not None:
        names.append(row[0])
        row = conn.execute(sql + " AND repo > ?", (row[0],)).fetchone()
    return names


def record_from_json(rtype: str, text: str) -> Record:
    """Return the record stored by ``record_json``."""
    cls = _CLASSES[rtype]
    values = json.loads(text)
    for i in _TUPLES[cls]:
        values[i] = tuple(values[i])
    # The values were validated when the file was parsed; filling the frozen
    # instance's __dict__ directly is ~5x faster than calling __init__.
    record = object.__new__(cls)
    record.__dict__.update(zip(RECORD_FIELDS[cls], values))
    return record


def is_record_path(path: str) -> bool:
    """Return whether a vault-relative path is a record file am indexes."""
    parts = path.split("/")
    return (len(parts) > 1 and parts[0] in TOPS and path.endswith(".md")
            and not any(p.startswith(".") for p in parts))



_NOTE_RAW = 4000  # characters of a note's text kept for snippets


def note_row(path: str, data: bytes) -> tuple[str, str, str, str, str, str] | None:
    """Return a note's full-text row (title, body, aliases, tags, path, raw text), or None if the file is no note."""
    from am.records.notes import note_text

    found = note_text(path, data)
    if found is None:
        return None
    title, text = found
    return segment(title), segment(text), "", "", path, text[:_NOTE_RAW]


def file_slot(path: str) -> int:
    """Return the rolling-sweep slot of a file path (stable across runs and machines)."""
    return zlib.crc32(path.encode()) % SLOTS


def _world_columns(r: Record) -> tuple[Any, ...]:
    """Return a record's world fields that have no column of their own (a slice reads them without the JSON)."""
    if isinstance(r, Relation):
        return (None, r.commit, r.until_commit, r.valid_from, r.valid_until, None, None, None, None, None)
    if not isinstance(r, Fact):
        return (None,) * 10
    return (r.confidence, r.commit, r.until_commit, r.valid_from, r.valid_until, _ids_json(r.supersedes),
            r.superseded_by, _ids_json(r.topics), _ids_json(r.paths) if r.paths else None, statement_key(r.body))


def statement_key(text: str) -> int:
    """Return the key of a fact's statement: the CRC-32 of its text with every run of whitespace made one space.

    Case counts (``getUser`` and ``getuser`` are different code); two statements with one key
    are compared in full before either is called the same (am/cache/statements.py).
    """
    return zlib.crc32(" ".join(text.split()).encode("utf-8"))


def _ids_json(ids: tuple[str, ...]) -> str:
    return json.dumps(list(ids), ensure_ascii=False, separators=(",", ":"))


_AGE_BITS, _HASH_BITS = 35, 26  # seconds since 1970 (to the year 3058), then 26 bits of the id's hash


def rank_rowid(r: Record) -> int:
    """Return the row id a record asks for: its static rank, so full text reads the likeliest answers first.

    FTS5 walks an expression's matches in row id order, so a search that scores only a
    bounded set of a common term's matches (am/cache/query.py, ``_scored``) takes the
    first ones: topics (their titles and aliases weigh most in BM25), then every other
    record newest first (undated last), then by a hash of the id. The id depends only on
    the record, never on the order files were taken in; two records that ask for one id
    (same class, second and hash) take the next free one.
    """
    moment = _timestamp(r.created)
    seconds = 0 if moment is None else min(max(int(moment), 0) + 1, (1 << _AGE_BITS) - 1)
    age = (1 << _AGE_BITS) - 1 - seconds
    klass = 0 if isinstance(r, Topic) else 1
    digest = zlib.crc32(r.id.encode("utf-8")) & ((1 << _HASH_BITS) - 1)
    return (((klass << _AGE_BITS) | age) << _HASH_BITS) | digest


def record_rows(rowid: int, path: str, r: Record) -> tuple[tuple[Any, ...], list[tuple[int, str]],
                                                            list[tuple[int, str, str]], tuple[Any, ...]]:
    """Return a record's row, its topic memberships, its links and its full-text row."""
    kind = r.kind if isinstance(r, Topic) else None
    rel, src, dst = (r.rel, r.from_, r.to) if isinstance(r, Relation) else (None, None, None)
    repo = None if isinstance(r, Topic) else r.repo
    version = None if isinstance(r, Topic) else r.version
    pinned = int(r.pinned) if isinstance(r, Fact) else 0
    row = (rowid, path, r.id, r.type, r.status, kind, r.title if isinstance(r, Topic) else None, rel, src, dst,
           repo, version, r.created, _timestamp(r.created), pinned, *_world_columns(r), record_json(r))
    title, aliases, tags = "", "", " ".join(r.tags)
    ends: tuple[str, ...]
    if isinstance(r, Topic):
        title, aliases, ends = r.title, " ".join(r.aliases), (r.id,)
    elif isinstance(r, Fact):
        ends = r.topics
    else:
        title, ends = f"{r.from_} {r.rel} {r.to}", (r.from_, r.to)
    members = [(rowid, t) for t in dict.fromkeys(ends)]
    links = [(rowid, target, vault or "") for target, vault in body_links(r.body)]
    text = (rowid, segment(title), segment(r.body), segment(aliases), segment(tags))
    return row, members, links, text


def record_names(rowid: int, path: str, r: Record) -> list[tuple[str, int, str, str, int]]:
    """Return the names rows of a record: (key, rank, path, id, rowid), as am/records/names.py ranks them."""
    from am.records.names import name_key

    stem = path.rsplit("/", 1)[-1][:-3]
    rows = [(name_key(stem), 0, path, r.id, rowid), (name_key(r.id), 1, path, r.id, rowid)]
    if isinstance(r, Topic):
        rows.append((name_key(r.title), 2, path, r.id, rowid))
        rows += [(name_key(a), 3, path, r.id, rowid) for a in r.aliases]
    return [row for row in dict.fromkeys(rows) if row[0]]


def name_refs(r: Record) -> list[str]:
    """Return the link-valued references of a record that name a record by a name, not an id ("[[Li Wei]]")."""
    if isinstance(r, Fact):
        refs = [*r.topics, *r.supersedes, *([r.superseded_by] if r.superseded_by else [])]
    elif isinstance(r, Relation):
        refs = [r.from_, r.to]
    else:
        return []
    return [x for x in refs if x.startswith("[[")]


def resolve_refs(r: Record, resolve: Any) -> Record:
    """Return the record with its "[[Name]]" references replaced by the ids ``resolve(name)`` gives (None: kept)."""
    from am.records.model import replace

    def one(ref: str) -> str:
        if not ref.startswith("[["):
            return ref
        found = resolve(ref)
        return found if isinstance(found, str) else ref

    if isinstance(r, Fact):
        return replace(r, topics=tuple(dict.fromkeys(one(t) for t in r.topics)),
                       supersedes=tuple(one(t) for t in r.supersedes),
                       superseded_by=one(r.superseded_by) if r.superseded_by else None)
    if isinstance(r, Relation):
        return replace(r, from_=one(r.from_), to=one(r.to))
    return r


# What am's own write rendered: by path, the bytes and the record they came from.
Known = Mapping[str, tuple[bytes, Record]]


def check_known(path: str, data: bytes, record: Record) -> Record:
    """Return a record am rendered to ``data``; with AM_CHECK_KNOWN=1 (the tests), prove it parses back to itself."""
    if os.environ.get("AM_CHECK_KNOWN") == "1":
        from am.records.codec import decode_record_bytes, parse_record

        parsed = parse_record(decode_record_bytes(data, path=path), path)
        if parsed != record:
            raise AssertionError(f"{path}: the record am wrote does not parse back to itself:\n"
                                 f"  wrote  {record!r}\n  parsed {parsed!r}")
    return record

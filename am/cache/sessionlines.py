"""Session lines in the cache: what was said in the ingested logs, ranked by BM25 (`am search --session`).

The logs under ``sessions/`` (am/sessions/ingest.py) are not records, so they
have tables of their own beside the records', made on first use and gone with
the rest of the cache (a rebuild starts without them; the next session search
reads the logs again):

- ``session_logs``: each log as it was indexed (its blob id, size, lines and
  stat signature), so an unchanged log is never read again, and a log that
  grew (its indexed bytes are a prefix of the new ones, checked by blob id) has
  only its new lines read;
- ``session_lines``: one row a message (a line can say several: text and a
  tool call), with the log, its line, the byte offset of the line, the message's
  place in the line, role and time;
- ``session_text``: a contentless FTS5 table of the messages' text. The words
  are stemmed by FTS5's own Porter tokenizer, in C: the records' table is
  stemmed in Python (Snowball, am/cache/rows.py ``segment``), which costs ~14 s
  for the text of a 50 MB log against ~1 s here (docs/decisions/sessions.md#session-search-is-ranked-through-cache-tables-of-its-own). Chinese and
  Japanese runs are cut into bigrams as the records' are. Contentless, the table
  holds no second copy of the text; a hit's excerpt is read from the log at its
  offset. A log that changed otherwise than by growing, or went away, makes the
  three tables start again (rare: ingest only appends or replaces).

A query is the records' (am/cache/terms.py ``analyse``: stop words out, CJK
words as bigram phrases), asked at three levels as records are: the words as
a phrase, then every word, then some of them (re-ranked by how many), each
level by BM25, ties by log and line. Words are passed as typed, so the
tokenizer stems them as it stemmed the text.

No sqlite3 import: statements run on ``Index.conn`` under the cache's own lock.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from am.cache.textseg import _CJK_RANGES
from am.git import hash_blob
from am.records.ids import stored_moment

if TYPE_CHECKING:
    from am.cache.index import Index
    from am.cache.terms import QueryTerms

__all__ = ["LineHit", "LogSource", "messages_with_offsets", "refresh", "search"]

_CJK_CLASS = "".join(f"{chr(low)}-{chr(high)}" for low, high in _CJK_RANGES)
_CJK_RUN: list[re.Pattern[str]] = []
_TABLES = (
    ("CREATE TABLE IF NOT EXISTS session_logs(path TEXT PRIMARY KEY, blob TEXT NOT NULL, size INTEGER NOT NULL, "
     "lines INTEGER NOT NULL, whole INTEGER NOT NULL, stat TEXT, session TEXT NOT NULL, topic TEXT NOT NULL, "
     "client TEXT NOT NULL) WITHOUT ROWID"),
    ("CREATE TABLE IF NOT EXISTS session_lines(rowid INTEGER PRIMARY KEY, path TEXT NOT NULL, line INTEGER NOT NULL, "
     "part INTEGER NOT NULL, offset INTEGER NOT NULL, role TEXT NOT NULL, ts TEXT, epoch REAL)"),
    "CREATE INDEX IF NOT EXISTS session_lines_time ON session_lines(epoch, path, line)",
    ("CREATE VIRTUAL TABLE IF NOT EXISTS session_text USING fts5(text, content = '', "
     "tokenize = 'porter unicode61 remove_diacritics 2')"),
)
_DROP = ("DROP TABLE IF EXISTS session_text", "DROP TABLE IF EXISTS session_lines",
         "DROP TABLE IF EXISTS session_logs")
_BATCH = 5000  # rows written at a time


@dataclass(frozen=True)
class LogSource:
    """A session log to index: its path in the vault, session and topic ids, client (log format), start time."""

    path: str
    session: str
    topic: str
    client: str
    started: str | None = None


@dataclass(frozen=True)
class LineHit:
    """One message that matched: its log, line (from 1), byte offset of the line, place in the line, role, time.

    ``rank`` is BM25 (lower is better); ``tier`` 0 the words as a phrase, 1 every word, 2 some
    (``matched`` of ``terms``); with no words, -1 and newest first.
    """

    path: str
    session: str
    topic: str
    client: str
    line: int
    part: int
    offset: int
    role: str
    ts: str | None
    rank: float
    tier: int
    matched: int
    terms: int


def _bigrams(match: re.Match[str]) -> str:
    run = match.group(0)
    return " " + " ".join([run[i:i + 2] for i in range(len(run) - 1)] + [run[-1]]) + " "


def indexed_text(text: str) -> str:
    """Return a message's text as the table takes it: CJK runs as their bigrams (and last character)."""
    if text.isascii():
        return text
    if not _CJK_RUN:
        _CJK_RUN.append(re.compile(f"[{_CJK_CLASS}]+"))
    if not unicodedata.is_normalized("NFKC", text):  # the check is ~20x cheaper than normalizing
        text = unicodedata.normalize("NFKC", text)
    return _CJK_RUN[0].sub(_bigrams, text)


def messages_with_offsets(data: bytes, client: str, *, first_line: int = 1,
                          base: int = 0) -> Iterator[tuple[int, int, int, str, str | None, str]]:
    """Yield (line, byte offset of the line, place in the line, role, time, text) of each message in ``data``."""
    from am.records.sessionlog import messages

    at = 0
    number = first_line
    size = len(data)
    while at < size:
        end = data.find(b"\n", at)
        end = size if end == -1 else end
        raw = data[at:end]
        if raw.strip():
            for part, m in enumerate(messages(raw, client)):
                yield number, base + at, part, m.role, m.ts, m.text
        at = end + 1
        number += 1


def _epoch(ts: str | None, fallback: str | None) -> float | None:
    for value in (ts, fallback):
        moment = stored_moment(value)
        if moment is not None:
            return moment.timestamp()
    return None


def _write(index: Index, fn: Callable[..., int], *args: Any) -> int:
    """Run ``fn(conn, *args)`` in one write transaction under the cache's lock; return what it returns."""
    conn = index.conn
    with index._handle.locked(exclusive=True):
        conn.execute("BEGIN IMMEDIATE")
        try:
            out = fn(conn, *args)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        index._handle.write_stamp()
    return out


def _stat_key(st: os.stat_result) -> str:
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"


@dataclass
class _Plan:
    """What a refresh must do: logs to read from a byte offset (0: whole), logs gone, and whether to start over."""

    reads: list[tuple[LogSource, bytes, int, int, str]]  # (log, data, from byte, first line, stat key)
    restamp: list[tuple[str, str]]  # (path, stat key): content as indexed, only the stat data moved
    over: bool  # start the tables again (a log went away or changed otherwise than by growing)


def refresh(index: Index, root: Path, logs: Sequence[LogSource]) -> int:
    """Bring the session tables up to date with these logs; return how many messages were indexed now."""
    conn = index.conn
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'session_logs'").fetchone() is None:
        _write(index, _make)
    known = {row[0]: row[1:] for row in conn.execute("SELECT path, blob, size, lines, whole, stat FROM session_logs")}
    plan = _plan(root, logs, known)
    if not plan.reads and not plan.restamp and not plan.over:
        return 0
    if plan.over:  # every log read again, into tables made anew
        plan = _plan(root, logs, {})
        plan.over = True
    return _write(index, _apply, plan)


def _plan(root: Path, logs: Sequence[LogSource], known: dict[str, tuple[Any, ...]]) -> _Plan:
    reads: list[tuple[LogSource, bytes, int, int, str]] = []
    restamp: list[tuple[str, str]] = []
    wanted = {log.path for log in logs}
    over = any(path not in wanted for path in known)
    for log in logs:
        try:
            st = os.stat(root / log.path)
        except OSError:
            if log.path in known:
                over = True
            continue
        old = known.get(log.path)
        key = _stat_key(st)
        if old is not None and old[4] == key:
            continue
        data = (root / log.path).read_bytes()
        if old is None:
            reads.append((log, data, 0, 1, key))
            continue
        blob, size, lines, whole = old[0], int(old[1]), int(old[2]), bool(old[3])
        if len(data) == size and hash_blob(data) == blob:
            restamp.append((log.path, key))
            continue
        with memoryview(data) as view:
            grew = whole and len(data) > size and hash_blob(view[:size]) == blob
        if not grew:
            over = True
            continue
        reads.append((log, data, size, lines + 1, key))
    return _Plan(reads, restamp, over)


def _make(conn: Any) -> int:
    for sql in _TABLES:
        conn.execute(sql)
    return 0


def _apply(conn: Any, plan: _Plan) -> int:
    if plan.over:
        for sql in _DROP:
            conn.execute(sql)
        _make(conn)
    conn.executemany("UPDATE session_logs SET stat = ? WHERE path = ?", [(k, p) for p, k in plan.restamp])
    done = 0
    row = conn.execute("SELECT max(rowid) FROM session_lines").fetchone()
    rowid = int(row[0] or 0)
    for log, data, start, first_line, key in plan.reads:
        lines, texts = [], []
        for line, offset, part, role, ts, text in messages_with_offsets(
                data[start:] if start else data, log.client, first_line=first_line, base=start):
            rowid += 1
            lines.append((rowid, log.path, line, part, offset, role, ts, _epoch(ts, log.started)))
            texts.append((rowid, indexed_text(text)))
            if len(lines) >= _BATCH:
                _store(conn, lines, texts)
                done += len(lines)
                lines, texts = [], []
        _store(conn, lines, texts)
        done += len(lines)
        count = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
        conn.execute("INSERT OR REPLACE INTO session_logs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (log.path, hash_blob(data), len(data), count, int(data.endswith(b"\n")), key, log.session,
                      log.topic, log.client))
    return done


def _store(conn: Any, lines: list[tuple[Any, ...]], texts: list[tuple[int, str]]) -> None:
    conn.executemany("INSERT INTO session_lines VALUES (?, ?, ?, ?, ?, ?, ?, ?)", lines)
    conn.executemany("INSERT INTO session_text(rowid, text) VALUES (?, ?)", texts)


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def expressions(terms: QueryTerms) -> tuple[list[tuple[int, str]], list[str]]:
    """Return the FTS5 expressions of a query's levels as (tier, expression), and of each of its units.

    Tiers: 0 the words as a phrase, 1 every word, 2 some. The units and stop words are the
    records' (``analyse``); a word is passed as typed, for the table's tokenizer to stem as it
    stemmed the text; a CJK word is its bigrams' phrase, as for records.
    """
    units = [u.match if u.bigrams or _is_cjk(u.text) else _quote(u.text.lower()) for u in terms.units]
    levels: list[tuple[int, str]] = []
    if len(units) > 1 and not any(u.endswith("*") for u in units):
        tokens: list[str] = []
        for unit, expr in zip(terms.units, units, strict=True):
            tokens += list(unit.bigrams) if unit.bigrams else [expr[1:-1].replace('""', '"')]
        levels.append((0, _quote(" ".join(tokens))))
    levels.append((1, " AND ".join(units)))
    if len(units) > 1:
        alternatives = units + [_quote(g) for u in terms.units for g in u.bigrams if len(u.bigrams) > 1]
        levels.append((2, " OR ".join(dict.fromkeys(alternatives))))
    return levels, units


def _is_cjk(text: str) -> bool:
    if not _CJK_RUN:
        _CJK_RUN.append(re.compile(f"[{_CJK_CLASS}]+"))
    return bool(_CJK_RUN[0].search(text))


def search(index: Index, terms: QueryTerms | None, *, role: str | None = None, paths: Sequence[str] | None = None,
           since: datetime | None = None, until: datetime | None = None, limit: int = 20) -> tuple[list[LineHit], int]:
    """Return the best ``limit`` messages for a query and how many matched in all (at the widest level).

    With no words (a time phrase or a role alone), the newest messages that pass the filters.
    """
    where: list[str] = ["1"]
    args: list[Any] = []
    if role is not None:
        where.append("l.role = ?")
        args.append(role)
    if paths is not None:
        where.append("l.path IN (SELECT value FROM json_each(?))")
        args.append(json.dumps(list(paths)))
    if since is not None:
        where.append("l.epoch >= ?")
        args.append(since.timestamp())
    if until is not None:
        where.append("l.epoch < ?")
        args.append(until.timestamp())
    cols = ("l.path, g.session, g.topic, g.client, l.line, l.part, l.offset, l.role, l.ts")
    joined = "session_lines l JOIN session_logs g ON g.path = l.path"
    filters = " AND ".join(where)
    conn = index.conn
    if terms is None or not terms.units:
        rows = conn.execute(f"SELECT {cols} FROM {joined} WHERE {filters} AND l.epoch IS NOT NULL "
                            "ORDER BY l.epoch DESC, l.path, l.line, l.part LIMIT ?", [*args, limit]).fetchall()
        total = conn.execute(f"SELECT count(*) FROM {joined} WHERE {filters}", args).fetchone()[0]
        return [_hit(r, 0.0, -1, 0, 0) for r in rows], int(total)
    levels, units = expressions(terms)
    size = len(units)
    hits: list[LineHit] = []
    seen: set[int] = set()
    select = (f"SELECT {cols}, m.rank, l.rowid FROM (SELECT rowid, bm25(session_text) AS rank FROM session_text "
              f"WHERE session_text MATCH ?) m JOIN session_lines l ON l.rowid = m.rowid "
              f"JOIN session_logs g ON g.path = l.path WHERE {filters} ORDER BY m.rank, l.path, l.line, l.part LIMIT ?")
    for tier, expression in levels:
        want = limit - len(hits)
        if want <= 0:
            break
        some = tier == 2  # re-ranked by how many words each holds: read a wider cut
        cut = (want + len(seen)) * (4 if some else 1) + 50 * some
        found = [r for r in conn.execute(select, [expression, *args, cut]).fetchall() if r[-1] not in seen]
        counts = _matched(conn, units, [r[-1] for r in found]) if some else {}
        if some:
            found.sort(key=lambda r: (-counts.get(r[-1], 0), r[-2], r[0], r[4], r[5]))
        for r in found[:want]:
            seen.add(r[-1])
            hits.append(_hit(r, float(r[9]), tier, counts.get(r[-1], 0) if some else size, size))
    widest = levels[-1][1]
    total = conn.execute(f"SELECT count(*) FROM session_text m JOIN session_lines l ON l.rowid = m.rowid "
                         f"WHERE session_text MATCH ? AND {filters}", [widest, *args]).fetchone()[0]
    return hits, int(total)


def _hit(r: Sequence[Any], rank: float, tier: int, matched: int, terms: int) -> LineHit:
    return LineHit(str(r[0]), str(r[1]), str(r[2]), str(r[3]), int(r[4]), int(r[5]), int(r[6]), str(r[7]),
                   None if r[8] is None else str(r[8]), rank, tier, matched, terms)


def _matched(conn: Any, units: Sequence[str], rowids: Sequence[int]) -> dict[int, int]:
    """Return how many of the query's units each of these messages holds."""
    counts: dict[int, int] = {}
    wanted = json.dumps(list(rowids))
    for unit in units:
        for (rowid,) in conn.execute("SELECT rowid FROM session_text WHERE session_text MATCH ? "
                                     "AND rowid IN (SELECT value FROM json_each(?))", (unit, wanted)):
            counts[rowid] = counts.get(rowid, 0) + 1
    return counts

"""Vectors in the cache: each fact's and topic's embedding beside its full-text row, and hybrid ranking.

The vector level of retrieval (DESIGN §6). An *embedder* (``name``,
``embed(texts) -> array (n, dim)``, rows L2-normalised; am/packs/embedding.py
chooses it) turns record texts into vectors; this module keeps them in the
cache's SQLite file and ranks them against a query:

- ``vectors(blob, vec)``: keyed by the record file's blob id, so an unchanged
  record is never embedded twice (a rename, a revert, a second clone's cache
  all find it); ``vec`` is float16 (512 bytes at 256 dimensions). The table is
  made on first use and lives and dies with the rest of the cache (a rebuild
  starts it empty). ``meta.vector_model`` names the model: another model
  empties the table.
- ``ensure`` embeds the records that have no vector yet (after a rebuild, a
  write, an edit in Obsidian), within an optional time budget, writing as it
  goes so an interrupted pass keeps its work; ``search`` ranks by cosine
  similarity (one matrix product over vectors held in memory, patched from
  ``vector_log`` when the cache changes: am/cache/vecmatrix.py; vectors and
  query centred on the vault's mean vector) and keeps the hits that pass the same filters as full
  text; ``fuse`` merges the full-text and vector rankings by reciprocal rank.

No sqlite3 import: statements run on ``Index.conn`` under the cache's own lock.
numpy is imported only when vectors are used.

Decisions: docs/decisions/recall.md.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from am.cache import vecfile
from am.cache.rows import record_from_json
from am.cache.vecmatrix import LOG_KEEP, LOG_TABLES, Matrix, catch_up, load
from am.cache.vecmatrix import epoch as vecmatrix_epoch
from am.records.model import Topic

if TYPE_CHECKING:
    from am.cache.index import Index
    from am.cache.rows import Hit

__all__ = ["Embedder", "VectorStatus", "ensure", "search", "fuse", "levels_of", "prepare_once", "text_of", "MIN_SCORE",
           "RRF_K"]

MIN_SCORE = 0.1   # cosine (after centring) below this is not a hit: measured on the recall set, docs/decisions/recall.md#vectors-are-centred-and-fused-with-full-text-by-reciprocal-rank
RRF_K = 60        # reciprocal rank fusion: 1 / (k + rank)
_CHUNK = 2000     # records embedded, then written, at a time
_TEACH_UP_TO = 256  # records to embed, at most, for which the kept token ids are looked up first (not a rebuild)
# Made on first use in the cache's file (a rebuild starts a file without them). vector_todo: records
# (facts, topics) whose vector has not been looked for since their row was written.
_TABLES = (
    "CREATE TABLE IF NOT EXISTS vectors(blob TEXT PRIMARY KEY, vec BLOB NOT NULL) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS vector_todo(rowid INTEGER PRIMARY KEY)",
    "CREATE TRIGGER IF NOT EXISTS vector_todo_in AFTER INSERT ON records WHEN NEW.type IN ('fact', 'topic') "
    "BEGIN INSERT OR IGNORE INTO vector_todo VALUES (NEW.rowid); END",
    "CREATE TRIGGER IF NOT EXISTS vector_todo_out AFTER DELETE ON records "
    "BEGIN DELETE FROM vector_todo WHERE rowid = OLD.rowid; END",
    *LOG_TABLES,  # which rows' vectors changed, for readers that hold them in memory (am/cache/vecmatrix.py)
    # The model's token ids of the word pieces of the vault's texts (an embedder that offers them: teach,
    # piece_ids), so a query process whose words are all known here needs no tokenizer. Made last: _table's mark.
    "CREATE TABLE IF NOT EXISTS vector_pieces(piece TEXT PRIMARY KEY, ids TEXT NOT NULL) WITHOUT ROWID",
)
_KINDS = ("fact", "topic")
# Facts and topics, counted through the partial indexes on each type (``type IN (...)`` scans every row's page:
# ~25-45 ms at 10k facts, in every search process; this is ~1 ms).
_COUNT = ("SELECT (SELECT count(*) FROM records WHERE type = 'fact') "
          "+ (SELECT count(*) FROM records WHERE type = 'topic')")
_HELD: dict[tuple[str, str], Matrix] = {}  # (cache file, model) -> the vectors every Index of the process ranks
_HELD_LOCK = threading.Lock()


class Embedder(Protocol):
    """Turns texts into L2-normalised vectors; ``name`` says the model and its version."""

    name: str

    def embed(self, texts: Sequence[str]) -> Any:
        """Return an array (len(texts), dim) of float32, each row of length 1 (or 0 for an empty text)."""
        ...


@dataclass(frozen=True)
class VectorStatus:
    """What ``ensure`` did: records embedded now, still without a vector (out of time), and with one."""

    embedded: int
    missing: int
    total: int
    seconds: float

    def note(self) -> str:
        """Return a line for the retrieval notes when the vectors are incomplete, else ''."""
        if not self.missing:
            return ""
        return (f"vector: {self.total - self.missing} of {self.total} records embedded so far "
                f"(the rest follow on the next searches)")


def text_of(record: Any) -> str:
    """Return the text a record's vector is made of: a fact's body; a topic's title, aliases and body."""
    if isinstance(record, Topic):
        return " \n".join(x for x in (record.title, ", ".join(record.aliases), record.body) if x)
    return str(getattr(record, "body", ""))


def _table(index: Index, model: str) -> None:
    """Make the tables and triggers if needed; drop every vector when another model made them."""
    conn = index.conn
    row = conn.execute("SELECT value FROM meta WHERE key = 'vector_model'").fetchone()
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'vector_pieces'").fetchone() is not None
    epoch = conn.execute("SELECT 1 FROM meta WHERE key = 'vector_epoch'").fetchone() is not None
    if exists and epoch and row is not None and row[0] == model:
        return
    _write(index, _setup, model)


def _setup(conn: Any, model: str) -> None:
    for sql in _TABLES:
        conn.execute(sql)
    row = conn.execute("SELECT value FROM meta WHERE key = 'vector_model'").fetchone()
    if row is None or row[0] != model:
        conn.execute("DELETE FROM vectors")
        conn.execute("DELETE FROM vector_pieces")
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('vector_model', ?)", (model,))
    # This file's vector tables: a copy of the rows kept outside it (am/cache/vecfile.py) names it.
    conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('vector_epoch', ?)", (os.urandom(8).hex(),))
    # Every record once (the triggers were just made, or the model changed): those with a vector are skipped.
    conn.execute("INSERT OR IGNORE INTO vector_todo SELECT rowid FROM records WHERE type IN ('fact', 'topic')")


def _write(index: Index, fn: Callable[..., None], *args: Any) -> None:
    """Run ``fn(conn, *args)`` in one write transaction under the cache's lock."""
    conn = index.conn
    with index._handle.locked(exclusive=True):
        conn.execute("BEGIN IMMEDIATE")
        try:
            fn(conn, *args)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        index._handle.write_stamp()


def _store(conn: Any, pairs: list[tuple[str, bytes]], done: list[tuple[int]],
           pieces: Sequence[tuple[str, str]] = ()) -> None:
    conn.executemany("INSERT OR REPLACE INTO vectors(blob, vec) VALUES (?, ?)", pairs)
    conn.executemany("DELETE FROM vector_todo WHERE rowid = ?", done)
    conn.executemany("INSERT INTO vector_log(rowid) VALUES (?)", done)  # these rows have a vector now
    conn.execute("DELETE FROM vector_log WHERE seq <= (SELECT max(seq) FROM vector_log) - ?", (LOG_KEEP,))
    conn.executemany("INSERT OR IGNORE INTO vector_pieces(piece, ids) VALUES (?, ?)", pieces)


def _pieces_to_keep(embedder: Embedder, texts: Sequence[str]) -> list[tuple[str, str]]:
    """The (piece, token ids) of these texts, when the embedder offers them (``piece_ids``), for vector_pieces."""
    piece_ids = getattr(embedder, "piece_ids", None)
    if piece_ids is None:
        return []
    return [(p, " ".join(map(str, ids))) for p, ids in piece_ids(texts).items()]


def _teach(index: Index, embedder: Embedder, texts: Sequence[str]) -> list[str]:
    """Give the embedder the kept token ids of the texts' pieces it does not know (it then reads no tokenizer).

    Returns the pieces still unknown (the embedder's tokenizer reads them; ``search`` keeps them after).
    """
    unknown = getattr(embedder, "unknown_pieces", None)
    missing: list[str] = unknown(texts) if unknown is not None and hasattr(embedder, "teach") else []
    if not missing or index.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'vector_pieces'").fetchone() is None:
        return []
    rows = []
    for at in range(0, len(missing), 500):  # SQLite's bound on a statement's variables
        part = missing[at:at + 500]
        rows += index.conn.execute(f"SELECT piece, ids FROM vector_pieces WHERE piece IN ({','.join('?' * len(part))})",
                                   part).fetchall()
    if rows:
        embedder.teach({p: [int(i) for i in ids.split()] for p, ids in rows})  # type: ignore[attr-defined]
    taught = {p for p, _ in rows}
    return [p for p in missing if p not in taught]


def _prune(conn: Any) -> None:
    conn.execute("DELETE FROM vectors WHERE blob NOT IN (SELECT blob FROM files)")


def ensure(index: Index, embedder: Embedder, *, budget_s: float | None = None,
           progress: Callable[[int, int], None] | None = None) -> VectorStatus:
    """Embed every fact and topic that has no vector yet (within ``budget_s`` seconds if given).

    What to look at comes from ``vector_todo``, which triggers on ``records`` fill as rows
    come (every write, refresh or edit inserts its records anew): no scan of the vault.
    """
    began = time.monotonic()
    if _same(index.__dict__.get("_vector_checked"), _key(index, embedder.name)):
        return VectorStatus(0, 0, -1, 0.0)
    _table(index, embedder.name)
    conn = index.conn
    todo = conn.execute(
        "SELECT t.rowid, f.blob, r.type, r.data, v.blob IS NOT NULL FROM vector_todo t "
        "JOIN records r ON r.rowid = t.rowid JOIN files f ON f.path = r.path "
        "LEFT JOIN vectors v ON v.blob = f.blob").fetchall()
    known = [(rowid,) for rowid, _, _, _, has in todo if has]
    wanted: dict[str, tuple[str, str, list[tuple[int]]]] = {}
    for rowid, blob, rtype, data, has in todo:
        if not has:
            wanted.setdefault(blob, (rtype, data, []))[2].append((rowid,))
    if known:
        _write(index, _store, [], known)
    rows = list(wanted.items())
    done = 0
    for start in range(0, len(rows), _CHUNK):
        if budget_s is not None and start and time.monotonic() - began > budget_s:
            break
        chunk = rows[start:start + _CHUNK]
        texts = [text_of(record_from_json(rtype, data)) for _, (rtype, data, _) in chunk]
        if len(rows) <= _TEACH_UP_TO:
            # A few new records (a search after a write): their words' token ids are most likely kept
            # already, so the tokenizer (a 1.8 MB file, ~0.1-0.15 s to read) is not needed for them.
            _teach(index, embedder, texts)
        made = embedder.embed(texts).astype("float16")
        _write(index, _store, [(blob, made[i].tobytes()) for i, (blob, _) in enumerate(chunk)],
               [r for _, (_, _, rowids) in chunk for r in rowids], _pieces_to_keep(embedder, texts))
        done += len(chunk)
        if progress is not None:
            progress(done, len(rows))
    total = conn.execute(_COUNT).fetchone()[0]
    if done:
        vectors_now = conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
        if vectors_now > total * 1.1 + 50:  # vectors of files that changed or went: now and then
            _write(index, _prune)
    missing = len(rows) - done
    if not missing:
        index.__dict__["_vector_checked"] = _key(index, embedder.name)
    return VectorStatus(done, missing, total, time.monotonic() - began)


def _key(index: Index, model: str) -> tuple[Any, ...]:
    """Return what the cache's content is known by: the connection (a rebuild opens another), its token, the model."""
    return (index.conn, index.content_token(), model)


def _same(a: tuple[Any, ...] | None, b: tuple[Any, ...]) -> bool:
    return a is not None and a[0] is b[0] and a[1:] == b[1:]


def _load(index: Index, model: str) -> Matrix:
    """Return the records' vectors in memory: as they were while the cache is unchanged, else brought up to date.

    One matrix a cache file and model serves every Index of the process (an agents' server
    has one connection a worker thread: ~100 MB of vectors at 100k records, held once).
    A thread that finds the cache changed patches it under a lock (vecmatrix.catch_up builds
    new arrays, never writes into the ones a search on another thread may be reading) and
    each search ranks a ``view`` of it taken under the same lock.
    """
    import numpy as np

    key = _key(index, model)
    epoch = index.__dict__.get("_vector_epoch")
    if epoch is None or not _same(index.__dict__.get("_vector_checked_at"), key):
        epoch = vecmatrix_epoch(index)
    if epoch is None:  # vector tables of a cache older than the epoch: this Index's own matrix, as before
        return _load_own(np, index, model, key)
    name = (str(index.path), model)
    with _HELD_LOCK:
        matrix = _HELD.get(name)
        if _same(index.__dict__.get("_vector_checked_at"), key) and matrix is not None and matrix.epoch == epoch:
            return matrix.view(key)
        if matrix is None or matrix.epoch != epoch or not catch_up(np, index, matrix):
            matrix = load(np, index, key)
            matrix.epoch = epoch
            _HELD[name] = matrix  # the matrix of an older cache file at this path (a rebuild) goes
        index.__dict__["_vector_checked_at"] = key
        index.__dict__["_vector_epoch"] = epoch
        return matrix.view(key)


def _load_own(np: Any, index: Index, model: str, key: tuple[Any, ...]) -> Matrix:
    matrix: Matrix | None = index.__dict__.get("_vector_state")
    if matrix is not None and _same(matrix.checked, key):
        return matrix
    if matrix is None or matrix.checked[0] is not key[0] or matrix.checked[2] != key[2] or not catch_up(
            np, index, matrix):
        matrix = load(np, index, key)
    matrix.checked = key
    index.__dict__["_vector_state"] = matrix
    return matrix


def search(index: Index, embedder: Embedder, query: str, *, limit: int = 20,
           keep: Callable[[Sequence[Hit]], Sequence[Hit]] | None = None, once: bool = False,
           **filters: Any) -> list[tuple[Hit, float]]:
    """Return up to ``limit`` (hit, cosine) pairs for a query, best first, that pass the filters.

    ``filters`` are those of ``Index.search`` (statuses, topic, repo, types, since,
    until); ``keep`` may narrow further (a world). Vectors must be there (``ensure``):
    records without one are not ranked. Scores below ``MIN_SCORE`` are not hits.
    ``once``: this process searches once (``am search``): when the embedder offers
    ``vector(text)`` and SimSIMD is there, rank from the cache's vector file without
    numpy (am/cache/vecfile.py); else the vectors are held in memory for the next searches.
    """
    from am.cache.rows import Hit

    first = max(limit * 4, 100)
    light = _light(index, embedder) if once else None
    if light is not None:
        rows, simsimd = light
        if not query.strip() or not len(rows):
            return []
        _taught(index, embedder, query)
        q = embedder.vector(query)  # type: ignore[attr-defined]
        if rows.dim != len(q):
            return []
        values: Any = vecfile.scores(simsimd, rows, q)
        rowids: Any = rows.rowids
        batches: Iterable[Any] = vecfile.ranked(values, MIN_SCORE, first)
    else:
        import numpy as np

        state = _load(index, embedder.name)
        if not query.strip() or not len(state.rowids):
            return []
        _taught(index, embedder, query)
        q = np.asarray(embedder.embed([query]), dtype=np.float32)[0]
        if state.raw.shape[1] != q.shape[0]:
            return []
        values, rowids = state.scores(np, q), state.rowids
        batches = _best_first(np, values, first)
    where, args = index._filters(**filters)
    found: list[tuple[Hit, float]] = []
    for batch in batches:
        by_rowid = {int(rowids[i]): float(values[i]) for i in batch}
        sql = ("SELECT r.rowid, r.id, r.path, r.type, r.status, r.created FROM records r WHERE r.rowid IN ("
               + ",".join("?" * len(by_rowid)) + ")" + "".join(f" AND {w}" for w in where))
        hits = [(Hit(i, _path(p), t, s, c, -by_rowid[rid]), by_rowid[rid])
                for rid, i, p, t, s, c in index.conn.execute(sql, [*by_rowid, *args])]
        hits.sort(key=lambda pair: (-pair[1], pair[0].id))
        if keep is not None:
            kept = {id(h) for h in keep([h for h, _ in hits])}
            hits = [pair for pair in hits if id(pair[0]) in kept]
        found += hits
        if len(found) >= limit:
            break
    return found[:limit]


def _light(index: Index, embedder: Embedder) -> tuple[vecfile.Rows, Any] | None:
    """Return the vector file's rows and the ranker for a numpy-free search, or None (numpy's path)."""
    if not callable(getattr(embedder, "vector", None)):
        return None
    simsimd = vecfile.ranker()
    if simsimd is None:
        return None
    rows = vecfile.load(index, embedder.name, simsimd)
    return None if rows is None else (rows, simsimd)


def prepare_once(index: Index, embedder: Embedder) -> None:
    """Write the cache's vector file now (after a rebuild), so that the next one-shot search finds it whole."""
    _light(index, embedder)


def _taught(index: Index, embedder: Embedder, query: str) -> None:
    """Teach the embedder the query's kept pieces; keep the pieces no record has after it reads them."""
    new_pieces = _teach(index, embedder, [query])
    if new_pieces:  # words no record has: kept, so the next query with them reads no tokenizer either
        try:
            _write(index, _store, [], [], [pair for pair in _pieces_to_keep(embedder, [query]) if pair[0] in new_pieces])
        except Exception:  # noqa: BLE001, S110 - a cache that cannot be written (read-only, busy) only stays slower
            pass


def _best_first(np: Any, scores: Any, first: int) -> Iterable[Any]:
    """Yield the positions of scores at least ``MIN_SCORE``, best first, in batches (the first ``first`` long)."""
    cand = np.flatnonzero(scores >= MIN_SCORE)
    if len(cand) > first:  # the best few without sorting them all (100k scores)
        head = np.argpartition(-scores[cand], first - 1)[:first]
        best = cand[head]
        yield best[np.argsort(-scores[best], kind="stable")]
        cand = np.delete(cand, head)
    order = cand[np.argsort(-scores[cand], kind="stable")]
    for start in range(0, len(order), first * 4):
        yield order[start:start + first * 4]


def _path(text: str) -> Any:
    from pathlib import PurePosixPath

    return PurePosixPath(text)


def fuse(full_text: Sequence[str], vector: Sequence[str], *, k: int = RRF_K,
         weights: Mapping[str, float] | None = None) -> list[tuple[str, str]]:
    """Merge two rankings by reciprocal rank fusion; return (id, how it was found), best first.

    A full-text hit counts ``weights[id]`` (default 1) of a vector hit at the same rank.
    (Weighting a hit with only some of the query's terms by the share it matched lost
    three questions full text answered and gained none: docs/decisions/recall.md#vectors-are-centred-and-fused-with-full-text-by-reciprocal-rank.)
    ``how`` is ``full-text``, ``vector`` or ``full-text+vector``. Ties go to the full-text
    order, then id.
    """
    score: dict[str, float] = {}
    how: dict[str, set[str]] = {}
    for level, ranking in (("full-text", full_text), ("vector", vector)):
        for rank, rid in enumerate(dict.fromkeys(ranking)):
            w = (weights or {}).get(rid, 1.0) if level == "full-text" else 1.0
            score[rid] = score.get(rid, 0.0) + w / (k + rank + 1)
            how.setdefault(rid, set()).add(level)
    ft_rank = {rid: n for n, rid in enumerate(dict.fromkeys(full_text))}
    order = sorted(score, key=lambda rid: (-score[rid], ft_rank.get(rid, len(ft_rank)), rid))
    return [(rid, "+".join(sorted(how[rid]))) for rid in order]


def levels_of(found: Iterable[tuple[str, str]]) -> str:
    """Return the level that served a fused ranking: ``vector+full-text``, ``vector`` or ``full-text``."""
    seen = {part for _, how in found for part in how.split("+")}
    if seen == {"vector"}:
        return "vector"
    if "vector" in seen:
        return "vector+full-text"
    return "full-text"

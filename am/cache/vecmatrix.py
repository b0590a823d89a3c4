"""The cache's record vectors held in memory for ranking, and kept up to date without reading them all again.

Part of the vector level (am/cache/vectors.py, which stores the vectors and calls
here). A ``Matrix`` holds every fact's and topic's stored vector (float32, one row
a record, rows in row id order), their sum and squared lengths. Ranking centres the
rows and the query on the vault's mean vector and takes the cosine:

    cos(x - m, q - m) = (x . q' - m . q') / |x - m|,   q' = (q - m) / |q - m|

so one matrix-vector product over the stored rows ranks them, and the lengths
``|x - m|`` come from ``|x|^2 - 2 x . m + |m|^2`` (one more product, only when the
rows change). A long-lived reader (the agents' server) catches up after a write
from ``vector_log``: triggers on ``records`` and ``ensure`` append the row ids whose
vector may have changed; only those rows are read and patched (a full read of 100k
vectors took ~0.9 s). A log that was pruned past what a reader saw, another
connection (a rebuild) or another model reads everything again.

No sqlite3 import: statements run on ``Index.conn``. numpy is imported by the caller.

Decisions: docs/decisions/recall.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from am.cache.index import Index

__all__ = ["LOG_KEEP", "LOG_TABLES", "ROWS", "Matrix", "catch_up", "changes_since", "epoch", "last_seq", "load"]

LOG_KEEP = 20_000  # log entries kept; a reader further behind reads every vector again
LOG_TABLES = (
    "CREATE TABLE IF NOT EXISTS vector_log(seq INTEGER PRIMARY KEY AUTOINCREMENT, rowid INTEGER NOT NULL)",
    ("CREATE TRIGGER IF NOT EXISTS vector_log_in AFTER INSERT ON records WHEN NEW.type IN ('fact', 'topic') "
     "BEGIN INSERT INTO vector_log(rowid) VALUES (NEW.rowid); END"),
    ("CREATE TRIGGER IF NOT EXISTS vector_log_out AFTER DELETE ON records WHEN OLD.type IN ('fact', 'topic') "
     "BEGIN INSERT INTO vector_log(rowid) VALUES (OLD.rowid); END"),
)
ROWS = ("SELECT r.rowid, v.vec FROM records r JOIN files f ON f.path = r.path JOIN vectors v ON v.blob = f.blob "
         "WHERE r.type IN ('fact', 'topic')")


@dataclass
class Matrix:
    """The vectors of the cache's records in memory, as of log entry ``seq``."""

    checked: tuple[Any, ...]  # what the cache's content was known by when this was last brought up to date
    seq: int                  # the last vector_log entry taken in
    rowids: Any   # int64 (n,), ascending
    raw: Any      # float32 (n, dim): the stored vectors
    squares: Any  # float64 (n,): each row's squared length
    total: Any    # float64 (dim,): the sum of the rows
    mean: Any = None   # float32 (dim,): what rows and query are centred on
    norms: Any = None  # float32 (n,): each centred row's length (at least 1e-6)
    epoch: str | None = None  # the cache file's (meta.vector_epoch) whose rows these are

    def view(self, checked: tuple[Any, ...]) -> Matrix:
        """Return the rows as they are now, for one search: ``catch_up`` replaces arrays, never writes into them."""
        return replace(self, checked=checked)

    def centre(self, np: Any) -> None:
        """Recompute the mean and the centred rows' lengths after the rows changed."""
        n = len(self.rowids)
        self.mean = (self.total / n if n else self.total).astype(np.float32)
        along = (self.raw @ self.mean).astype(np.float64)
        lengths = np.sqrt(np.maximum(self.squares - 2 * along + float(self.mean @ self.mean), 0.0))
        self.norms = np.maximum(lengths, 1e-6).astype(np.float32)

    def scores(self, np: Any, query: Any) -> Any:
        """Return each row's cosine with the query, both centred on the mean (float32, one per row)."""
        q = np.asarray(query, dtype=np.float32) - self.mean
        q /= max(float(np.linalg.norm(q)), 1e-6)
        return (self.raw @ q - np.float32(self.mean @ q)) / self.norms


def last_seq(index: Index) -> int:
    """Return the last log entry ever written (AUTOINCREMENT keeps it when the entries are pruned)."""
    row = index.conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'vector_log'").fetchone()
    return int(row[0]) if row else 0


def epoch(index: Index) -> str | None:
    """Return the cache file's vector epoch (``meta.vector_epoch``, drawn when its vector tables are made)."""
    row = index.conn.execute("SELECT value FROM meta WHERE key = 'vector_epoch'").fetchone()
    return None if row is None else str(row[0])


def changes_since(index: Index, seq: int, count: int) -> tuple[int, list[int], dict[int, bytes]] | None:
    """Return the last log entry, the row ids logged after ``seq`` (ascending) and the vectors they have now.

    None when a holder of ``count`` vectors as of ``seq`` must read every vector again: the log
    was pruned past ``seq``, or so much changed that reading everything is as cheap.
    """
    conn = index.conn
    high = last_seq(index)
    if high <= seq:
        return high, [], {}
    low = conn.execute("SELECT min(seq) FROM vector_log").fetchone()[0]
    if low is None or low > seq + 1:
        return None  # pruned past what this reader saw
    changed = sorted({r for (r,) in conn.execute("SELECT rowid FROM vector_log WHERE seq > ?", (seq,))})
    if len(changed) > max(1000, count // 20):
        return None
    found = dict(conn.execute(ROWS + " AND r.rowid IN (SELECT value FROM json_each(?))",
                              (json.dumps(changed),)).fetchall())
    return high, changed, found


def load(np: Any, index: Index, key: tuple[Any, ...]) -> Matrix:
    """Read every record's vector from the cache."""
    seq = last_seq(index)  # first: a write after it is taken in by the next catch_up, whatever this reads
    rows = index.conn.execute(ROWS + " ORDER BY r.rowid").fetchall()
    rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    if rows:
        raw = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float16).reshape(len(rows), -1).astype(np.float32)
    else:
        raw = np.zeros((0, 1), dtype=np.float32)
    squares = np.einsum("ij,ij->i", raw, raw, dtype=np.float64)
    matrix = Matrix(key, seq, rowids, raw, squares, raw.sum(axis=0, dtype=np.float64))
    matrix.centre(np)
    return matrix


def catch_up(np: Any, index: Index, matrix: Matrix) -> bool:
    """Patch the rows whose vector may have changed since ``matrix.seq``; False if it must be read again."""
    news = changes_since(index, matrix.seq, len(matrix.rowids))
    if news is None:
        return False
    high, changed, found = news
    if not changed:
        return True
    dim = matrix.raw.shape[1]
    if any(len(vec) != 2 * dim for vec in found.values()):
        return False  # another width (the first vectors of an empty matrix)
    positions = np.searchsorted(matrix.rowids, np.asarray(changed, dtype=np.int64))
    keep = np.ones(len(matrix.rowids), dtype=bool)
    # New arrays, not writes into the old ones: a search on another thread may be ranking a view of them.
    matrix.total = matrix.total.copy()
    copied = False
    new_ids: list[int] = []
    new_rows: list[Any] = []
    for rowid, at in zip(changed, positions.tolist()):
        vec = found.get(rowid)
        here = at < len(matrix.rowids) and int(matrix.rowids[at]) == rowid
        row = None if vec is None else np.frombuffer(vec, dtype=np.float16).astype(np.float32)
        if here:
            matrix.total -= matrix.raw[at]
            if row is None:
                keep[at] = False
                continue
            if not copied:
                matrix.raw, matrix.squares, copied = matrix.raw.copy(), matrix.squares.copy(), True
            matrix.raw[at] = row
            matrix.squares[at] = float(row.astype(np.float64) @ row)
            matrix.total += row
        elif row is not None:
            new_ids.append(rowid)
            new_rows.append(row)
            matrix.total += row
    if not keep.all():  # one copy of the rows without the gone ones
        matrix.rowids, matrix.raw, matrix.squares = matrix.rowids[keep], matrix.raw[keep], matrix.squares[keep]
    if new_ids:  # one copy with the new ones in row id order (new_ids ascend: ``changed`` is sorted)
        rows = np.asarray(new_rows, dtype=np.float32).reshape(-1, dim)
        at = np.searchsorted(matrix.rowids, np.asarray(new_ids, dtype=np.int64))
        matrix.rowids = np.insert(matrix.rowids, at, new_ids)
        matrix.raw = np.insert(matrix.raw, at, rows, axis=0)
        matrix.squares = np.insert(matrix.squares, at, np.einsum("ij,ij->i", rows, rows, dtype=np.float64))
    matrix.centre(np)
    matrix.seq = int(high)
    return True

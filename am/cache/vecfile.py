"""The cache's record vectors in a file beside it, ranked without numpy: what a one-shot search process reads.

Part of the vector level (am/cache/vectors.py calls here for a process that
searches once, ``am search``; a long-lived reader keeps a numpy matrix instead:
am/cache/vecmatrix.py). Importing numpy costs a process ~0.1-0.2 s and reading
every vector out of the SQLite rows (a scan of ``records`` joined to ``files``
and ``vectors``) ~0.07 s at 10k facts: together more than the rest of a search.
So the rows are kept in ``vectors.f16`` in the cache folder:

    b"AMVEC1\\n\\0" | u32 header length | header (JSON: epoch, model, seq, n, dim, total)
    | n row ids (int64) | n times 1 / |x - m| (float64) | n rows (float16, dim each)

``epoch`` is the cache file's (``meta.vector_epoch``, drawn when its vector tables
are made: a rebuilt cache has another), ``seq`` the last ``vector_log`` entry taken
in, ``total`` the sum of the rows (float64), so the mean ``m`` needs no pass over
them, and each row's inverse centred length is computed when the rows change, not
by every query. The file is mapped, not read. A process that finds it behind the log
patches only the rows the log names (reading them by row id) and writes it again (a
temporary file, then a rename); a log pruned past it, another epoch or model, a file
not whole, or many changes read every row once.

Ranking is the numpy matrix's, cosine after centring on the mean (see vecmatrix):
``(x . q' - m . q') / |x - m|``, with ``x . q'`` (and, for the lengths, ``x . m``, ``x . x``) computed
by SimSIMD (the ``am[semantic]`` extra) straight on the float16 rows, accumulating in
float32. The float32 query and mean are each sent as two float16 rows (a high and a
low part), so the products keep float32's precision (docs/decisions/recall.md#am-search-ranks-vectors-without-numpy-from-a-file-beside-the-cache). Where
SimSIMD is missing, or its kernels would accumulate in float16 (AVX512-FP16), there
is no light ranker: the caller uses numpy.

No sqlite3 import: statements run on ``Index.conn``.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import struct
import sys
from array import array
from bisect import bisect_left
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from am.cache.vecmatrix import ROWS, changes_since, epoch, last_seq

if TYPE_CHECKING:
    from am.cache.index import Index

__all__ = ["FILE_NAME", "Rows", "centre", "load", "ranked", "ranker", "save", "scores"]

FILE_NAME = "vectors.f16"
_MAGIC = b"AMVEC1\n\0"
_LEN = struct.Struct("<I")
_SUM_CHUNK = 1024  # rows unpacked at a time when summing without numpy


@dataclass
class Rows:
    """Every fact's and topic's vector (float16 bytes, row id order), their sum, as of log entry ``seq``."""

    epoch: str
    model: str
    seq: int
    dim: int
    rowids: array[int]   # int64, ascending
    data: Any            # bytes-like: len(rowids) * dim float16 values
    total: list[float]   # the sum of the rows (float64)
    inv: array[float] | None = None  # float64: 1 / |x - m| of each row (``centre``), None until computed

    def __len__(self) -> int:
        return len(self.rowids)


_RANKER: list[Any] = []  # [module or None], decided once a process


def ranker() -> Any:
    """Return SimSIMD set up to accumulate float16 products in float32, or None (not installed, or it cannot)."""
    if _RANKER:
        return _RANKER[0]
    found: Any = None
    simsimd: Any
    try:
        import simsimd
    except ImportError:
        simsimd = None
    if simsimd is not None:
        for name in ("sapphire", "neon_f16", "sve_f16"):  # float16 accumulators: too coarse to rank by
            try:
                simsimd.disable_capability(name)
            except Exception:  # noqa: BLE001, S112 - a capability this build does not know
                continue
        # 1 + 255 x 2^-11: float16 accumulation rounds every step back to 1.0, float32 keeps 1.1245...
        probe = struct.pack("<256e", 1.0, *([2.0 ** -11] * 255))
        ones = struct.pack("<256e", *([1.0] * 256))
        try:
            got = float(simsimd.dot(memoryview(probe).cast("H"), memoryview(ones).cast("H"), dtype="f16"))
        except Exception:  # noqa: BLE001 - an API this version lacks: numpy ranks instead
            got = 0.0
        if abs(got - (1 + 255 * 2.0 ** -11)) < 1e-6:
            found = simsimd
    _RANKER.append(found)
    return found


def path_of(index: Index) -> Path:
    """Return where the cache's vector file lives: beside the SQLite file."""
    return Path(index.path).with_name(FILE_NAME)


def read(path: Path) -> Rows | None:
    """Return the rows a vector file holds, or None when it is missing or not whole."""
    try:
        with open(path, "rb") as handle:
            # Mapped, not read: the rows are ranked where the page cache holds them (a 5 MB copy at 10k is not).
            blob: Any = memoryview(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ))
    except (OSError, ValueError):  # missing, or empty (mmap refuses a length of 0)
        return None
    try:
        if bytes(blob[:len(_MAGIC)]) != _MAGIC:
            return None
        (size,) = _LEN.unpack_from(blob, len(_MAGIC))
        start = len(_MAGIC) + _LEN.size
        head = json.loads(bytes(blob[start:start + size]))
        n, dim = int(head["n"]), int(head["dim"])
        at = start + size
        rowids, inv = array("q"), array("d")
        rowids.frombytes(blob[at:at + 8 * n])
        inv.frombytes(blob[at + 8 * n:at + 16 * n])
        data = blob[at + 16 * n:]
        if len(rowids) != n or len(inv) != n or len(data) != 2 * n * dim or len(head["total"]) != dim:
            return None
        return Rows(str(head["epoch"]), str(head["model"]), int(head["seq"]), dim, rowids, data,
                    [float(x) for x in head["total"]], inv)
    except (ValueError, KeyError, TypeError, struct.error):
        return None


def save(rows: Rows, path: Path) -> None:
    """Write the rows to ``path`` whole (a temporary file, then a rename); a folder that refuses is left alone."""
    head = json.dumps({"epoch": rows.epoch, "model": rows.model, "seq": rows.seq, "n": len(rows), "dim": rows.dim,
                       "total": rows.total}).encode()
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as handle:
            handle.write(_MAGIC + _LEN.pack(len(head)) + head)
            handle.write(rows.rowids.tobytes())
            handle.write((rows.inv or array("d")).tobytes())
            handle.write(rows.data)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)


def _sum_rows(data: bytes, n: int, dim: int) -> list[float]:
    """Return the column sums of ``n`` float16 rows (float64).

    With numpy when it is there (the vector level's embedders need it): summing 10k rows
    in Python costs more than importing it, and this runs only when every row is read.
    """
    np: Any
    try:
        import numpy as np
    except ImportError:
        np = None
    if np is not None:
        return [float(x) for x in np.frombuffer(data, dtype=np.float16).reshape(n, dim).sum(axis=0, dtype=np.float64)]
    total = [0.0] * dim
    for start in range(0, n, _SUM_CHUNK):
        count = min(_SUM_CHUNK, n - start)
        flat = struct.unpack_from(f"<{count * dim}e", data, start * dim * 2)
        total = [t + sum(flat[j::dim]) for j, t in enumerate(total)]
    return total


def _read_all(index: Index, cache_epoch: str, model: str) -> Rows | None:
    """Read every record's vector from the cache's rows (None: rows of different widths)."""
    seq = last_seq(index)  # first: a write after it is taken in by the next catch-up, whatever this reads
    found = index.conn.execute(ROWS + " ORDER BY r.rowid").fetchall()
    rowids = array("q", [r[0] for r in found])
    data = b"".join([r[1] for r in found])
    dim = len(found[0][1]) // 2 if found else 0
    if any(len(r[1]) != 2 * dim for r in found):
        return None
    return Rows(cache_epoch, model, seq, dim, rowids, data, _sum_rows(data, len(found), dim) if dim else [])


def _catch_up(index: Index, rows: Rows) -> bool:
    """Patch the rows whose vector may have changed since ``rows.seq``; False if they must be read again."""
    if not rows.dim:
        return last_seq(index) <= rows.seq  # it holds no rows yet: anything new is read whole
    news = changes_since(index, rows.seq, len(rows))
    if news is None:
        return False
    high, changed, found = news
    if not changed:
        return True
    width = 2 * rows.dim
    if any(len(vec) != width for vec in found.values()):
        return False
    row = struct.Struct(f"<{rows.dim}e")
    total, old_ids, old = rows.total, rows.rowids, memoryview(rows.data)
    ids: array[int] = array("q")
    parts: list[Any] = []
    done = 0  # old rows copied so far
    for rowid in changed:
        at = bisect_left(old_ids, rowid, done)
        ids.extend(old_ids[done:at])
        parts.append(old[done * width:at * width])
        done = at
        if at < len(old_ids) and old_ids[at] == rowid:  # the old vector goes
            total = [t - x for t, x in zip(total, row.unpack_from(old, at * width))]
            done = at + 1
        vec = found.get(rowid)
        if vec is not None:
            total = [t + x for t, x in zip(total, row.unpack(vec))]
            ids.append(rowid)
            parts.append(vec)
    ids.extend(old_ids[done:])
    parts.append(old[done * width:])
    rows.rowids, rows.data, rows.total, rows.seq, rows.inv = ids, b"".join(parts), total, int(high), None
    return True


def load(index: Index, model: str, simsimd: Any) -> Rows | None:
    """Return the cache's record vectors up to date (from the file, patched, or read again and saved).

    None when the cache has no vector tables of this model yet (``vectors.ensure`` makes them).
    """
    now = epoch(index)
    if now is None:
        return None
    path = path_of(index)
    rows = read(path)
    if rows is not None and rows.epoch == now and rows.model == model and _catch_up(index, rows):
        if rows.inv is None:  # patched: the mean moved
            centre(simsimd, rows)
            save(rows, path)
        return rows
    rows = _read_all(index, now, model)
    if rows is not None:
        centre(simsimd, rows)
        save(rows, path)
    return rows


def _f32(values: list[float]) -> list[float]:
    """Round to float32, as numpy's float32 vectors hold them."""
    return list(struct.unpack(f"<{len(values)}f", struct.pack(f"<{len(values)}f", *values)))


def _split16(values: list[float]) -> tuple[bytes, bytes]:
    """Return float16 high and low parts whose sum is the value to ~22 bits (a float32 row in two float16 rows)."""
    n = len(values)
    high = struct.pack(f"<{n}e", *values)
    low = [v - h for v, h in zip(values, struct.unpack(f"<{n}e", high))]
    return high, struct.pack(f"<{n}e", *low)


def _mean(rows: Rows) -> list[float]:
    """The rows' mean, as float32 (as the numpy matrix holds it)."""
    n = len(rows)
    return _f32([t / n for t in rows.total]) if n else [0.0] * rows.dim


def _matrix(rows: Rows) -> memoryview[int]:
    return memoryview(rows.data).cast("H", (len(rows), rows.dim))


def _dots(simsimd: Any, rows: Rows, vector: list[float]) -> Any:
    """Return each row's dot product with a float32 vector (float64, one per row), to float32's precision."""
    matrix = _matrix(rows)
    high, low = (memoryview(part).cast("H", (1, rows.dim)) for part in _split16(vector))
    return simsimd.wsum(_flat(simsimd.cdist(matrix, high, "dot", dtype="f16")),
                        _flat(simsimd.cdist(matrix, low, "dot", dtype="f16")), alpha=1.0, beta=1.0)


def _flat(tensor: Any) -> memoryview[Any]:
    """A SimSIMD result (n x 1, or n) as a one-dimensional view of float64."""
    return memoryview(tensor).cast("B").cast("d")


def centre(simsimd: Any, rows: Rows) -> None:
    """Compute each row's 1 / |x - m| from ``|x|^2 - 2 x . m + |m|^2`` (when the rows change, not a query)."""
    n = len(rows)
    if not n:
        rows.inv = array("d")
        return
    mean = _mean(rows)
    mm = math.fsum(m * m for m in mean)
    along = _flat(_dots(simsimd, rows, mean))
    squares = _flat(simsimd.dot(_matrix(rows), _matrix(rows), dtype="f16"))
    np = sys.modules.get("numpy")
    if np is not None:  # loaded when this process embedded a record (a search after a write): the same values, in C
        a, s = np.frombuffer(along, dtype=np.float64), np.frombuffer(squares, dtype=np.float64)
        rows.inv = array("d")
        rows.inv.frombytes((1.0 / np.maximum(np.sqrt(np.maximum(s - 2 * a + mm, 0.0)), 1e-6)).tobytes())
        return
    sqrt = math.sqrt
    rows.inv = array("d", [1.0 / max(sqrt(max(s - 2 * a + mm, 0.0)), 1e-6) for s, a in zip(squares.tolist(),
                                                                                             along.tolist())])


def scores(simsimd: Any, rows: Rows, query: list[float]) -> list[float]:
    """Return each row's cosine with the query, both centred on the rows' mean (as vecmatrix.Matrix.scores):
    ``(x . q' - m . q') / |x - m|``, one product over the rows and one multiply-add, in C."""
    n, dim = len(rows), rows.dim
    if not n or len(query) != dim:
        return []
    if rows.inv is None:
        centre(simsimd, rows)
    assert rows.inv is not None
    mean = _mean(rows)
    centred = [q - m for q, m in zip(query, mean)]
    length = max(math.sqrt(math.fsum(c * c for c in centred)), 1e-6)
    q = _f32([c / length for c in centred])
    along = math.fsum(a * b for a, b in zip(mean, q))  # m . q'
    # (x . q') * inv - (m . q') * inv
    found = simsimd.fma(rows.inv, _flat(_dots(simsimd, rows, q)), rows.inv, alpha=1.0, beta=-along)
    return cast("list[float]", _flat(found).tolist())


def ranked(values: list[float], least: float, first: int) -> list[list[int]]:
    """Return the positions of values at least ``least``, best first (ties by position), in batches
    (the first ``first`` long, then ``4 * first``), as vectors._best_first yields them."""
    order = [i for i, v in enumerate(values) if v >= least]
    order.sort(key=values.__getitem__, reverse=True)  # stable: equal values keep their order
    batches = [order[:first]]
    batches += [order[s:s + 4 * first] for s in range(first, len(order), 4 * first)]
    return [b for b in batches if b]

"""Re-rank a search's candidates: the terms' rarity, the neighbouring record, and (with vectors) meaning.

Full text gives a fixed-depth list of candidates (``DEPTH``, whatever ``--limit`` asks,
so the first hits never depend on it), in tiers: the terms as a phrase, every term,
some. This step orders them again, cheaply, from what the cache already holds:

- **coverage by rarity**: the share of the query's weight a record holds, each term
  weighing its inverse document frequency (``log(1 + N / (1 + df))``), instead of how
  many terms it holds: "Caroline" in 200 of 400 turns weighs less than "adoption" in 3;
- **the neighbouring record**: a record written within ``GAP`` of the one before or
  after it (a conversation's next turn, a session's next note) adds ``NEIGHBOUR`` times
  the better of their coverages: an answer is often the reply to the turn that names
  the question's words;
- **meaning**, with vectors: ``VECTOR`` times the record's cosine, and records found by
  meaning alone join only at or above ``FLOOR`` (cosine after centring) and ``RELATIVE``
  times the query's best cosine;
- **a calendar date** in the query ("on August 11", "before 2026-11-03"): ``CLOSE`` times
  the record's closeness to it (1 inside, 1/2 a week outside), instead of a cut;
- **facts before topics and relations that merely name the words** (issue 33.6): a
  topic or relation goes after the facts of its tier unless the query is a name: short
  (at most ``NAME_TERMS`` terms) and held whole by it.

The tiers "phrase" and "every term" stay first; within them, and in the rest, records
are ordered by that score, ties in full-text order. Measured on LoCoMo (bench/locomo.py).

Decisions: docs/decisions/recall.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from am.cache.index import Hit, Index
    from am.cache.timephrases import TimeRange

__all__ = ["CLOSE", "DEPTH", "FLOOR", "GAP", "RELATIVE", "NAME_TERMS", "NEIGHBOUR", "VECTOR", "closeness", "rerank"]

DEPTH = 50          # candidates taken from each level, whatever the limit
NEIGHBOUR = 0.3     # weight of the better neighbour's coverage
VECTOR = 0.1        # weight of the cosine (after centring)
FLOOR = 0.2         # a record found by meaning alone joins only at or above this cosine (after centring)
RELATIVE = 0.5      # ... and at or above this share of the query's best cosine
GAP = 1800.0        # seconds: records further apart are not neighbours
CLOSE = 0.5         # weight of the closeness to a calendar date the query names
WEEK = 7 * 86400.0  # closeness halves a week outside the date's range
NAME_TERMS = 3      # a query of at most this many terms may be a name
_DF_CAP = 20000     # document frequencies are counted up to this (rarer than that is all that matters)


def _document_frequency(index: Index, match: str) -> int:
    row = index.conn.execute("SELECT count(*) FROM (SELECT rowid FROM search WHERE search MATCH ? LIMIT ?)",
                             (match, _DF_CAP)).fetchone()
    return int(row[0])


def _holding(index: Index, matches: Sequence[str], rowids: set[int]) -> dict[int, set[int]]:
    """Return {rowid: indexes of the terms it holds} for these rows (each term read once, over their span)."""
    held: dict[int, set[int]] = {r: set() for r in rowids}
    if not rowids:
        return held
    low, high = min(rowids), max(rowids)
    for n, match in enumerate(matches):
        for (rowid,) in index.conn.execute(
                "SELECT rowid FROM search WHERE search MATCH ? AND rowid >= ? AND rowid <= ?", (match, low, high)):
            if rowid in held:
                held[rowid].add(n)
    return held


def _neighbours(index: Index, rows: Mapping[int, float | None]) -> dict[int, list[int]]:
    """Return each fact row's neighbours: the facts written just before and after it, within ``GAP`` (one query)."""
    pairs = [[rowid, ts] for rowid, ts in rows.items() if ts is not None]
    if not pairs:
        return {}
    out: dict[int, list[int]] = {}
    for rowid, before, after in index.conn.execute(
            "SELECT json_extract(c.value, '$[0]'), "
            "(SELECT rowid FROM records WHERE type = 'fact' AND created_ts < json_extract(c.value, '$[1]') "
            " AND created_ts >= json_extract(c.value, '$[1]') - ? ORDER BY created_ts DESC LIMIT 1), "
            "(SELECT rowid FROM records WHERE type = 'fact' AND created_ts > json_extract(c.value, '$[1]') "
            " AND created_ts <= json_extract(c.value, '$[1]') + ? ORDER BY created_ts LIMIT 1) "
            "FROM json_each(?) c", (GAP, GAP, _json(pairs))):
        out[int(rowid)] = [int(n) for n in (before, after) if n is not None]
    return out


def rerank(index: Index, text: str, hits: Sequence[Hit], *,
           cosines: Mapping[tuple[str, str], float] | None = None, close: TimeRange | None = None) -> list[Hit]:
    """Return the candidates ordered by tier, then coverage by rarity, the neighbour and meaning (see above).

    ``cosines``: (id, path) -> cosine of the records the vector level found; ``close``: a calendar
    date's range (``TimeRange.soft``), whose records rank first, then the nearer the better.
    Hits found by their id (``matched < 0``) are not candidates here; the caller keeps them first.
    """
    from am.cache.terms import analyse

    units = analyse(text).units if text.strip() else ()
    if not hits or not units:
        return list(hits)
    matches = [u.match for u in units]
    keys = [(h.id, str(h.path)) for h in hits]
    found = {(i, p): (int(r), ts) for r, i, p, ts in index.conn.execute(
        "SELECT rowid, id, path, created_ts FROM records WHERE id IN (SELECT value FROM json_each(?))",
        (_json([h.id for h in hits]),))}
    total = max(1, _count(index))
    weight = [math.log(1 + total / (1 + _document_frequency(index, m))) for m in matches]
    whole = sum(weight) or 1.0
    facts = {found[k][0]: found[k][1] for k, h in zip(keys, hits) if h.type == "fact" and k in found}
    near = _neighbours(index, facts)
    held = _holding(index, matches, {r for r, _ in found.values()} | {n for ns in near.values() for n in ns})

    def coverage(rowid: int) -> float:
        return sum(weight[n] for n in held.get(rowid, ())) / whole

    folded = [u.text.casefold() for u in units]
    names = _names(index, [found[k][0] for k, h in zip(keys, hits) if h.type != "fact" and k in found]) \
        if len(units) <= NAME_TERMS else {}
    scored = []
    for position, (key, hit) in enumerate(zip(keys, hits)):
        rowid = found.get(key, (None, None))[0]
        score = 0.0 if rowid is None else coverage(rowid)
        if rowid is not None and rowid in near:
            score += NEIGHBOUR * max((coverage(n) for n in near[rowid]), default=0.0)
        if cosines is not None:
            score += VECTOR * cosines.get(key, 0.0)
        if close is not None:
            score += CLOSE * closeness(close, found.get(key, (None, None))[1])
        group = hit.tier if hit.tier < 2 else 2
        demoted = hit.type in ("topic", "relation") and not (
            rowid is not None and all(w in names.get(rowid, "") for w in folded))
        scored.append((group, demoted, -score, position, hit))
    scored.sort(key=lambda row: row[:4])
    return [replace(row[4], tier=min(row[4].tier, 3)) for row in scored]


def closeness(close: TimeRange, ts: float | None) -> float:
    """Return 1 for a moment inside a calendar date's range (the named day itself included, so "before
    August 11" keeps what was said on August 11), decaying with the distance outside it: 1/2 a week off."""
    if ts is None:
        return 0.0
    day = 86400.0
    low = None if close.since is None else close.since.timestamp() - (day if close.until is None else 0.0)
    high = None if close.until is None else close.until.timestamp() + (day if close.since is None else 0.0)
    off = (low - ts) if low is not None and ts < low else (ts - high) if high is not None and ts >= high else 0.0
    return 1.0 / (1.0 + off / WEEK)


def _names(index: Index, rowids: Sequence[int]) -> dict[int, str]:
    """Return each topic's or relation's id, title and aliases, folded: what a query that is a name names."""
    if not rowids:
        return {}
    rows = index.conn.execute(
        "SELECT r.rowid, r.id, coalesce(r.title, ''), coalesce(s.aliases, '') FROM records r "
        "LEFT JOIN search s ON s.rowid = r.rowid WHERE r.rowid IN (SELECT value FROM json_each(?))",
        (_json(list(rowids)),))
    return {int(r): " ".join((i, t, a)).casefold() for r, i, t, a in rows}


def _count(index: Index) -> int:
    row = index.conn.execute("SELECT (SELECT count(*) FROM records WHERE type = 'fact') + "
                             "(SELECT count(*) FROM records WHERE type = 'topic')").fetchone()
    return int(row[0])


def _json(values: Sequence[object]) -> str:
    import json

    return json.dumps(list(values))

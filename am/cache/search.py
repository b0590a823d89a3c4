"""Search: a person's or agent's query in, ranked records with snippets out.

Pure over the cache (am/cache/index.py): ``search(index, query, ...)`` takes the time
phrase out of the query (am/cache/timephrases.py), narrows by date and the filters,
ranks the rest of the words (am/cache/terms.py: stems, no stop words; the terms as
a phrase first, then every term, then some, by how many, each by BM25) or sorts
them newest first, and cuts a snippet around the first match of each hit.
Superseded and expired records are hidden unless asked for. A time phrase that
leaves nothing says so, with how many records match without it.

Decisions: docs/decisions/recall.md.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from am.clock import now
from am.errors import NotFoundError, UsageError
from am.records.model import STATUSES, Fact, Record, Relation, Topic
from am.cache.textseg import _CJK_RANGES, id_prefix_terms
from am.cache import rerank as reranking
from am.cache.rerank import DEPTH, rerank
from am.cache.timephrases import TimeRange, parse_query, parse_time

if TYPE_CHECKING:
    from am.cache.index import Hit, Index
    from am.cache.vectors import Embedder

__all__ = ["HIDDEN_STATUSES", "SearchHit", "SearchResult", "search", "snippet", "now", "topic_named"]

HIDDEN_STATUSES = ("superseded", "expired")
_SNIPPET = 160
_WORD = re.compile(r"[^\W_]+")
# A word of a spaced script: letters and digits, up to a Chinese or Japanese character (as the index splits them).
_SPACED_WORD = re.compile("(?:(?![{}])[^\\W_])+".format(
    "".join(f"{re.escape(chr(low))}-{re.escape(chr(high))}" for low, high in _CJK_RANGES)))


@dataclass(frozen=True)
class SearchHit:
    """One result as people and agents see it."""

    id: str
    type: str
    status: str
    title: str
    topics: tuple[str, ...]
    created: str | None
    path: PurePosixPath
    snippet: str
    rank: float
    matched: int = -1   # how many of the query's terms it holds (-1: found by its id)
    terms: int = 0      # how many terms the query has
    tier: int = 0       # 0: the terms as a phrase, 1: every term, 2: some, 3: by meaning alone (vector)
    found: str = "full-text"  # which levels found it: full-text, vector, full-text+vector (id: by its id)

    def explain(self) -> str:
        """Return how the hit matched, for people: "matched 2 of 3 terms"."""
        if self.tier == 3:
            return f"by meaning (similarity {-self.rank:.2f})"
        if self.matched < 0 or not self.terms:
            return "matched by id" if self.matched < 0 else ""
        how = " as a phrase" if self.tier == 0 and self.terms > 1 else ""
        return f"matched {self.matched} of {self.terms} term{'s' * (self.terms != 1)}{how}"


@dataclass(frozen=True)
class SearchResult:
    """The hits of one query and what was applied to find them."""

    query: str
    text: str
    range: TimeRange | None
    ignored: tuple[str, ...]
    statuses: tuple[str, ...]
    hits: tuple[SearchHit, ...]
    terms: tuple[str, ...] = ()       # the query's terms as searched (stop words left out)
    dropped: tuple[str, ...] = ()     # stop words left out
    without_range: int | None = None  # the range left nothing: the hits (this many) are from any time
    levels: tuple[str, ...] = ()      # what each retrieval level said ("vector: not installed", ...)

    @property
    def served(self) -> str:
        """Return the levels that found the hits: full-text, vector or vector+full-text."""
        from am.cache.vectors import levels_of

        return levels_of((h.id, h.found.replace("id", "full-text")) for h in self.hits) if self.hits else "none"

    def notes(self) -> list[str]:
        """Return what people should be told besides the hits (ignored phrases, an empty range)."""
        out = [f"only the first time phrase narrows the range; ignored {p!r}" for p in self.ignored]
        if self.range is not None and (not self.hits or self.without_range is not None):
            more = "" if self.without_range is None else (
                f"; {_matching(self.without_range, sum(h.type == 'note' for h in self.hits))} without it, shown below"
                if self.without_range else "; nothing matches without it either")
            out.append(f"the time phrase {self.range.phrase!r} was read as {self.range.describe()}, "
                       f"and nothing in that range matches{more}")
        return out


def _narrow(found: TimeRange | None, since: datetime | None, until: datetime | None) -> TimeRange | None:
    """Intersect the query's own range with --since/--until."""
    if since is None and until is None:
        return found
    low = [m for m in (found.since if found else None, since) if m is not None]
    high = [m for m in (found.until if found else None, until) if m is not None]
    phrases = [p for p in (found.phrase if found else None, "--since" if since else None,
                           "--until" if until else None) if p]
    return TimeRange(max(low) if low else None, min(high) if high else None, " + ".join(phrases))


def topic_named(index: Index, topic: str) -> bool:
    """Return whether a topic id names something: its own record, or a record about it (one row, not decoded)."""
    return index.lookup(topic) is not None or bool(index.ids_with_prefix("", limit=1, topic=topic))


def search(index: Index, query: str, *, topic: str | None = None, status: str | None = None,
           repo: str | None = None, since: str | datetime | None = None, until: str | datetime | None = None,
           include_superseded: bool = False, types: tuple[str, ...] | None = None, limit: int = 20,
           at: datetime | None = None, sort: str = "rank", mode: str = "ranked", notes: bool = True,
           embedder: Embedder | None = None, vector_note: str = "", vector_budget_s: float | None = None,
           vector_once: bool = False) -> SearchResult:
    """Find records (and notes) for a query; time phrases in it narrow the date range before ranking.

    Notes (Markdown without am frontmatter) come as hits of type ``note`` (id
    ``note:<path>``) when nothing narrows the search to records: no time range,
    status, topic or repo, ``types`` unset or naming "note", ranked by relevance.

    ``sort``: "rank" (phrase, then all terms, then some, by BM25) or "time" (newest first);
    ``mode="and"``: every word must occur (the search before ranking). With an ``embedder``
    (am/packs/embedding.py chooses it), the vector ranking is fused with the full-text one
    (am/cache/vectors.py); ``vector_note`` says why there is none, or which model served;
    ``vector_once``: the process searches once (``am search``), so the vectors are not held in memory.
    """
    if sort not in ("rank", "time"):
        raise UsageError(f"unknown sort {sort!r}", hint="use --sort rank or --sort time")
    if limit < 1:
        raise UsageError("--limit must be at least 1")
    moment = at or now()
    parsed = parse_query(query, now=moment)
    since_at = parse_time(since, now=moment) if isinstance(since, str) else since
    until_at = parse_time(until, now=moment) if isinstance(until, str) else until
    if since_at is not None and until_at is not None and since_at >= until_at:
        raise UsageError(f"--since {since} is not before --until {until}: no time lies between them",
                         hint="give the earlier moment as --since (swap them)")
    from am.cache.terms import analyse

    analysed = analyse(parsed.text)
    # A calendar date ranks by closeness instead of cutting (issue 35.4), when there are words to rank.
    close = parsed.range if parsed.range is not None and parsed.range.soft and analysed.units and sort == "rank" \
        and mode == "ranked" else None
    window = _narrow(None if close else parsed.range, since_at, until_at)
    if not analysed.units and window is None:
        # Nothing to match and no period to list: the newest records would read as an answer.
        raise UsageError(f"the query {query!r} has no word to search for",
                         hint="search for a word, or give a time phrase like 'yesterday'")
    if status is not None:
        if status not in STATUSES:
            raise UsageError(f"unknown status {status!r}", hint=f"use one of: {', '.join(STATUSES)}")
        statuses: tuple[str, ...] = (status,)
    elif include_superseded:
        statuses = STATUSES
    else:
        statuses = tuple(s for s in STATUSES if s not in HIDDEN_STATUSES)
    if topic is not None and not topic_named(index, topic):
        # A typo must not read as "nothing is known"; a topic that only facts or relations name still narrows.
        raise NotFoundError(f"no topic {topic!r} in the vault", hint="list them with: am topic list")
    filters = dict(statuses=statuses, topic=topic, repo=repo, types=types,
                   since=window.since if window else None, until=window.until if window else None)
    hits: list[Hit] = []
    ids = id_prefix_terms(parsed.text)
    # Words that are all id-like ("f-2026", "project-alpha") also name records by id.
    if ids and not _WORD.search(re.sub("|".join(map(re.escape, ids)), " ", parsed.text.lower())):
        for term in ids:
            hits += index.ids_with_prefix(term, limit=limit, **filters)  # type: ignore[arg-type]
    seen = {h.id for h in hits}
    ranked = sort == "rank" and mode == "ranked" and bool(parsed.text.strip())
    # Ranked: a fixed depth of candidates, re-ranked, so the first hits never depend on --limit.
    depth = max(limit, DEPTH) if ranked else limit
    words = [h for h in index.search(parsed.text, limit=depth, sort=sort, mode=mode, **filters)  # type: ignore[arg-type]
             if h.id not in seen]
    found = {(h.id, str(h.path)): ("id" if h.matched < 0 else "full-text") for h in [*hits, *words]}
    levels: list[str] = [vector_note] if vector_note else []
    if embedder is not None and ranked:
        words, more = _hybrid(index, embedder, parsed.text, words, found, depth, vector_budget_s, filters,
                              once=vector_once, close=close)
        levels += more
    elif ranked:
        words = rerank(index, parsed.text, words, close=close)
    hits = (hits + words)[:limit]
    without: int | None = None
    if not hits and parsed.range is not None and parsed.text.strip():
        # A phrase in the query that leaves nothing says so, and the words' matches from any time
        # follow ("周五可以发布吗" asks about Fridays, not about what was written on one).
        # The phrase's words go back into the query ("moved 4 years ago": "years" and "ago" are words again).
        wider = dict(filters, since=since_at, until=until_at)
        back = " ".join(query.split())
        hits = index.search(back, limit=depth, sort=sort, mode=mode, **wider)  # type: ignore[arg-type]
        hits = (rerank(index, back, hits) if ranked else hits)[:limit]
        without = len(hits)
    records = {(r.id, str(p)): r for p, r in index.records(ids=[h.id for h in hits])}
    terms = [u.text for u in analysed.units]
    out = []
    for hit in hits:
        record = records.get((hit.id, str(hit.path)))
        if record is None:
            continue
        out.append(SearchHit(
            id=hit.id, type=hit.type, status=hit.status, title=_title(record), topics=_topics(record),
            created=hit.created, path=hit.path, snippet=snippet(_text(record), terms), rank=hit.rank,
            matched=hit.matched, terms=hit.terms, tier=hit.tier,
            found=found.get((hit.id, str(hit.path)), "full-text"),
        ))
    if (notes and sort == "rank" and mode == "ranked" and status is None and topic is None and repo is None
            and (types is None or "note" in types)
            and (window is None or (without is not None and since_at is None and until_at is None))):
        # Notes (no am frontmatter) are searched too, labelled as notes; never records, never in a pack.
        # A time narrows to records; the fallback without the query's phrase searches what the search would.
        out = _with_notes(out, index.search_notes(parsed.text, limit=limit), terms, limit)
        without = None if without is None else len(out)
    return SearchResult(query=query, text=parsed.text, range=_narrow(close, since_at, until_at) if close else window,
                        ignored=parsed.ignored,
                        statuses=statuses, hits=tuple(out), terms=tuple(terms), dropped=analysed.dropped,
                        without_range=without, levels=tuple(levels))


def _hybrid(index: Index, embedder: Embedder, text: str, hits: list[Hit], found: dict[tuple[str, str], str],
            depth: int, budget_s: float | None, filters: Mapping[str, object], *,
            once: bool = False, close: TimeRange | None = None) -> tuple[list[Hit], list[str]]:
    """Return the full-text candidates and the vector ones re-ranked together (am/cache/rerank.py), and notes;
    ``found`` learns how each was found.

    A record found by meaning alone joins only at or above ``reranking.FLOOR`` and half the query's best
    cosine; meaning otherwise
    only adds to a candidate's score, so a query nothing answers by meaning is served by
    full text, or by nothing. Never raises: a model or cache that fails leaves the full-text
    candidates (re-ranked) and a note.
    """
    from dataclasses import replace

    from am.cache import vectors

    try:
        status = vectors.ensure(index, embedder, budget_s=budget_s)
        near = vectors.search(index, embedder, text, limit=depth, once=once, **filters)  # type: ignore[arg-type]
    except Exception as err:  # noqa: BLE001 - an optional level's failure must not cost the user the answer
        return rerank(index, text, hits, close=close), [f"vector: failed ({type(err).__name__}: {err})"]
    notes = [n for n in (status.note(),) if n]
    cosines = {(h.id, str(h.path)): score for h, score in near}
    have = {(h.id, str(h.path)) for h in hits}
    floor = max(reranking.FLOOR, reranking.RELATIVE * max((score for _, score in near), default=0.0))
    alone = [replace(h, matched=0, terms=hits[0].terms if hits else 0, tier=3) for h, score in near
             if (h.id, str(h.path)) not in have and score >= floor]
    for h in hits:
        k = (h.id, str(h.path))
        if k in cosines:
            found[k] = "full-text+vector"
    for h in alone:
        found[(h.id, str(h.path))] = "vector"
    used = sum(1 for k in cosines if k in have) + len(alone)
    notes.append(f"vector: {used} hits" if used else "vector: no match")
    return rerank(index, text, [*hits, *alone], cosines=cosines, close=close), notes


def _matching(count: int, notes: int) -> str:
    """Return "3 records match", "1 note matches" or "1 record and 2 notes match"."""
    said = [f"{n} {what}{'s' * (n != 1)}" for n, what in ((count - notes, "record"), (notes, "note")) if n]
    return f"{' and '.join(said)} match{'es' * (count == 1)}"


def _with_notes(hits: list[SearchHit], notes: list[tuple[str, str, float, int]], terms: list[str],
                limit: int) -> list[SearchHit]:
    """Return the record hits with the note hits merged in by tier, then BM25 (the records' order kept)."""
    from am.records.names import NOTE_PREFIX

    pending = [SearchHit(id=NOTE_PREFIX + path, type="note", status="note", title=PurePosixPath(path).stem,
                         topics=(), created=None, path=PurePosixPath(path), snippet=snippet(raw, terms), rank=rank,
                         matched=len(terms) if tier < 2 else max(1, sum(t.lower() in raw.lower() for t in terms)),
                         terms=len(terms), tier=tier)
               for path, raw, rank, tier in notes]
    merged: list[SearchHit] = []
    for hit in hits:
        while pending and (pending[0].tier, pending[0].rank) < (hit.tier, hit.rank):
            merged.append(pending.pop(0))
        merged.append(hit)
    return (merged + pending)[:limit]


def _title(record: Record) -> str:
    if isinstance(record, Topic):
        return record.title
    if isinstance(record, Relation):
        return f"{record.from_} {record.rel} {record.to}"
    return ""


def _topics(record: Record) -> tuple[str, ...]:
    if isinstance(record, Fact):
        return record.topics
    if isinstance(record, Relation):
        return (record.from_, record.to)
    return (record.id,)


def _text(record: Record) -> str:
    if isinstance(record, Topic):
        return " · ".join(x for x in (record.title, ", ".join(record.aliases), record.body) if x)
    return record.body


def _find(folded: str, term: str) -> tuple[int, int]:
    """Return where a term first occurs in folded text as a whole word (an English one in any form of its
    stem), or (-1, -1); a Chinese or Japanese term anywhere, as those scripts have no spaces."""
    from am.cache.terms import stem
    from am.cache.textseg import _is_cjk

    if any(_is_cjk(c) for c in term):
        at = folded.find(term)
        return at, at + len(term)
    wanted = stem(term) if term.isascii() and term.isalpha() else term
    for m in _SPACED_WORD.finditer(folded):  # "f" is not in "falls", "feat" is in "在feat分支"
        word = m.group(0)
        if word == term or (word.isascii() and stem(word) == wanted):
            return m.start(), m.end()
    return -1, -1


def snippet(text: str, terms: list[str], *, width: int = _SNIPPET) -> str:
    """Return one line of ``text`` around the first matching term, the match in **bold**."""
    flat = " ".join(text.split())
    folded = unicodedata.normalize("NFKC", flat).lower()
    if len(folded) != len(flat):
        flat = unicodedata.normalize("NFKC", flat)
    best: tuple[int, int] | None = None
    for term in terms:
        at, end = _find(folded, unicodedata.normalize("NFKC", term).lower())
        if at >= 0 and (best is None or at < best[0]):
            best = (at, end)
    if best is None:
        return flat[:width] + ("…" if len(flat) > width else "")
    start = max(0, best[0] - width // 3)
    end = min(len(flat), start + width)
    start = max(0, min(start, end - width))
    head = "…" if start > 0 else ""
    tail = "…" if end < len(flat) else ""
    return f"{head}{flat[start:best[0]]}**{flat[best[0]:best[1]]}**{flat[best[1]:end]}{tail}"

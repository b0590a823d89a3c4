"""Search: a person's or agent's query in, ranked records with snippets out.

Pure over the cache (am/cache/index.py): ``search(index, query, ...)`` takes the time
phrase out of the query (am/cache/timephrases.py), narrows by date and the filters,
ranks the rest of the words with BM25, and cuts a snippet around the first
match of each hit. Superseded and expired records are hidden unless asked for.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from am.clock import now
from am.errors import UsageError
from am.records.model import STATUSES, Fact, Record, Relation, Topic
from am.cache.textseg import id_prefix_terms
from am.cache.timephrases import TimeRange, parse_query, parse_time

if TYPE_CHECKING:
    from am.cache.index import Hit, Index

__all__ = ["HIDDEN_STATUSES", "SearchHit", "SearchResult", "search", "snippet", "now"]

HIDDEN_STATUSES = ("superseded", "expired")
_SNIPPET = 160
_WORD = re.compile(r"[^\W_]+")


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


@dataclass(frozen=True)
class SearchResult:
    """The hits of one query and what was applied to find them."""

    query: str
    text: str
    range: TimeRange | None
    ignored: tuple[str, ...]
    statuses: tuple[str, ...]
    hits: tuple[SearchHit, ...]


def _narrow(found: TimeRange | None, since: datetime | None, until: datetime | None) -> TimeRange | None:
    """Intersect the query's own range with --since/--until."""
    if since is None and until is None:
        return found
    low = [m for m in (found.since if found else None, since) if m is not None]
    high = [m for m in (found.until if found else None, until) if m is not None]
    phrases = [p for p in (found.phrase if found else None, "--since" if since else None,
                           "--until" if until else None) if p]
    return TimeRange(max(low) if low else None, min(high) if high else None, " + ".join(phrases))


def search(index: Index, query: str, *, topic: str | None = None, status: str | None = None,
           repo: str | None = None, since: str | datetime | None = None, until: str | datetime | None = None,
           include_superseded: bool = False, types: tuple[str, ...] | None = None, limit: int = 20,
           at: datetime | None = None) -> SearchResult:
    """Find records for a query; time phrases in it narrow the date range before ranking."""
    if limit < 1:
        raise UsageError("--limit must be at least 1")
    moment = at or now()
    parsed = parse_query(query, now=moment)
    since_at = parse_time(since, now=moment) if isinstance(since, str) else since
    until_at = parse_time(until, now=moment) if isinstance(until, str) else until
    window = _narrow(parsed.range, since_at, until_at)
    if status is not None:
        if status not in STATUSES:
            raise UsageError(f"unknown status {status!r}", hint=f"use one of: {', '.join(STATUSES)}")
        statuses: tuple[str, ...] = (status,)
    elif include_superseded:
        statuses = STATUSES
    else:
        statuses = tuple(s for s in STATUSES if s not in HIDDEN_STATUSES)
    filters = dict(statuses=statuses, topic=topic, repo=repo, types=types,
                   since=window.since if window else None, until=window.until if window else None)
    hits: list[Hit] = []
    ids = id_prefix_terms(parsed.text)
    # Words that are all id-like ("f-2026", "project-alpha") also name records by id.
    if ids and not _WORD.search(re.sub("|".join(map(re.escape, ids)), " ", parsed.text.lower())):
        for term in ids:
            hits += index.ids_with_prefix(term, limit=limit, **filters)  # type: ignore[arg-type]
    seen = {h.id for h in hits}
    hits += [h for h in index.search(parsed.text, limit=limit, **filters) if h.id not in seen]  # type: ignore[arg-type]
    hits = hits[:limit]
    records = {(r.id, str(p)): r for p, r in index.records(ids=[h.id for h in hits])}
    terms = _terms(parsed.text)
    out = []
    for hit in hits:
        record = records.get((hit.id, str(hit.path)))
        if record is None:
            continue
        out.append(SearchHit(
            id=hit.id, type=hit.type, status=hit.status, title=_title(record), topics=_topics(record),
            created=hit.created, path=hit.path, snippet=snippet(_text(record), terms), rank=hit.rank,
        ))
    return SearchResult(query=query, text=parsed.text, range=window, ignored=parsed.ignored,
                        statuses=statuses, hits=tuple(out))


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


def _terms(text: str) -> list[str]:
    """Return the query's words as they are looked for in a body: lower-cased, NFKC."""
    return [w for w in (m.group(0) for m in _WORD.finditer(unicodedata.normalize("NFKC", text).lower())) if w]


def snippet(text: str, terms: list[str], *, width: int = _SNIPPET) -> str:
    """Return one line of ``text`` around the first matching term, the match in **bold**."""
    flat = " ".join(text.split())
    folded = unicodedata.normalize("NFKC", flat).lower()
    if len(folded) != len(flat):
        flat = unicodedata.normalize("NFKC", flat)
    best: tuple[int, int] | None = None
    for term in terms:
        at = folded.find(term)
        if at >= 0 and (best is None or at < best[0]):
            best = (at, at + len(term))
    if best is None:
        return flat[:width] + ("…" if len(flat) > width else "")
    start = max(0, best[0] - width // 3)
    end = min(len(flat), start + width)
    start = max(0, min(start, end - width))
    head = "…" if start > 0 else ""
    tail = "…" if end < len(flat) else ""
    return f"{head}{flat[start:best[0]]}**{flat[best[0]:best[1]]}**{flat[best[1]:end]}{tail}"

"""`am search --session`: find what was said in the stored session logs, ranked, by words, role, session and time.

The logs under ``sessions/`` (the masked copies) are indexed in the cache's
session tables (am/cache/sessionlines.py: derived, rebuilt from the logs,
brought up to date before each search, a grown log by its new lines only).
A log is not a record: packs never carry raw session text. Messages are
ranked as records are: the words as a phrase first, then every word, then
some (by how many), each by BM25, ties by log and line, so the same vault and
question give the same answer. Time phrases ("yesterday", "上周", "3 days
ago", ISO dates) narrow by the message's own time and are not searched for;
with no words left, the newest messages come first. Each hit names its
session, its line in the log, the role and the time. When the cache cannot be
used, the logs are read and scanned instead (every word must occur; newest
first).

Decisions: docs/decisions/sessions.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from am.clock import now as _now
from am.errors import UsageError
from am.records.ids import stored_moment
from am.records.sessionlog import ROLES, log_file, messages

if TYPE_CHECKING:
    from am.cache.timephrases import TimeRange
    from am.vault import Vault

__all__ = ["SessionHit", "SessionSearch", "search_sessions"]

_SNIPPET = 160


@dataclass(frozen=True)
class SessionHit:
    """One message that matched: which session, which line of its log, who said it, when, and an excerpt."""

    session: str
    topic: str
    path: str
    line: int
    role: str
    ts: str | None
    snippet: str
    rank: float = 0.0  # BM25, lower is better (0.0: not ranked)
    matched: int = -1  # how many of the query's words the message holds (-1: not counted)
    terms: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"session": self.session, "topic": self.topic, "path": self.path, "line": self.line,
                "role": self.role, "ts": self.ts, "snippet": self.snippet, "rank": round(self.rank, 4),
                "matched": self.matched, "terms": self.terms}


@dataclass(frozen=True)
class SessionSearch:
    """The answer: the words searched, the time range read from the query, the hits, and how many there were."""

    terms: tuple[str, ...]
    range: TimeRange | None
    hits: tuple[SessionHit, ...]
    total: int
    sessions_read: int
    ranked: bool = False  # ranked through the cache (False: the logs were scanned, newest first)


def _snippet(text: str, term: str | None) -> str:
    flat = " ".join(text.split())
    if term is None or len(flat) <= _SNIPPET:
        return flat[:_SNIPPET]
    at = max(flat.casefold().find(term), 0)
    start = max(0, at - _SNIPPET // 3)
    piece = flat[start:start + _SNIPPET]
    return ("…" if start else "") + piece + ("…" if start + _SNIPPET < len(flat) else "")


def search_sessions(vault: Vault, query: str, *, role: str | None = None, session: str | None = None,
                    limit: int = 20, sort: str = "rank") -> SessionSearch:
    """Search the stored session logs; ``session`` narrows to one (its id or topic id).

    ``sort``: "rank" (best first), or "oldest": the matching lines in the order they were said
    (by time, then session and line), the first ``limit`` of them, for a chronological read.
    """
    if sort == "oldest":
        from dataclasses import replace

        found = search_sessions(vault, query, role=role, session=session, limit=1 << 40)
        ordered = sorted(found.hits, key=lambda h: (_said_at(h), h.session, h.line))
        return replace(found, hits=tuple(ordered[:limit]))
    if sort != "rank":
        raise UsageError(f"unknown sort {sort!r} for session lines", hint="use --sort rank or --sort oldest")
    from am.cache.timephrases import parse_query

    if role is not None and role not in ROLES:
        raise UsageError(f"unknown role {role!r}", hint=f"use one of: {', '.join(ROLES)}")
    from am.cache.terms import analyse

    parsed = parse_query(query, now=_now())
    if not analyse(parsed.text).units and parsed.range is None and role is None:
        # "?" or an emoji leaves no word: answering "no session lines found" would read as a search made.
        what = f"the query {query!r} has no word to search for" if query.strip() else "nothing to search for"
        raise UsageError(what, hint="give words, a time phrase or --role")
    every = vault.list_topics(kind="session")
    topics = every
    if session is not None:
        from am.records.sessionlog import session_topic_id

        wanted = {session, session_topic_id(session)}
        topics = [t for t in topics if t.id in wanted or t.extra.get("session_id") == session]
        if not topics:
            raise UsageError(f"no ingested session {session!r}", hint="list them with: am topic list --kind session")
    index = vault.cache()
    if index is None:
        return _scan(vault, parsed, topics, role, limit)
    return _ranked(vault, index, parsed, every, topics if session is not None else None, role, limit)


def _said_at(hit: SessionHit) -> float:
    moment = stored_moment(hit.ts) if hit.ts else None
    return moment.timestamp() if moment is not None else float("-inf")


def _source(topic: Any, root: Path) -> Any:
    from am.cache.sessionlines import LogSource

    log = topic.extra.get("file")
    if not isinstance(log, str) or log_file(root, log) is None:
        return None
    started = topic.extra.get("started")
    return LogSource(log, str(topic.extra.get("session_id") or topic.id), topic.id,
                     str(topic.extra.get("client", "jsonl")), started if isinstance(started, str) else None)


def _ranked(vault: Vault, index: Any, parsed: Any, every: list[Any], narrowed: list[Any] | None, role: str | None,
            limit: int) -> SessionSearch:
    from am.cache import sessionlines
    from am.cache.terms import analyse

    logs = [s for s in (_source(t, vault.root) for t in every) if s is not None]
    sessionlines.refresh(index, vault.root, logs)
    terms = analyse(parsed.text) if parsed.text.strip() else None
    paths = None if narrowed is None else [s.path for s in (_source(t, vault.root) for t in narrowed) if s is not None]
    rng = parsed.range
    found, total = sessionlines.search(index, terms, role=role, paths=paths, since=rng.since if rng else None,
                                       until=rng.until if rng else None, limit=limit)
    words = tuple(u.text for u in terms.units) if terms is not None else ()
    hits = tuple(SessionHit(h.session, h.topic, h.path, h.line, h.role, h.ts,
                            _excerpt(vault, h, words[0].casefold() if words else None), h.rank, h.matched, h.terms)
                 for h in found)
    return SessionSearch(words, rng, hits, total, len(logs), ranked=True)


def _excerpt(vault: Vault, hit: Any, term: str | None) -> str:
    """Return an excerpt of the message a hit names, read from its log at the line's offset."""
    from am.records.sessionlog import messages

    try:
        with open(vault.root / hit.path, "rb") as log:
            log.seek(hit.offset)
            raw = log.readline()
    except OSError:
        return ""
    said = list(messages(raw.rstrip(b"\n"), hit.client))
    return _snippet(said[hit.part].text, term) if hit.part < len(said) else ""


def _scan(vault: Vault, parsed: Any, topics: list[Any], role: str | None, limit: int) -> SessionSearch:
    """Read every log and keep the messages holding every word, newest first (when the cache cannot be used)."""
    terms = tuple(dict.fromkeys(w.casefold() for w in parsed.text.split()))
    found: list[tuple[float, str, int, SessionHit]] = []
    read = 0
    ascii_terms = [t.encode() for t in terms if t.isascii()]
    for topic in topics:
        log = topic.extra.get("file")
        where = log_file(vault.root, log)
        if where is None:
            continue
        try:
            data = where.read_bytes()
        except OSError:
            continue
        read += 1
        if ascii_terms:
            folded = data.lower()
            if not all(t in folded for t in ascii_terms):
                continue  # a word the log does not hold at all (in any case): no message can match
            del folded
        sid = str(topic.extra.get("session_id") or topic.id)
        started = topic.extra.get("started") if isinstance(topic.extra.get("started"), str) else None
        for m in messages(data, str(topic.extra.get("client", "jsonl"))):
            if role is not None and m.role != role:
                continue
            text = m.text.casefold()
            if not all(t in text for t in terms):
                continue
            moment = stored_moment(m.ts or started)
            if parsed.range is not None and (moment is None or not parsed.range.contains(moment)):
                continue
            hit = SessionHit(sid, topic.id, log, m.line, m.role, m.ts, _snippet(m.text, terms[0] if terms else None))
            found.append((-(moment.timestamp() if moment else 0.0), sid, m.line, hit))
    found.sort(key=lambda f: f[:3])
    return SessionSearch(terms, parsed.range, tuple(f[3] for f in found[:limit]), len(found), read)

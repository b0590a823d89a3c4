"""`am search --session`: find what was said in the stored session logs, by words, role, session and time.

Session text is searched where it is kept, the logs under ``sessions/`` (the
masked copies), never through the record cache: a log is not a record, and
packs never carry raw session text. Every word must occur in a message
(case-folded, so Chinese and Japanese match as written); time phrases
("yesterday", "上周", "3 days ago", ISO dates) narrow the range by the
message's own time and are not searched for. Each hit names its session, its
line in the log, the role and the time. Order: newest message first, then by
line, so the same vault and question give the same answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from am.clock import now as _now
from am.errors import UsageError
from am.records.sessionlog import ROLES, messages

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

    def to_json(self) -> dict[str, Any]:
        return {"session": self.session, "topic": self.topic, "path": self.path, "line": self.line,
                "role": self.role, "ts": self.ts, "snippet": self.snippet}


@dataclass(frozen=True)
class SessionSearch:
    """The answer: the words searched, the time range read from the query, the hits, and how many there were."""

    terms: tuple[str, ...]
    range: TimeRange | None
    hits: tuple[SessionHit, ...]
    total: int
    sessions_read: int


def _moment(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.astimezone()


def _snippet(text: str, term: str | None) -> str:
    flat = " ".join(text.split())
    if term is None or len(flat) <= _SNIPPET:
        return flat[:_SNIPPET]
    at = max(flat.casefold().find(term), 0)
    start = max(0, at - _SNIPPET // 3)
    piece = flat[start:start + _SNIPPET]
    return ("…" if start else "") + piece + ("…" if start + _SNIPPET < len(flat) else "")


def search_sessions(vault: Vault, query: str, *, role: str | None = None, session: str | None = None,
                    limit: int = 20) -> SessionSearch:
    """Search the stored session logs; ``session`` narrows to one (its id or topic id)."""
    from am.cache.timephrases import parse_query

    if role is not None and role not in ROLES:
        raise UsageError(f"unknown role {role!r}", hint=f"use one of: {', '.join(ROLES)}")
    parsed = parse_query(query, now=_now())
    terms = tuple(dict.fromkeys(w.casefold() for w in parsed.text.split()))
    if not terms and parsed.range is None and role is None:
        raise UsageError("nothing to search for", hint="give words, a time phrase or --role")
    topics = vault.list_topics(kind="session")
    if session is not None:
        from am.records.sessionlog import session_topic_id

        wanted = {session, session_topic_id(session)}
        topics = [t for t in topics if t.id in wanted or t.extra.get("session_id") == session]
        if not topics:
            raise UsageError(f"no ingested session {session!r}", hint="list them with: am topic list --kind session")
    found: list[tuple[float, str, int, SessionHit]] = []
    read = 0
    ascii_terms = [t.encode() for t in terms if t.isascii()]
    for topic in topics:
        log = topic.extra.get("file")
        if not isinstance(log, str):
            continue
        try:
            data = (vault.root / log).read_bytes()
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
            moment = _moment(m.ts or started)
            if parsed.range is not None and (moment is None or not parsed.range.contains(moment)):
                continue
            hit = SessionHit(sid, topic.id, log, m.line, m.role, m.ts, _snippet(m.text, terms[0] if terms else None))
            found.append((-(moment.timestamp() if moment else 0.0), sid, m.line, hit))
    found.sort(key=lambda f: f[:3])
    return SessionSearch(terms, parsed.range, tuple(f[3] for f in found[:limit]), len(found), read)

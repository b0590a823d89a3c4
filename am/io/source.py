"""What a reader makes of a source: records to write, entries left aside, and counts; pure, no I/O.

Every reader (am/io/read_*.py) fills a ``Builder``: topics by source name, facts
and relations with deterministic ids (the same source gives the same ids, which
is what makes an import resumable and a re-import a no-op), and one ``Aside``
for every entry or field it could not take, with the reason. ``Builder.finish``
completes half-stated supersessions and validates every record; a record that
breaks the format is left aside too, never written.

Decisions: docs/decisions/portability.md.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any

from am.errors import InvalidRecordError
from am.records.ids import MAX_ID_LENGTH, is_valid_id, slugify
from am.records.model import (
    STATUSES,
    TOPIC_KINDS,
    Fact,
    Record,
    Relation,
    Topic,
    replace,
)

__all__ = [
    "SYSTEMS",
    "Aside",
    "Builder",
    "FileItem",
    "Item",
    "SourceRead",
    "confidence_of",
    "extra_key",
    "guess_kind",
    "keep_time",
    "map_relation",
    "to_timestamp",
]

SYSTEMS = ("openchronicle", "openclaw", "lossless", "supermemory", "basic-memory", "mcp-memory", "markdown", "jsonl")

# am's own frontmatter keys: a source field of that name is kept as source_<name>.
_AM_KEYS = frozenset({
    "type", "id", "kind", "title", "aliases", "tags", "status", "created", "topics", "confidence",
    "provenance", "repo", "version", "commit", "until_commit", "axis", "valid_from", "valid_until",
    "supersedes", "superseded_by", "reason", "paths", "pinned", "rel", "from", "to", "body",
})
# Keys the importers write themselves.
_OWN_KEYS = frozenset({"source_id", "source_index", "source_rel", "source_supersedes", "source_superseded_by"})

# A source's entity type -> am's topic kind (lowercase, separators folded to '-').
_KINDS = {
    "person": "person", "people": "person", "user": "person", "human": "person", "individual": "person",
    "contact": "person", "author": "person", "developer": "person", "engineer": "person",
    "org": "org", "organization": "org", "organisation": "org", "company": "org", "team": "org",
    "institution": "org", "business": "org", "group": "org",
    "project": "project", "product": "project", "repository": "project", "repo": "project",
    "codebase": "project", "app": "project", "application": "project",
    "tool": "tool", "software": "tool", "service": "tool", "library": "tool", "framework": "tool",
    "package": "tool", "cli": "tool", "saas": "tool", "api": "tool", "database": "tool", "technology": "tool",
    "decision": "decision", "adr": "decision",
    "session": "session", "conversation": "session", "chat": "session",
    "event": "event", "meeting": "event", "incident": "event", "milestone": "event",
    "concept": "concept", "topic": "concept", "note": "concept", "idea": "concept",
}

# A source's relation type -> one of the seven, where the meaning fits (else references).
_RELS = {
    "depends-on": "depends-on", "depends-upon": "depends-on", "requires": "depends-on", "needs": "depends-on",
    "relies-on": "depends-on", "uses": "depends-on", "imports": "depends-on", "built-on": "depends-on",
    "part-of": "part-of", "is-part-of": "part-of", "component-of": "part-of", "module-of": "part-of",
    "subproject-of": "part-of", "child-of": "part-of",
    "belongs-to": "belongs-to", "owned-by": "belongs-to", "works-at": "belongs-to", "works-for": "belongs-to",
    "employed-by": "belongs-to", "member-of": "belongs-to",
    "authored-by": "authored-by", "written-by": "authored-by", "created-by": "authored-by",
    "made-by": "authored-by", "maintained-by": "authored-by",
    "references": "references", "refers-to": "references", "mentions": "references", "cites": "references",
    "links-to": "references", "relates-to": "references", "related-to": "references", "see-also": "references",
    "conflicts-with": "conflicts-with", "contradicts": "conflicts-with", "conflicts": "conflicts-with",
    "contradicted-by": "conflicts-with", "incompatible-with": "conflicts-with",
    "supersedes": "supersedes", "replaces": "supersedes", "obsoletes": "supersedes",
}


def _fold(text: str) -> str:
    return re.sub(r"[\s_\-]+", "-", text.strip().lower()).strip("-")


def guess_kind(source_type: str | None) -> str:
    """Return am's topic kind for a source's entity type (``concept`` when nothing fits)."""
    if not source_type:
        return "concept"
    folded = _fold(source_type)
    return _KINDS.get(folded) or _KINDS.get(folded.rstrip("s")) or "concept"


def map_relation(source_rel: str) -> str:
    """Return the one of the seven relation types a source's relation type means, else ``references``."""
    return _RELS.get(_fold(source_rel), "references")


def extra_key(name: str) -> str:
    """Return the frontmatter key a source field is kept under (am's own names get ``source_``)."""
    key = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_-") or "field"
    if not key[0].isalpha() and key[0] != "_":
        key = "f_" + key
    key = key[:64]
    return f"source_{key}" if key in _AM_KEYS or key in _OWN_KEYS else key


_TS_TEXT = re.compile(r"^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?\Z")


def to_timestamp(value: Any) -> str | None:
    """Return a source time as am writes it (ISO 8601), or None if it is not a time.

    Epoch numbers (seconds or milliseconds) become UTC date-times; ISO text is
    kept as written when am's format accepts it, else normalised.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = value / 1000 if abs(value) > 1e11 else value
        try:
            moment = datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
        return moment.isoformat(timespec="seconds").replace("+00:00", "Z")
    if not isinstance(value, str):
        return None
    text = value.strip()
    if _TS_TEXT.match(text):
        return text
    try:
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        return None
    return moment.isoformat(timespec="seconds")


def keep_time(value: Any, key: str, extra: dict[str, Any]) -> str | None:
    """Return a source time as am writes it; a value that is not a time is kept in ``extra`` as ``source_<key>``."""
    when = to_timestamp(value)
    if when is None and value is not None:
        extra[f"source_{key}"] = plain_value(value)
    return when


def confidence_of(weight: Any) -> str | None:
    """Return high/medium/low for a 0..1 weight or confidence, None when it is not one."""
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 <= weight <= 1:
        return None
    return "high" if weight >= 0.8 else "medium" if weight >= 0.5 else "low"


def _digest(*parts: str) -> str:
    return hashlib.sha1("\x1f".join(parts).encode("utf-8")).hexdigest()[:12]


def plain_value(value: Any) -> Any:
    """Return a source value as frontmatter can hold it (JSON types; other things as text)."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(k): plain_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_value(v) for v in value]
    return str(value)


@dataclass(frozen=True)
class Item:
    """One record an import would write, and where in the source it came from."""

    record: Record
    origin: str
    path: PurePosixPath | None = None  # where to write it (am's own export); else am's path for it
    # False for a topic the source only names (a link or relation target no entry of it defines): on import it
    # resolves to the vault's record of that name, where there is one (am/io/names.py).
    defined: bool = True


@dataclass(frozen=True)
class Aside:
    """An entry or field of the source that was not written, and why."""

    origin: str
    reason: str


@dataclass(frozen=True)
class FileItem:
    """A file of a vault that is not a record (a session log, the settings), as am's own export carries it."""

    kind: str
    path: PurePosixPath
    data: bytes
    origin: str


@dataclass
class SourceRead:
    """Everything a reader made of one source."""

    system: str
    items: list[Item]
    aside: list[Aside]
    read: Counter[str]
    files: list[FileItem] = field(default_factory=list)  # am's own export only (am/io/vaultfiles.py)

    def counts(self) -> dict[str, int]:
        """Return how many records of each type the source gave."""
        made: Counter[str] = Counter(item.record.type for item in self.items)
        return {t: made.get(t, 0) for t in ("topic", "fact", "relation")}


@dataclass
class Builder:
    """Collects the records one source makes, with stable ids and every field kept."""

    system: str
    default_time: str
    read: Counter[str] = field(default_factory=Counter)
    aside: list[Aside] = field(default_factory=list)
    _topics: dict[str, Item] = field(default_factory=dict)
    _names: dict[tuple[str, str], str] = field(default_factory=dict)
    _facts: dict[str, Item] = field(default_factory=dict)
    _relations: dict[str, Item] = field(default_factory=dict)
    _source_ids: dict[str, str] = field(default_factory=dict)

    @property
    def provenance(self) -> str:
        return f"import:{self.system}"

    def leave(self, origin: str, reason: str) -> None:
        """Record an entry that is not imported, and why."""
        self.aside.append(Aside(origin, reason))

    # ------------------------------------------------------------ topics

    def topic_id_for(self, name: str, *, namespace: str = "") -> str | None:
        """Return the id of a topic already made for this source name, if any."""
        return self._names.get((namespace, name))

    def topic(self, name: str, *, kind: str = "concept", origin: str, namespace: str = "", title: str | None = None,
              body: str = "", tags: Sequence[str] = (), aliases: Sequence[str] = (), created: str | None = None,
              status: str = "active", extra: Mapping[str, Any] | None = None, id: str | None = None,
              defined: bool = True) -> str:
        """Return the topic id for a source name, making the topic the first time it is named.

        ``defined`` False: the source only names it (a forward reference), it does not define it.
        """
        known = self._names.get((namespace, name))
        if known is not None:
            return known
        kind = kind if kind in TOPIC_KINDS else "concept"
        base = id or f"{kind}-{slugify(name)}"
        if not is_valid_id(base):
            base = f"{kind}-t{_digest(name)[:8]}"
        tid, n = base, 1
        while tid in self._topics:  # two source names with one slug: the later one gets a number
            n += 1
            tid = f"{base[:MAX_ID_LENGTH - 4]}-{n}"
        shown = (title or name).strip() or tid
        if len(shown) > 300:
            extra = {**(extra or {}), "source_title": shown}
            shown = shown[:299] + "…"
        topic = Topic(id=tid, kind=kind, title=shown, body=_body(body), tags=_tags(tags),
                      aliases=tuple(dict.fromkeys(a for a in aliases if a and a != shown)),
                      status=status if status in STATUSES else "active",
                      created=created or self.default_time, extra=dict(extra or {}))
        self._topics[tid] = Item(topic, origin, defined=defined)
        self._names[(namespace, name)] = tid
        return tid

    def topic_created(self, tid: str) -> str | None:
        """Return when a topic made here was created."""
        return self._topics[tid].record.created

    def add_extra(self, tid: str, extra: Mapping[str, Any]) -> None:
        """Add fields to a topic made here; a key it holds with another value is kept as ``<key>_2`` (``_3`` ...)."""
        item = self._topics[tid]
        meta = dict(item.record.extra)
        for key, value in extra.items():
            name, n = key, 1
            while name in meta and meta[name] != value:
                n += 1
                name = f"{key}_{n}"
            meta[name] = value
        self._topics[tid] = Item(replace(item.record, extra=meta), item.origin, defined=item.defined)

    def set_body(self, tid: str, text: str) -> None:
        """Set the body of a topic made here."""
        item = self._topics[tid]
        self._topics[tid] = Item(replace(item.record, body=_body(text)), item.origin, defined=item.defined)

    # ------------------------------------------------------------ facts

    def fact_id(self, *key: str) -> str:
        """Return the stable id of a fact from the parts that identify it in the source."""
        return f"f-{self.system}-{_digest(self.system, *key)}"

    def fact(self, text: str, *, key: Sequence[str], topics: Sequence[str], origin: str, created: str | None = None,
             status: str = "active", confidence: str = "medium", tags: Sequence[str] = (), pinned: bool = False,
             reason: str | None = None, valid_until: str | None = None, valid_from: str | None = None,
             source_id: str | None = None, extra: Mapping[str, Any] | None = None) -> str | None:
        """Make a fact; return its id, or None (left aside) when it has no text."""
        if not text.strip():
            self.leave(origin, "empty text")
            return None
        fid = self.fact_id(*key)
        if fid in self._facts:
            self.leave(origin, f"the same entry again (already read as {self._facts[fid].origin})")
            return None
        meta = dict(extra or {})
        if source_id is not None:
            meta = {"source_id": source_id, **meta}
            self._source_ids[source_id] = fid
        fact = Fact(id=fid, topics=tuple(dict.fromkeys(topics)), body=_body(text),
                    status=status if status in STATUSES else "active", confidence=confidence,
                    provenance=self.provenance, created=created or self.default_time, tags=_tags(tags),
                    pinned=pinned, reason=_one_line(reason), valid_from=valid_from, valid_until=valid_until,
                    extra=meta)
        self._facts[fid] = Item(fact, origin)
        return fid

    def fact_by_source_id(self, source_id: str) -> str | None:
        """Return the id of the fact made from a source entry id."""
        return self._source_ids.get(source_id)

    def supersede(self, old: str, new: str, *, reason: str | None = None) -> None:
        """Record that fact ``new`` supersedes fact ``old`` (both made by this builder)."""
        old_item, new_item = self._facts[old], self._facts[new]
        old_fact, new_fact = old_item.record, new_item.record
        assert isinstance(old_fact, Fact) and isinstance(new_fact, Fact)
        status = "superseded" if old_fact.status == "active" else old_fact.status
        self._facts[old] = Item(replace(old_fact, superseded_by=new, status=status,
                                        reason=old_fact.reason or _one_line(reason)), old_item.origin)
        self._facts[new] = Item(replace(new_fact, supersedes=tuple(dict.fromkeys((*new_fact.supersedes, old))),
                                        reason=new_fact.reason or _one_line(reason)), new_item.origin)

    def has_fact(self, fid: str) -> bool:
        return fid in self._facts

    # ------------------------------------------------------------ relations

    def relation(self, from_id: str, source_rel: str, to_id: str, *, origin: str, created: str | None = None,
                 body: str = "", extra: Mapping[str, Any] | None = None) -> str | None:
        """Make a relation; a type outside the seven becomes ``references`` with the original kept."""
        rel = map_relation(source_rel)
        meta = dict(extra or {})
        rid = f"{from_id}--{rel}--{to_id}"
        if source_rel != rel:
            meta = {"source_rel": source_rel, **meta}
            if rel == "references" and _fold(source_rel) != "references":
                rid = f"{rid}--{slugify(source_rel)}"
        if len(rid) > MAX_ID_LENGTH or not is_valid_id(rid):
            rid = f"rel-{self.system}-{_digest(from_id, source_rel, to_id)}"
        if rid in self._relations:
            self.leave(origin, f"the same relation again (already read as {self._relations[rid].origin})")
            return None
        text = body.strip() or f"[[{from_id}]] {rel} [[{to_id}]]" + (f" ({source_rel})" if source_rel != rel else "")
        relation = Relation(id=rid, rel=rel, from_=from_id, to=to_id, body=_body(text),
                            created=created or self.default_time, extra=meta)
        self._relations[rid] = Item(relation, origin)
        return rid

    # ------------------------------------------------------------ done

    def finish(self) -> SourceRead:
        """Complete half-stated supersessions, validate, and return what was read."""
        from am.records.schemas import check_record

        self._complete_supersessions()
        items: list[Item] = []
        known = set(self._topics) | set(self._facts)
        for item in [*self._topics.values(), *self._facts.values(), *self._relations.values()]:
            record = item.record
            if isinstance(record, Relation) and (record.from_ not in known or record.to not in known):
                self.leave(item.origin, f"relation {record.id}: an end is not in the source")
                continue
            try:
                check_record(record)
            except InvalidRecordError as err:
                self.leave(item.origin, f"{record.type} {record.id}: field '{err.field}' {err.message}")
                continue
            items.append(item)
        return SourceRead(self.system, items, self.aside, self.read)

    def _complete_supersessions(self) -> None:
        """Make every supersession stated on one side hold on both (am check requires it)."""
        for fid in list(self._facts):
            fact = self._facts[fid].record
            assert isinstance(fact, Fact)
            for old in fact.supersedes:
                other = self._facts.get(old)
                if other is not None and isinstance(other.record, Fact) and other.record.superseded_by != fid:
                    self.supersede(old, fid)
            fact = self._facts[fid].record
            assert isinstance(fact, Fact)
            if fact.superseded_by and fact.superseded_by in self._facts:
                newer = self._facts[fact.superseded_by].record
                if isinstance(newer, Fact) and fid not in newer.supersedes:
                    self.supersede(fid, fact.superseded_by)
            elif fact.superseded_by:  # names a fact the source does not hold: keep the name, drop the link
                extra = {**fact.extra, "source_superseded_by": fact.superseded_by}
                status = "active" if fact.status == "superseded" else fact.status
                self._facts[fid] = Item(replace(fact, superseded_by=None, status=status, extra=extra),
                                        self._facts[fid].origin)
        for fid, item in list(self._facts.items()):
            fact = item.record
            assert isinstance(fact, Fact)
            missing = [s for s in fact.supersedes if s not in self._facts]
            if missing:
                extra = {**fact.extra, "source_supersedes": missing}
                kept = tuple(s for s in fact.supersedes if s in self._facts)
                self._facts[fid] = Item(replace(fact, supersedes=kept, extra=extra), item.origin)


def _body(text: str) -> str:
    text = text.strip("\n")
    return text + "\n" if text.strip() else ""


def _tags(tags: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(t.strip() for t in tags if isinstance(t, str) and t.strip()))


def _one_line(text: str | None) -> str | None:
    if not text:
        return None
    flat = " ".join(text.split())
    return flat or None

"""SuperMemory's JSON: documents with their memory entries (versions, static pins, forgetting, relations).

Source: supermemoryai/supermemory, packages/memory-graph/src/api-types.ts
(``DocumentWithMemories``, ``MemoryEntry``), apps/docs/recall/memory-operations.mdx
and concepts/graph-memory.mdx. SuperMemory has no export file of its own; this
reads what its API returns and people save: ``{"documents": [...]}`` (each with
``memories`` or ``memoryEntries``), ``{"memories": [...]}``, or a list of either.

Decisions: docs/decisions/portability.md.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from am.io.files import load_json, source_time
from am.io.source import (
    Builder,
    SourceRead,
    confidence_of,
    extra_key,
    guess_kind,
    keep_time,
    plain_value,
)
from am.io.read_supermemory_skill import is_skill_export, read_skill_export

__all__ = ["read_supermemory"]

SYSTEM = "supermemory"
_MEMORY_KEYS = {
    "id", "memory", "content", "createdAt", "isStatic", "isForgotten", "forgetReason", "forgetAfter",
    "spaceContainerTag", "containerTag", "documentId", "embedding",
}
_DOCUMENT_KEYS = {"id", "title", "summary", "createdAt", "memories", "memoryEntries"}
_SUPERSEDING = ("updates",)


def _memories_of(data: Any) -> list[tuple[str, dict[str, Any] | None, Any]]:
    """Return (origin, document or None, memory) for every memory in the file."""
    out: list[tuple[str, dict[str, Any] | None, Any]] = []
    documents: list[Any] = []
    loose: list[Any] = []
    if isinstance(data, dict):
        documents = data.get("documents") or []
        loose = data.get("memories") or []
    elif isinstance(data, list):
        for value in data:
            is_doc = isinstance(value, dict) and ("memories" in value or "memoryEntries" in value)
            (documents if is_doc else loose).append(value)
    for n, doc in enumerate(documents):
        if not isinstance(doc, dict):
            out.append((f"documents[{n}]", None, doc))
            continue
        entries = doc.get("memories", doc.get("memoryEntries")) or []
        for m, memory in enumerate(entries if isinstance(entries, list) else []):
            out.append((f"documents[{n}].memories[{m}]", doc, memory))
    out += [(f"memories[{n}]", None, memory) for n, memory in enumerate(loose)]
    return out


def read_supermemory(path: Path) -> SourceRead:
    """Read a SuperMemory JSON file into topics (containers, documents), facts (memories) and relations."""
    data = load_json(path)
    if is_skill_export(data):
        return read_skill_export(path, data)
    b = Builder(SYSTEM, source_time(path))
    dropped: Counter[str] = Counter()
    links: list[tuple[str, str, str, str]] = []  # (origin, this fact, source relation, other source id)
    versions: list[tuple[str, str, str | None, str | None]] = []  # (origin, fact, next version, updated memory)
    for origin, doc, memory in _memories_of(data):
        origin = f"{path.name}:{origin}"
        b.read["memories"] += 1
        if not isinstance(memory, dict):
            b.leave(origin, "not a JSON object")
            continue
        text = memory.get("memory") if isinstance(memory.get("memory"), str) else memory.get("content")
        mid = memory.get("id")
        if not isinstance(text, str) or not text.strip():
            b.leave(origin, "memory without text (memory or content)")
            continue
        if not isinstance(mid, str) or not mid:
            b.leave(origin, "memory without an id")
            continue
        topics = _topics(b, origin, doc, memory)
        extra: dict[str, Any] = {}
        for key, value in memory.items():
            if key == "embedding":
                dropped["embedding"] += 1
            elif key not in _MEMORY_KEYS:
                extra[extra_key(key)] = plain_value(value)
        if isinstance(memory.get("memory"), str) and isinstance(memory.get("content"), str) \
                and memory["content"] != memory["memory"]:
            extra["source_content"] = memory["content"]
        for flag in ("isStatic", "isForgotten"):  # "true" is not true: kept whole, not read
            if memory.get(flag) is not None and not isinstance(memory.get(flag), bool):
                extra[f"source_{flag}"] = plain_value(memory.get(flag))
        created = keep_time(memory.get("createdAt"), "createdAt", extra)
        valid_until = keep_time(memory.get("forgetAfter"), "forgetAfter", extra)
        forgotten = memory.get("isForgotten") is True
        status = "expired" if forgotten else "active"
        score = memory.get("sourceRelevanceScore")
        fid = b.fact(text, key=(mid,), topics=topics, origin=origin, source_id=mid, status=status,
                     created=created, pinned=memory.get("isStatic") is True,
                     confidence=confidence_of(score) or "medium",
                     reason=memory.get("forgetReason") if isinstance(memory.get("forgetReason"), str) else None,
                     valid_until=valid_until, extra=extra)
        if fid is None:
            continue
        nxt = memory.get("nextVersionId")
        updated = memory.get("updatesMemoryId") or (memory.get("parentMemoryId") if memory.get("relation") == "updates"
                                                     else None)
        versions.append((origin, fid, nxt if isinstance(nxt, str) else None,
                         updated if isinstance(updated, str) else None))
        rel = memory.get("relation")
        parent = memory.get("parentMemoryId")
        if isinstance(rel, str) and rel not in _SUPERSEDING and isinstance(parent, str):
            links.append((origin, fid, rel, parent))
        relations = memory.get("memoryRelations")  # kept as it is in any case; read when it is {id: kind}
        for other, kind in (relations.items() if isinstance(relations, dict) else ()):
            if isinstance(kind, str):
                if kind in _SUPERSEDING:
                    versions.append((origin, fid, None, other))
                else:
                    links.append((origin, fid, kind, other))
    for origin, fid, nxt, updated in versions:
        if updated is not None:
            old = b.fact_by_source_id(updated)
            if old is None:
                b.leave(origin, f"updates memory {updated}, which is not in the file")
            elif old != fid:
                b.supersede(old, fid)
        if nxt is not None:
            newer = b.fact_by_source_id(nxt)
            if newer is None:
                b.leave(origin, f"next version {nxt} is not in the file")
            elif newer != fid:
                b.supersede(fid, newer)
    for origin, fid, rel, other in links:
        target = b.fact_by_source_id(other)
        if target is None:
            b.leave(origin, f"{rel} memory {other}, which is not in the file")
        elif target != fid:
            b.relation(fid, rel, target, origin=origin)
    for name, count in sorted(dropped.items()):
        b.leave(f"{path.name}: field {name} of {count} memories",
                "embedding vectors are derived by SuperMemory's model; am keeps text, not vectors")
    return b.finish()


def _topics(b: Builder, origin: str, doc: dict[str, Any] | None, memory: dict[str, Any]) -> list[str]:
    out = []
    tag = memory.get("spaceContainerTag") or memory.get("containerTag") or (doc or {}).get("containerTag")
    if isinstance(tag, str) and tag:
        out.append(b.topic(tag, kind=guess_kind(tag.split("_")[0].split("-")[0]), origin=origin, namespace="container",
                           extra={"container_tag": tag}))
    doc_id = (doc or {}).get("id") or memory.get("documentId")
    if isinstance(doc_id, str) and doc_id:
        if b.topic_id_for(doc_id, namespace="document") is None:
            b.read["documents"] += 1
        document = doc or {}
        extra = {extra_key(k): plain_value(v) for k, v in document.items() if k not in _DOCUMENT_KEYS}
        title = document.get("title")
        title = title if isinstance(title, str) and title else doc_id
        summary = document.get("summary")
        summary = summary if isinstance(summary, str) else ""
        created = keep_time(document.get("createdAt"), "createdAt", extra)
        out.append(b.topic(doc_id, origin=origin, namespace="document", title=title, body=summary,
                           created=created, extra={"source_id": doc_id, **extra}))
    if not out:
        out.append(b.topic("SuperMemory", origin=origin, namespace="default"))
    return out

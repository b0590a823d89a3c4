"""The SuperMemory skill's V1.3 export: memories with a digest, a weight, a pin and keywords.

No public specification of this file was found (docs/import.md says so); the
reader follows the fields the skill's export is known by: a JSON object
``{"version": "1.3", "memories": [...]}`` (or a JSON list of memories), each
memory with ``id``, ``content`` (``text`` or ``memory``), ``digest`` (its
one-line summary), ``weight`` (0..1), ``pinned``, ``keywords``, ``created_at``
(``createdAt``, ``timestamp``), ``status`` and supersede pointers
(``supersedes``, ``superseded_by`` / ``supersededBy``). ``weight`` becomes
``confidence`` and is kept as it is; ``pinned`` is ``pinned``; ``keywords`` are
tags. Every other field is kept under its own name.

Decisions: docs/decisions/portability.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from am.io.files import source_time
from am.io.source import Builder, SourceRead, confidence_of, extra_key, keep_time, plain_value
from am.records.model import STATUSES

__all__ = ["is_skill_export", "read_skill_export"]

SYSTEM = "supermemory"
_SKILL_FIELDS = frozenset({"digest", "weight", "keywords"})
_KEYS = {"id", "content", "text", "memory", "digest", "keywords", "pinned", "status", "supersedes", "superseded_by",
         "supersededBy", "created_at", "createdAt", "topic"}


def _memories(data: Any) -> list[Any] | None:
    if isinstance(data, dict):
        memories = data.get("memories")
        return memories if isinstance(memories, list) else None
    return data if isinstance(data, list) else None


def is_skill_export(data: Any) -> bool:
    """Return whether a loaded SuperMemory file is the skill's V1.3 export (not the API's shape)."""
    memories = _memories(data)
    if memories is None:
        return False
    if isinstance(data, dict) and str(data.get("version", "")).startswith("1.") and "documents" not in data:
        return True
    return any(isinstance(m, dict) and _SKILL_FIELDS & m.keys() for m in memories)


def _ids(value: Any) -> list[str]:
    listed = value if isinstance(value, list) else [value]
    return [str(v) for v in listed if isinstance(v, (str, int)) and not isinstance(v, bool) and str(v)]


def read_skill_export(path: Path, data: Any) -> SourceRead:
    """Read a loaded V1.3 export into facts about one topic (or the topics the memories name)."""
    b = Builder(SYSTEM, source_time(path))
    memories = _memories(data) or []
    if isinstance(data, dict):
        b.read["exports"] += 1
    links: list[tuple[str, str, list[str], list[str]]] = []
    for n, memory in enumerate(memories):
        origin = f"{path.name}:memories[{n}]"
        b.read["memories"] += 1
        if not isinstance(memory, dict):
            b.leave(origin, "not a JSON object")
            continue
        mid = memory.get("id")
        if not isinstance(mid, (str, int)) or isinstance(mid, bool) or str(mid) == "":
            b.leave(origin, "memory without an id")
            continue
        content: str = next((memory[k] for k in ("content", "text", "memory") if isinstance(memory.get(k), str)), "")
        digest: str = memory["digest"] if isinstance(memory.get("digest"), str) else ""
        text = content.strip() or digest.strip()
        if not text:  # before any topic is made: nothing readable writes nothing
            b.leave(origin, "memory without text (content or digest)")
            continue
        extra: dict[str, Any] = {extra_key(k): plain_value(v) for k, v in memory.items() if k not in _KEYS}
        if digest and content.strip():
            extra["digest"] = digest
        elif memory.get("digest") is not None and not isinstance(memory.get("digest"), str):
            extra["source_digest"] = plain_value(memory.get("digest"))
        keywords = memory.get("keywords")
        if keywords is not None and not (isinstance(keywords, list) and all(isinstance(k, str) for k in keywords)):
            extra["keywords"] = plain_value(keywords)
        pinned = memory.get("pinned")
        if pinned is not None and not isinstance(pinned, bool):
            extra["source_pinned"] = plain_value(pinned)
        status = memory.get("status")
        if isinstance(status, str) and status not in STATUSES:
            extra["source_status"] = status
        stamp = "created_at" if "created_at" in memory else "createdAt" if "createdAt" in memory else "timestamp"
        created = keep_time(memory.get(stamp), stamp, extra)
        topic = memory.get("topic")
        if topic is not None and not (isinstance(topic, str) and topic):
            extra["source_topic"] = plain_value(topic)
        tid = b.topic(topic if isinstance(topic, str) and topic else "SuperMemory", origin=origin,
                      namespace="default" if not (isinstance(topic, str) and topic) else "")
        fid = b.fact(text, key=(str(mid),), topics=[tid], origin=origin, source_id=str(mid), created=created,
                     status=status if isinstance(status, str) and status in STATUSES else "active",
                     pinned=pinned is True, confidence=confidence_of(memory.get("weight")) or "medium",
                     tags=[k for k in keywords if isinstance(k, str)] if isinstance(keywords, list) else [],
                     extra=extra)
        if fid is not None:
            links.append((origin, fid, _ids(memory.get("supersedes")),
                          _ids(memory.get("superseded_by", memory.get("supersededBy")))))
    for origin, fid, older, newer in links:
        for old in older:
            found = b.fact_by_source_id(old)
            if found is None:
                b.leave(origin, f"supersedes memory {old}, which is not in the file")
            elif found != fid:
                b.supersede(found, fid)
        for new in newer:
            found = b.fact_by_source_id(new)
            if found is None:
                b.leave(origin, f"superseded by memory {new}, which is not in the file")
            elif found != fid:
                b.supersede(fid, found)
    return b.finish()

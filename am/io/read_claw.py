"""OpenClaw-style items.json: memory items with per-item summaries in a hot and a deep layer.

No public specification of this file was found (docs/import.md says so); the
reader follows the best description available: a JSON list of items (or
``{"items": [...]}``), each with ``id``, ``summary``, optional ``content``,
``layer`` (``hot``: always in the agent's context; ``deep``: retrieved on
demand), ``tags``, ``created_at``/``updated_at`` (epoch milliseconds or ISO),
``confidence`` and ``importance`` (0..1), and supersede pointers.

It also reads the entity fact chains of the OpenClaw memory architecture
(a ``memory/`` folder of ``<kind>/<entity>/`` folders, each with a
``summary.md`` and an ``items.json`` of atomic facts: ``id``, ``fact``,
``category``, ``confidence``, ``timestamp``, ``status`` ``active|superseded``
and ``supersededBy``): the entity is the topic, its summary the topic's body,
each fact a fact, and ``supersededBy`` a supersede chain.

Decisions: docs/decisions/portability.md.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from am.errors import NotFoundError
from am.io.files import load_json, read_text, source_time, walk_files
from am.io.source import (
    Builder,
    SourceRead,
    confidence_of,
    extra_key,
    guess_kind,
    keep_time,
    plain_value,
    to_timestamp,
)
from am.records.ids import slugify
from am.records.model import STATUSES

__all__ = ["read_openclaw"]

SYSTEM = "openclaw"
_KEYS = {"id", "summary", "content", "text", "fact", "tags", "created_at", "pinned", "supersedes", "superseded_by",
         "supersededBy", "topic", "status"}


def _ids(value: Any) -> list[str]:
    if isinstance(value, str) and value:
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str) and v]
    return []


def read_openclaw(path: Path) -> SourceRead:
    """Read an items.json (or a memory folder of entity folders with items.json) into topics and facts."""
    files = [path / "items.json"] if path.is_dir() and (path / "items.json").is_file() else \
        walk_files(path, suffix="items.json") if path.is_dir() else [path]
    files = [f for f in files if f.name == "items.json" or f == path]
    if not files:
        raise NotFoundError(f"{path} holds no items.json",
                            hint="give an OpenClaw memory folder (<kind>/<entity>/items.json), or an items.json")
    b = Builder(SYSTEM, source_time(files[0] if len(files) == 1 else path))
    base = path if path.is_dir() else path.parent
    links: list[tuple[str, str, str, list[str], list[str]]] = []
    by_entity: dict[tuple[str, str], str] = {}
    for items_file in files:
        # An entity is named by its last two folders (people/alice), wherever the import starts.
        folder = items_file.parent.resolve()
        entity = f"{folder.parent.name}/{folder.name}" if (folder / "summary.md").is_file() or \
            items_file.parent != base else ""
        name = items_file.relative_to(base).as_posix() if items_file != path else items_file.name
        data = load_json(items_file)
        items = data.get("items") if isinstance(data, dict) else data
        if not isinstance(items, list):
            items = []
            b.leave(name, "no list of items (expected a JSON list or {\"items\": [...]})")
        entity_topic = _entity_topic(b, items_file.parent, entity, name) if entity else None
        for n, item in enumerate(items):
            origin = f"{name}:items[{n}]"
            b.read["items"] += 1
            fid = _item(b, item, origin, entity, entity_topic)
            if fid is not None:
                iid = str(item["id"])
                by_entity[(entity, iid)] = fid
                links.append((origin, entity, fid, _ids(item.get("supersedes")),
                              _ids(item.get("superseded_by", item.get("supersededBy")))))
    for origin, entity, fid, older, newer in links:
        for old in older:
            found = by_entity.get((entity, old)) or b.fact_by_source_id(old)
            if found is None:
                b.leave(origin, f"supersedes item {old}, which is not in the file")
            elif found != fid:
                b.supersede(found, fid)
        for new in newer:
            found = by_entity.get((entity, new)) or b.fact_by_source_id(new)
            if found is None:
                b.leave(origin, f"superseded by item {new}, which is not in the file")
            elif found != fid:
                b.supersede(fid, found)
    return b.finish()


def _entity_topic(b: Builder, folder: Path, entity: str, origin: str) -> str:
    """Return the topic of an entity folder (``people/alice``): kind from the parent folder, body its summary.md."""
    parts = entity.split("/")
    kind = guess_kind(parts[-2]) if len(parts) > 1 else "concept"
    summary_file = folder / "summary.md"
    summary = read_text(summary_file) if summary_file.is_file() else ""
    title = parts[-1]
    heading = re.match(r"#\s+(.+)", summary.lstrip())
    if heading:
        title = heading.group(1).strip()
    return b.topic(entity, kind=kind, origin=origin, namespace="entity", title=title, body=summary,
                   extra={"source_entity": entity}, id=f"{kind}-{slugify(parts[-1])}")


def _item(b: Builder, item: Any, origin: str, entity: str, entity_topic: str | None) -> str | None:
    """Make the fact of one item; return its id, or None when it is left aside."""
    if not isinstance(item, dict):
        b.leave(origin, "not a JSON object")
        return None
    iid = item.get("id")
    fact_text = item.get("fact")
    fact_text = fact_text if isinstance(fact_text, str) else ""
    summary = item.get("summary")
    summary = summary if isinstance(summary, str) else ""
    content = item.get("content", item.get("text"))
    content = content if isinstance(content, str) else ""
    if not isinstance(iid, (str, int)) or isinstance(iid, bool) or str(iid) == "":
        b.leave(origin, "item without an id")
        return None
    text = fact_text.strip() or summary.strip()
    if content.strip() and content.strip() != text:
        text = f"{text}\n\n{content.strip()}" if text else content.strip()
    if not text:  # before any topic is made: an import of nothing readable writes nothing
        b.leave(origin, "item without text (fact, summary or content)")
        return None
    topic_name = item.get("topic") if isinstance(item.get("topic"), str) and item.get("topic") else None
    tid = b.topic(topic_name, origin=origin) if topic_name else entity_topic or b.topic("OpenClaw memory", origin=origin)
    extra: dict[str, Any] = {extra_key(k): plain_value(v) for k, v in item.items() if k not in _KEYS}
    if item.get("topic") is not None and topic_name is None:
        extra["source_topic"] = plain_value(item.get("topic"))
    if fact_text.strip() and summary:
        extra["summary"] = summary
    elif summary and content.strip() and content.strip() != summary.strip():
        extra["summary"] = summary
    status = item.get("status")
    if isinstance(status, str) and status not in STATUSES:
        extra["source_status"] = status
    tags = item.get("tags")
    # A string would be read as its letters; a list with other items than text would lose them.
    if tags is not None and not (isinstance(tags, list) and all(isinstance(t, str) for t in tags)):
        extra["source_tags"] = plain_value(tags)
    layer = item.get("layer")
    pinned = item.get("pinned") is True or layer == "hot"
    if item.get("pinned") is not None and not isinstance(item.get("pinned"), bool):
        extra["source_pinned"] = plain_value(item.get("pinned"))
    created = keep_time(item.get("created_at"), "created_at", extra)
    if created is None and "created_at" not in item:
        created = to_timestamp(item.get("timestamp"))  # the fact schema's date; kept as it is under its own key
    key = (entity, str(iid)) if entity else (str(iid),)
    return b.fact(text, key=key, topics=[tid], origin=origin, source_id=str(iid),
                  created=created, pinned=pinned,
                  status=status if isinstance(status, str) and status in STATUSES else "active",
                  confidence=confidence_of(item.get("confidence")) or "medium",
                  tags=[t for t in tags if isinstance(t, str)] if isinstance(tags, list) else [], extra=extra)

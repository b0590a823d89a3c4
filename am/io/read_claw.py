"""OpenClaw-style items.json: memory items with per-item summaries in a hot and a deep layer.

No public specification of this file was found (docs/import.md says so); the
reader follows the best description available: a JSON list of items (or
``{"items": [...]}``), each with ``id``, ``summary``, optional ``content``,
``layer`` (``hot``: always in the agent's context; ``deep``: retrieved on
demand), ``tags``, ``created_at``/``updated_at`` (epoch milliseconds or ISO),
``confidence`` and ``importance`` (0..1), and supersede pointers.

Decisions: docs/decisions/portability.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from am.io.files import load_json, source_time
from am.io.source import (
    Builder,
    SourceRead,
    confidence_of,
    extra_key,
    keep_time,
    plain_value,
)
from am.records.model import STATUSES

__all__ = ["read_openclaw"]

SYSTEM = "openclaw"
_KEYS = {"id", "summary", "content", "text", "tags", "created_at", "pinned", "supersedes", "superseded_by",
         "topic", "status"}


def _ids(value: Any) -> list[str]:
    if isinstance(value, str) and value:
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str) and v]
    return []


def read_openclaw(path: Path) -> SourceRead:
    """Read an items.json into facts (one per item) about the topics the items name."""
    items_file = path / "items.json" if path.is_dir() else path
    b = Builder(SYSTEM, source_time(items_file))
    data = load_json(items_file)
    items = data.get("items") if isinstance(data, dict) else data
    if not isinstance(items, list):
        items = []
        b.leave(items_file.name, "no list of items (expected a JSON list or {\"items\": [...]})")
    links: list[tuple[str, str, list[str], list[str]]] = []
    for n, item in enumerate(items):
        origin = f"{items_file.name}:items[{n}]"
        b.read["items"] += 1
        if not isinstance(item, dict):
            b.leave(origin, "not a JSON object")
            continue
        iid = item.get("id")
        summary = item.get("summary")
        summary = summary if isinstance(summary, str) else ""
        content = item.get("content", item.get("text"))
        content = content if isinstance(content, str) else ""
        if not isinstance(iid, (str, int)) or isinstance(iid, bool) or str(iid) == "":
            b.leave(origin, "item without an id")
            continue
        text = summary.strip()
        if content.strip() and content.strip() != text:
            text = f"{text}\n\n{content.strip()}" if text else content.strip()
        topic_name = item.get("topic") if isinstance(item.get("topic"), str) and item.get("topic") else None
        tid = b.topic(topic_name or "OpenClaw memory", origin=origin)
        extra: dict[str, Any] = {extra_key(k): plain_value(v) for k, v in item.items() if k not in _KEYS}
        if item.get("topic") is not None and topic_name is None:
            extra["source_topic"] = plain_value(item.get("topic"))
        if summary and content.strip() and content.strip() != summary.strip():
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
        fid = b.fact(text, key=(str(iid),), topics=[tid], origin=origin, source_id=str(iid),
                     created=created, pinned=pinned,
                     status=status if isinstance(status, str) and status in STATUSES else "active",
                     confidence=confidence_of(item.get("confidence")) or "medium",
                     tags=[t for t in tags if isinstance(t, str)] if isinstance(tags, list) else [], extra=extra)
        if fid is not None:
            links.append((origin, fid, _ids(item.get("supersedes")), _ids(item.get("superseded_by"))))
    for origin, fid, older, newer in links:
        for old in older:
            found = b.fact_by_source_id(old)
            if found is None:
                b.leave(origin, f"supersedes item {old}, which is not in the file")
            elif found != fid:
                b.supersede(found, fid)
        for new in newer:
            found = b.fact_by_source_id(new)
            if found is None:
                b.leave(origin, f"superseded by item {new}, which is not in the file")
            elif found != fid:
                b.supersede(fid, found)
    return b.finish()

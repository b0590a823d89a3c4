"""am's own export (`am export`, JSON Lines or JSON): records back, as they were, at their paths.

Decisions: docs/decisions/portability.md.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Any

from am.errors import InvalidRecordError
from am.io.files import UnreadableJSON, json_lines, parse_json, read_text
from am.io.source import Aside, FileItem, Item, SourceRead
from am.io.vaultfiles import FILE_KINDS, file_item
from am.records.codec import record_from_meta
from am.records.schemas import check_record

__all__ = ["read_jsonl"]


def _entries(path: Path, text: str) -> list[tuple[str, Any, str | None]]:
    head = text.lstrip()[:200]
    if head.startswith("{") and '"format"' in head and '"am-export"' in head:
        try:
            doc = parse_json(text)
        except UnreadableJSON as err:
            return [(path.name, None, str(err))]
        except ValueError as err:
            return [(path.name, None, f"not JSON ({err})")]
        records = doc.get("records") if isinstance(doc, dict) else None
        if not isinstance(records, list):
            return [(path.name, None, "an am export holds a list of records")]
        files = doc.get("files") if isinstance(doc.get("files"), list) else []
        return [*((f"{path.name}:records[{n}]", r, None) for n, r in enumerate(records)),
                *((f"{path.name}:files[{n}]", f, None) for n, f in enumerate(files))]
    return [(f"{path.name}:{n}", value, error) for n, value, error in json_lines(text)]


def read_jsonl(path: Path) -> SourceRead:
    """Read am's export into the records it holds, each with its path."""
    items: list[Item] = []
    aside: list[Aside] = []
    read: Counter[str] = Counter()
    seen: dict[str, str] = {}  # id -> where it was first read
    files: list[FileItem] = []
    for origin, value, error in _entries(path, read_text(path)):
        if error is not None:
            aside.append(Aside(origin, error))
            continue
        if isinstance(value, dict) and value.get("kind") in FILE_KINDS:  # a session log, the settings
            read[f"{value['kind']} files"] += 1
            got = file_item(value, origin)
            if isinstance(got, FileItem):
                files.append(got)
            else:
                aside.append(got)
            continue
        meta = value.get("meta") if isinstance(value, dict) else None
        body = value.get("body", "") if isinstance(value, dict) else None
        eol = value.get("eol", "\n") if isinstance(value, dict) else "\n"
        if not isinstance(meta, dict) or not isinstance(body, str) or eol not in ("\n", "\r\n"):
            aside.append(Aside(origin, "not an am record (needs meta, body and path)"))
            continue
        read[f"{meta.get('type', 'unknown')} records"] += 1
        try:
            record = record_from_meta(meta, body, eol=eol, path=origin)
            check_record(record, path=origin)
        except InvalidRecordError as err:
            aside.append(Aside(origin, f"field '{err.field}': {err.message}" if err.field else err.message))
            continue
        if record.id in seen:  # two exports run together, a record moved between them: one file an id
            aside.append(Aside(origin, f"id {record.id} again (already read as {seen[record.id]})"))
            continue
        seen[record.id] = origin
        where = value.get("path")
        items.append(Item(record, origin, PurePosixPath(where) if isinstance(where, str) else None))
    return SourceRead("jsonl", items, aside, read, files)

"""Finding the record an id names, for a write that updates it and for the facade's reads by id.

``get`` raises ``NotFoundError`` with a "did you mean" for a mistyped id (``id_hint``: ids that share
its longest start, read from the cache's index); ``topic_hint`` does the same among the topics.

Decisions: docs/decisions/writes.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from am.errors import NotFoundError
from am.records.model import Record, Topic

if TYPE_CHECKING:
    from am.cache.recordfiles import RecordFiles

__all__ = ["get", "get_typed", "id_hint", "topic_hint"]


def get(files: RecordFiles, record_id: str) -> tuple[PurePosixPath, Record]:
    """Return (path, record) for an id, or raise NotFoundError."""
    path = files.locate(record_id)
    if path is None:
        raise NotFoundError(f"no record with id {record_id!r}",
                            hint=id_hint(files, record_id) + "list them with: am fact list / am topic list")
    return path, files.read_path(path)


def get_typed(files: RecordFiles, record_id: str, kind: type[Record], noun: str) -> tuple[PurePosixPath, Any]:
    """Return (path, record) for an id that must name a record of the given type."""
    path, record = get(files, record_id)
    if not isinstance(record, kind):
        raise NotFoundError(f"{record_id!r} is a {record.type}, not a {noun}")
    return path, record


def id_hint(files: RecordFiles, missing: str) -> str:
    """Return 'did you mean X? ' for a mistyped record id, or '': ids that share its longest start are compared."""
    from am.worlds.branches import did_you_mean

    cache = files.cache()
    if cache is None:
        return ""
    for end in range(len(missing) - 1, 2, -1):  # index range scans, longest shared start first
        near = [hit.id for hit in cache.ids_with_prefix(missing[:end], limit=200)]
        if near:
            guess = did_you_mean(missing, near)
            return f"did you mean {guess!r}? " if guess else ""
    return ""


def topic_hint(files: RecordFiles, missing: str) -> str:
    """Return 'did you mean X? ' for a mistyped topic id, or ''."""
    from am.worlds.branches import did_you_mean

    ids: Sequence[str] = sorted(r.id for _, r in files.record_pairs("topic") if isinstance(r, Topic))
    guess = did_you_mean(missing, ids)
    return f"did you mean {guess!r}? " if guess else ""

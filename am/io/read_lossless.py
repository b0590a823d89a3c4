"""lossless-memory JSONL: session records kept whole, one JSON object a line.

No public specification of this format was found (docs/import.md says so); the
reader follows the best description available, the ``{ts, role, text}`` lines
of DESIGN §11 with a record id and the session: ``{"id", "ts", "session",
"role", "text"}``, optional ``tags``, ``pinned`` and ``supersedes`` (an id or a
list). Every other key is kept. Records are facts waiting for review
(``pending-review``): raw session records, not yet reviewed knowledge.

lossless-memory itself (aru-labs/lossless-memory, ``ingest.py``) writes one file
a day, ``main/YYYY-MM-DD.jsonl``, of seven fixed fields: ``ts``, ``actor``,
``role``, ``type`` (``text``, ``action``, ``meta``), ``text``, ``model`` and
``session``, with no id. A record without an ``id`` gets one derived from what
it says (its session, time, actor, role, type and text, and how many times the
same record came before), so the id does not move when lossless-memory
rewrites a day file in another order.

Decisions: docs/decisions/portability.md.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

from am.io.files import json_lines, read_text, source_time, walk_files
from am.io.source import Builder, SourceRead, extra_key, keep_time, plain_value

__all__ = ["read_lossless"]

SYSTEM = "lossless"
_KEYS = {"id", "ts", "session", "text", "tags", "pinned", "supersedes"}
# What a seven-field record says, besides its session: the parts of its derived id.
_SAID = ("ts", "actor", "role", "type", "text", "model")


def _said_digest(said: tuple[str, ...], occurrence: int) -> str:
    return hashlib.sha1("\x1f".join((*said, str(occurrence))).encode("utf-8")).hexdigest()[:16]


def read_lossless(path: Path) -> SourceRead:
    """Read lossless-memory JSONL files (a file, or a folder of them) into session topics and facts."""
    b = Builder(SYSTEM, source_time(path))
    base = path if path.is_dir() else path.parent
    pending: list[tuple[str, str, list[str]]] = []
    seen: Counter[tuple[str, ...]] = Counter()
    for file in walk_files(path, suffix=".jsonl"):
        name = file.relative_to(base).as_posix()
        for number, value, error in json_lines(read_text(file)):
            origin = f"{name}:{number}"
            b.read["records"] += 1
            if error is not None:
                b.leave(origin, error)
                continue
            if not isinstance(value, dict):
                b.leave(origin, "not a JSON object")
                continue
            text, rid = value.get("text"), value.get("id")
            if not isinstance(text, str) or not text.strip():
                b.leave(origin, "record without text")
                continue
            session = value.get("session")
            session = str(session) if isinstance(session, (str, int)) and str(session) else file.stem
            derived = rid is None
            if derived:  # lossless-memory's own seven fields carry no id: one from what the record says
                said = (session, *(json.dumps(value.get(k), ensure_ascii=False) for k in _SAID))
                seen[said] += 1
                rid = _said_digest(said, seen[said])
            if not isinstance(rid, (str, int)) or isinstance(rid, bool) or str(rid) == "":
                b.leave(origin, "record without an id")
                continue
            tid = b.topic(session, kind="session", origin=origin, namespace="session",
                          title=f"Session {session}", extra={"session": session})
            extra: dict[str, Any] = {extra_key(k): plain_value(v) for k, v in value.items() if k not in _KEYS}
            created = keep_time(value.get("ts"), "ts", extra)
            # A value am cannot read as what its key means is kept whole as source_<key>, not dropped.
            tags = value.get("tags")
            if tags is not None and not (isinstance(tags, list) and all(isinstance(t, str) for t in tags)):
                extra["source_tags"] = plain_value(tags)
            pinned = value.get("pinned")
            if pinned is not None and not isinstance(pinned, bool):
                extra["source_pinned"] = plain_value(pinned)
            older = value.get("supersedes")
            listed = older if isinstance(older, list) else [older]
            older_ids = [str(o) for o in listed if isinstance(o, (str, int)) and not isinstance(o, bool)]
            if older is not None and len(older_ids) != len(listed):
                extra["source_supersedes"] = plain_value(older)
            fid = b.fact(text, key=(str(rid),), topics=[tid], origin=origin,
                         source_id=None if derived else str(rid),
                         created=created, status="pending-review", pinned=pinned is True,
                         tags=[t for t in tags if isinstance(t, str)] if isinstance(tags, list) else [], extra=extra)
            if fid is not None and older_ids:
                pending.append((origin, fid, older_ids))
    for origin, fid, older_ids in pending:
        for old in older_ids:
            found = b.fact_by_source_id(old)
            if found is None:
                b.leave(origin, f"supersedes {old}, which is not in the source")
            elif found != fid:
                b.supersede(found, fid)
    return b.finish()

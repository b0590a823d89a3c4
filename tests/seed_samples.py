"""Samples of the seeds' own formats (issue 38), written from each seed's documents.

- OpenClaw's memory architecture: a ``memory/`` folder of entity folders
  (``<kind>/<entity>/summary.md`` and ``items.json``), each fact
  ``{id, fact, category, confidence, timestamp, source, status, supersededBy,
  relatedEntities, lastAccessed, accessCount}`` (its fact schema, and the
  README's chain ``{"id": "alice-002", ..., "status": "superseded",
  "supersededBy": "alice-004"}``).
- lossless-memory (aru-labs/lossless-memory, ``ingest.py``): one file a day,
  ``main/YYYY-MM-DD.jsonl``, of seven fields ``ts, actor, role, type, text,
  model, session``, with no id.
- The SuperMemory skill's V1.3 export: ``{"version": "1.3", "memories": [...]}``,
  each memory with ``digest``, ``weight``, ``pinned`` and ``keywords``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ALICE: list[dict[str, Any]] = [
    {"id": "alice-001", "fact": "Alice is the team's designer", "category": "relationship", "confidence": 0.9,
     "abstractionLevel": "episode", "tags": ["team"], "timestamp": "2026-01-05", "source": "2026-01-05",
     "status": "active", "supersededBy": None, "relatedEntities": ["projects/alpha"],
     "lastAccessed": "2026-02-01", "accessCount": 3},
    {"id": "alice-002", "fact": "Working on Project Alpha", "category": "status", "confidence": 0.85,
     "timestamp": "2026-01-10", "source": "2026-01-10", "status": "superseded", "supersededBy": "alice-004"},
    {"id": "alice-003", "fact": "Alice 喜欢早上开会", "category": "preference", "confidence": 0.4,
     "timestamp": "2026-01-12", "source": "2026-01-12", "status": "active", "supersededBy": None},
    {"id": "alice-004", "fact": "Working on Project Beta since February", "category": "status",
     "confidence": 0.95, "timestamp": "2026-02-02", "source": "2026-02-02", "status": "active",
     "supersededBy": None},
]
ALPHA: list[dict[str, Any]] = [
    {"id": "alpha-001", "fact": "Alpha ships on Fridays", "category": "context", "confidence": 0.8,
     "timestamp": "2026-01-03", "status": "active", "supersededBy": None},
]


def openclaw(folder: Path) -> Path:
    """Write an OpenClaw memory folder with two entities; return the folder to import."""
    memory = folder / "memory"
    for entity, title, items in (("people/alice", "Alice", ALICE), ("projects/alpha", "Project Alpha", ALPHA)):
        where = memory / entity
        where.mkdir(parents=True)
        (where / "summary.md").write_text(f"# {title}\n\nOverview of {title}.\n", encoding="utf-8")
        (where / "items.json").write_text(json.dumps(items, ensure_ascii=False, indent=2), encoding="utf-8")
    return memory


LOSSLESS_DAYS: dict[str, list[dict[str, Any]]] = {
    "2026-09-01": [
        {"ts": "2026-09-01T09:02:00+00:00", "actor": "sam", "role": "user", "type": "text",
         "text": "Can we go over the September budget?", "model": None, "session": "s-budget"},
        {"ts": "2026-09-01T09:02:40+00:00", "actor": "assistant", "role": "ai", "type": "text",
         "text": "Rent is fixed at 1400; groceries 300.", "model": "claude-x", "session": "s-budget"},
        {"ts": "2026-09-01T09:03:00+00:00", "actor": "assistant", "role": "ai", "type": "action",
         "text": "Read: budget.xlsx", "model": "claude-x", "session": "s-budget"},
        {"ts": "2026-09-01T09:04:00+00:00", "actor": "sam", "role": "user", "type": "text",
         "text": "ok", "model": None, "session": "s-budget"},
        {"ts": "2026-09-01T09:04:00+00:00", "actor": "sam", "role": "user", "type": "text",
         "text": "ok", "model": None, "session": "s-budget"},
    ],
    "2026-09-02": [
        {"ts": "2026-09-02T08:30:00+00:00", "actor": "sam", "role": "user", "type": "meta",
         "text": "This session is being continued from an earlier one.", "model": None, "session": "s-trip"},
        {"ts": "2026-09-02T08:31:15+00:00", "actor": "assistant", "role": "ai", "type": "text",
         "text": "Groceries go from 300 to 350, 其余不变.", "model": "claude-x", "session": "s-trip"},
    ],
}


def lossless(folder: Path) -> Path:
    """Write lossless-memory's ``main/`` folder of day files; return the folder to import."""
    main = folder / "main"
    main.mkdir(parents=True)
    for day, rows in LOSSLESS_DAYS.items():
        (main / f"{day}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                           encoding="utf-8")
    return main


SUPERMEMORY_SKILL: dict[str, Any] = {
    "version": "1.3",
    "exported_at": "2026-03-01T12:00:00Z",
    "memories": [
        {"id": "m-001", "content": "The user drinks oat-milk flat whites every morning.", "digest": "oat flat white",
         "weight": 0.9, "pinned": True, "keywords": ["coffee", "morning"], "created_at": "2026-01-02T08:00:00Z",
         "category": "preference"},
        {"id": "m-002", "content": "The user lives in Berlin.", "digest": "lives in Berlin", "weight": 0.6,
         "pinned": False, "keywords": ["home"], "created_at": "2026-01-03T08:00:00Z", "status": "superseded",
         "superseded_by": "m-003"},
        {"id": "m-003", "content": "The user moved to Lisbon in February.", "digest": "moved to Lisbon",
         "weight": 0.95, "pinned": True, "keywords": ["home", "移居"], "created_at": "2026-02-10T08:00:00Z",
         "supersedes": "m-002"},
        {"id": "m-004", "digest": "Prefers short answers", "weight": 0.3, "pinned": False, "keywords": [],
         "created_at": "2026-02-11T08:00:00Z", "access_count": 7},
    ],
}


def supermemory_skill(folder: Path) -> Path:
    """Write a SuperMemory skill V1.3 export; return the file."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "supermemory-export.json"
    path.write_text(json.dumps(SUPERMEMORY_SKILL, ensure_ascii=False, indent=2), encoding="utf-8")
    return path

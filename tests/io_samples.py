"""Samples of each system `am import` reads, written from the systems' documented formats (docs/import.md).

Each has unicode, a supersede chain, a pin, a field am has no key for, and a
malformed entry, where the format can express them (where it cannot, the
sample says so and carries the thing as a plain field, which must be kept).
``write_sample(system, folder)`` returns the path to import and what to expect.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Sample:
    """A source on disk and what importing it must give."""

    path: Path
    made: dict[str, int]  # records written, by type
    aside: int  # entries left aside (each with a reason)
    texts: tuple[str, ...]  # source texts that must be findable in the vault
    values: tuple[Any, ...] = ()  # JSON leaves of the source that must be findable
    pinned: int = 0
    superseded: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def mcp_memory(folder: Path) -> Sample:
    """The MCP memory server's memory.jsonl (src/memory/index.ts: saveGraph)."""
    lines = [
        {"type": "entity", "name": "Alpha 服务", "entityType": "project",
         "observations": ["Alpha serves the mobile app", "Alpha 使用 Redis 缓存会话"], "createdAt": "2025-01-02"},
        {"type": "entity", "name": "Redis", "entityType": "software", "observations": ["Redis keeps sessions"],
         "pinned": True},
        {"type": "entity", "name": "Redis 6", "entityType": "software", "observations": ["Redis 6 was the store"]},
        {"type": "entity", "name": "Redis 7", "entityType": "software", "observations": ["Redis 7 is the store"]},
        {"type": "relation", "from": "Alpha 服务", "to": "Redis", "relationType": "depends_on"},
        {"type": "relation", "from": "Alpha 服务", "to": "Redis", "relationType": "caches_sessions_in"},
        {"type": "relation", "from": "Redis 7", "to": "Redis 6", "relationType": "supersedes"},
        {"type": "entity", "entityType": "person", "observations": ["a line without a name"]},
    ]
    text = "\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n{broken json\n"
    path = folder / "memory.jsonl"
    path.write_text(text, encoding="utf-8")
    good = lines[:7]
    return Sample(path, {"topic": 4, "fact": 5, "relation": 3}, aside=2,
                  texts=tuple(o for e in good for o in e.get("observations", [])),
                  values=(*(v for e in good for v in _leaves(e) if v not in ("entity", "relation")), "createdAt"))


def supermemory(folder: Path) -> Sample:
    """A SuperMemory documents list with memory entries (memory-graph api-types.ts)."""
    memories = [
        {"id": "mem_1", "memory": "Alex works at Google", "createdAt": "2025-01-10T09:00:00.000Z",
         "updatedAt": "2025-01-10T09:00:00.000Z", "isLatest": False, "version": 1, "nextVersionId": "mem_2",
         "spaceContainerTag": "user_alex", "sourceRelevanceScore": 0.9, "embedding": [0.1, 0.2, 0.3]},
        {"id": "mem_2", "memory": "Alex 现在在 Stripe 做产品经理", "createdAt": "2025-03-01T10:00:00.000Z",
         "updatedAt": "2025-03-01T10:00:00.000Z", "isLatest": True, "version": 2, "parentMemoryId": "mem_1",
         "rootMemoryId": "mem_1", "relation": "updates", "updatesMemoryId": "mem_1",
         "spaceContainerTag": "user_alex", "sourceRelevanceScore": 0.95, "moodScore": 7},
        {"id": "mem_3", "memory": "Alex is from Seattle", "createdAt": "2025-01-11T08:00:00.000Z",
         "updatedAt": "2025-01-11T08:00:00.000Z", "isStatic": True, "spaceContainerTag": "user_alex",
         "sourceRelevanceScore": 0.4},
        {"id": "mem_4", "memory": "Alex leads a team of 5 on payments", "createdAt": "2025-03-02T10:00:00.000Z",
         "updatedAt": "2025-03-02T10:00:00.000Z", "relation": "extends", "parentMemoryId": "mem_2",
         "spaceContainerTag": "user_alex", "isForgotten": True, "forgetReason": "team changed"},
        {"id": "mem_5", "createdAt": "2025-03-03T10:00:00.000Z", "spaceContainerTag": "user_alex"},
    ]
    data = {"documents": [{"id": "doc_1", "title": "Call with Alex", "summary": "A call about Alex's new job",
                           "url": None, "documentType": "text", "createdAt": "2025-03-01T10:00:00.000Z",
                           "updatedAt": "2025-03-01T10:00:00.000Z", "memories": memories}],
            "pagination": {"currentPage": 1, "limit": 10, "totalItems": 1, "totalPages": 1}}
    path = folder / "supermemory.json"
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    keep = [m for m in memories[:4]]
    values = [v for m in keep for k, v in m.items() if k not in ("embedding", "isStatic", "isForgotten",
                                                                 "createdAt", "updatedAt")]
    values += ["doc_1", "Call with Alex", "A call about Alex's new job", "text", "user_alex"]
    # topics: the container, the document; facts: 4 memories; relations: mem_4 extends mem_2
    # left aside: mem_5 (no text) and the embedding vectors (said once)
    return Sample(path, {"topic": 2, "fact": 4, "relation": 1}, aside=2,
                  texts=tuple(m["memory"] for m in keep), values=tuple(values), pinned=1, superseded=1)


def openchronicle(folder: Path) -> Sample:
    """An OpenChronicle memory folder (store/files.py: prefixed files, entry headings, supersede marks)."""
    memory = folder / "memory"
    memory.mkdir()
    (memory / "user-preferences.md").write_text(
        "---\ndescription: User's preferences and working style\ntags: [preferences]\nstatus: active\n"
        "created: '2026-04-20'\nupdated: '2026-04-22'\nentry_count: 3\nneeds_compact: false\nmood: calm\n---\n"
        "## [2026-04-20T09:15] {id: 20260420-0915-a1b2c3} #tools #editor #superseded-by:20260422-1010-d4e5f6\n"
        "~~User prefers VSCode for Python work.~~\n\n"
        "## [2026-04-21T11:00] {id: 20260421-1100-0a0b0c} #style #pinned\n"
        "User writes commit messages in the present tense, 现在时.\n\n"
        "## [2026-04-22T10:10] {id: 20260422-1010-d4e5f6} #tools #editor\n"
        "User prefers Cursor over VSCode for Python work.\n"
        "<!-- supersedes: 20260420-0915-a1b2c3; reason: switched editors -->\n",
        encoding="utf-8")
    (memory / "project-openchronicle.md").write_text(
        "---\ndescription: The OpenChronicle project\ntags: [project]\nstatus: active\ncreated: '2026-04-19'\n"
        "updated: '2026-04-19'\nentry_count: 1\nneeds_compact: false\n---\n"
        "## [2026-04-19T08:00] {id: 20260419-0800-aaaaaa} #architecture\n"
        "OpenChronicle keeps memory as Markdown with an FTS5 index.\n\n"
        "## [not a time] {id: 20260419-0900-bbbbbb}\nThis heading's time is broken.\n",
        encoding="utf-8")
    (memory / "notes.md").write_text("---\ndescription: no prefix\n---\nstray\n", encoding="utf-8")
    (memory / "index.md").write_text("# Index\n", encoding="utf-8")
    texts = ("User prefers VSCode for Python work.", "User writes commit messages in the present tense, 现在时.",
             "User prefers Cursor over VSCode for Python work.",
             "OpenChronicle keeps memory as Markdown with an FTS5 index.", "switched editors", "mood: calm",
             "20260420-0915-a1b2c3", "User's preferences and working style", "needs_compact: false")
    return Sample(memory, {"topic": 2, "fact": 4, "relation": 0}, aside=2, texts=texts, superseded=1)


def basic_memory(folder: Path) -> Sample:
    """A basic-memory project (docs/NOTE-FORMAT.md): notes with observations and relations."""
    project = folder / "bm"
    (project / "people").mkdir(parents=True)
    (project / "coffee.md").write_text(
        "---\ntitle: Coffee Brewing Methods\ntype: note\ntags: [coffee, brewing]\npermalink: coffee-brewing-methods\n"
        "source: wikipedia\nsuperseded_by: coffee-brewing-2026\npinned: true\n---\n\n# Coffee Brewing Methods\n\n"
        "Pour over is in [[Coffee Bean Origins]] too.\n\n## Observations\n"
        "- [method] Pour over provides more flavor clarity than French press\n"
        "- [technique] Water temperature at 205°F extracts optimal compounds #brewing\n"
        "- [偏好] 埃塞俄比亚豆子适合浅烘 (personal experience)\n"
        "- [ ] a task, not an observation\n\n## Relations\n"
        "- relates_to [[Coffee Bean Origins]]\n- requires [[Proper Grinding Technique]] (burr grinder)\n"
        "- part_of [[Paul Graham]]\n",
        encoding="utf-8")
    (project / "people" / "paul-graham.md").write_text(
        "---\ntitle: Paul Graham\ntype: Person\ntags: [startups, essays]\n---\n\n# Paul Graham\n\n"
        "- [name] Paul Graham\n- [role] Essayist and investor\n- works_at [[Y Combinator]]\n",
        encoding="utf-8")
    (project / "broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n", encoding="utf-8")
    texts = ("Pour over provides more flavor clarity than French press",
             "Water temperature at 205°F extracts optimal compounds #brewing", "埃塞俄比亚豆子适合浅烘",
             "personal experience", "burr grinder", "Essayist and investor", "source: wikipedia",
             "superseded_by: coffee-brewing-2026", "relates_to", "works_at", "a task, not an observation")
    # topics: 2 notes + 3 forward references (Coffee Bean Origins, Proper Grinding Technique, Y Combinator)
    return Sample(project, {"topic": 5, "fact": 5, "relation": 4}, aside=1, texts=texts)


def openclaw(folder: Path) -> Sample:
    """An OpenClaw-style items.json (no public spec: the reader's documented assumptions)."""
    items = [
        {"id": "k1", "summary": "Use Bun for all TS tooling", "layer": "hot", "tags": ["tooling"],
         "created_at": "2026-02-01T10:00:00Z", "confidence": 0.9, "importance": 0.8, "source": "claude"},
        {"id": "k2", "summary": "Use npm scripts", "layer": "deep", "created_at": "2026-01-01T10:00:00Z",
         "superseded_by": "k3", "importance": 0.3},
        {"id": "k3", "summary": "用 pnpm 管理依赖", "content": "pnpm replaced npm in March.", "layer": "deep",
         "created_at": "2026-03-01T10:00:00Z", "supersedes": "k2", "ref": "notes/pnpm.md", "importance": 0.6},
        {"summary": "an item without an id"},
    ]
    path = folder / "items.json"
    path.write_text(json.dumps({"version": 2, "items": items}, ensure_ascii=False), encoding="utf-8")
    values = ["Use Bun for all TS tooling", "tooling", "claude", 0.8, 0.3, 0.6, "notes/pnpm.md", "hot", "deep",
              "用 pnpm 管理依赖", "pnpm replaced npm in March.", "k1", "k2", "k3", "importance", "ref", "layer"]
    return Sample(path, {"topic": 1, "fact": 3, "relation": 0}, aside=1, texts=("Use npm scripts",),
                  values=tuple(values), pinned=1, superseded=1)


def lossless(folder: Path) -> Sample:
    """lossless-memory JSONL (no public spec: {id, ts, session, role, text} lines, as docs/import.md says)."""
    lines = [
        {"id": "r1", "ts": "2026-05-01T09:00:00Z", "session": "s-42", "role": "user",
         "text": "remember: the deploy key rotates monthly"},
        {"id": "r2", "ts": "2026-05-01T09:01:00Z", "session": "s-42", "role": "assistant",
         "text": "记住了：部署密钥每月轮换", "model": "claude-x", "pinned": True},
        {"id": "r3", "ts": "2026-05-20T09:00:00Z", "session": "s-43", "role": "user",
         "text": "the deploy key now rotates weekly", "supersedes": "r1"},
    ]
    text = "\n".join(json.dumps(line, ensure_ascii=False) for line in lines)
    text += '\n{"id": "r4", "session": "s-43"}\nnot json at all\n'
    path = folder / "session.jsonl"
    path.write_text(text, encoding="utf-8")
    values = [v for line in lines for k, v in line.items() if k not in ("ts", "pinned", "supersedes")]
    return Sample(path, {"topic": 2, "fact": 3, "relation": 0}, aside=2, texts=(), values=tuple(values), pinned=1)


def markdown(folder: Path) -> Sample:
    """CLAUDE.md and an adr-tools ADR folder (Nygard's form)."""
    root = folder / "repo"
    adr = root / "doc" / "adr"
    adr.mkdir(parents=True)
    (root / "CLAUDE.md").write_text(
        "# Alpha\n\nNotes for agents.\n\n## Testing\n\n- Run `pytest -q` before every commit\n"
        "- 测试数据放在 tests/data 下\n\n## Style\n\n1. Keep modules under 600 lines\n", encoding="utf-8")
    (adr / "0001-use-postgres.md").write_text(
        "# 1. Use Postgres\n\nDate: 2026-01-05\n\n## Status\n\nSuperseded by [2. Use SQLite](0002-use-sqlite.md)\n\n"
        "## Context\n\nWe need a database.\n\n## Decision\n\nWe will use Postgres.\n\n## Consequences\n\nOps work.\n",
        encoding="utf-8")
    (adr / "0002-use-sqlite.md").write_text(
        "# 2. Use SQLite\n\nDate: 2026-02-10\n\n## Status\n\nAccepted\n\nSupersedes [1. Use Postgres](0001-use-postgres.md)\n\n"
        "## Context\n\nOne file is enough.\n\n## Decision\n\nWe will use SQLite, 单文件数据库.\n\n"
        "## Consequences\n\nNo server.\n", encoding="utf-8")
    (adr / "0003-broken.md").write_text("---\nstatus: [unclosed\n---\n# 3. Broken\n", encoding="utf-8")
    texts = ("Run `pytest -q` before every commit", "测试数据放在 tests/data 下", "Keep modules under 600 lines",
             "We will use Postgres.", "We will use SQLite, 单文件数据库.", "Notes for agents.", "Ops work.")
    return Sample(root, {"topic": 3, "fact": 5, "relation": 0}, aside=1, texts=texts)


SAMPLES = {
    "mcp-memory": mcp_memory,
    "supermemory": supermemory,
    "openchronicle": openchronicle,
    "basic-memory": basic_memory,
    "openclaw": openclaw,
    "lossless": lossless,
    "markdown": markdown,
}


def write_sample(system: str, folder: Path) -> Sample:
    """Write the sample of a system into ``folder``; return it."""
    folder.mkdir(parents=True, exist_ok=True)
    return SAMPLES[system](folder)

"""`am export`: the vault, or one world of it, as JSON Lines (am's own, lossless) and other formats.

One JSONL line per record: ``{"meta": <frontmatter, in file order>, "body": ...,
"path": ...}`` (and ``"eol"`` for a file with CRLF line endings), records in
type order (topics, facts, relations), then by id and path. ``am import jsonl``
writes each record back at its path, so export -> import -> export gives the
same bytes. A whole vault's export also carries its files that are not records
(session logs, settings: am/io/vaultfiles.py), as lines of their own kinds after
the records. ``json`` is the same records (and files) in one document; ``mcp-memory`` and
``markdown`` are for other tools and people, and lose what they cannot hold
(docs/import.md says what).

Decisions: docs/decisions/portability.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from am.errors import UsageError
from am.io.source import FileItem
from am.records.codec import record_to_meta
from am.records.model import Fact, Record, Relation, Topic

if TYPE_CHECKING:
    from am.vault import Vault

__all__ = ["EXPORT_FORMATS", "ExportWorld", "export_file_items", "export_pairs", "record_line", "render_export"]

EXPORT_FORMATS = ("jsonl", "json", "mcp-memory", "markdown")
_ORDER = {"topic": 0, "fact": 1, "relation": 2}
Pair = tuple[PurePosixPath, Record]


@dataclass(frozen=True)
class ExportWorld:
    """The world to export (DESIGN §5); with nothing set, every record of the vault."""

    repo: str | None = None
    branch: str | None = None
    commit: str | None = None
    at: datetime | None = None
    as_of: datetime | None = None
    include_pending: bool = False

    @property
    def is_whole_vault(self) -> bool:
        return self.repo is None and self.branch is None and self.commit is None and self.at is None


def _sort(pairs: Iterable[Pair]) -> list[Pair]:
    return sorted(pairs, key=lambda p: (_ORDER[p[1].type], p[1].id, str(p[0])))


def export_pairs(vault: Vault, world: ExportWorld = ExportWorld()) -> list[Pair]:
    """Return (path, record) of every record to export, in export order."""
    if world.as_of is not None:
        from am.records.ids import record_path
        from am.worlds.ancestry import records_at

        past = vault.store.last_commit_at(world.as_of.timestamp())
        if past is None:
            from pathlib import Path

            from am.git.program.partial import refuse_before_shallow

            refuse_before_shallow(Path(vault.store.gitdir), f"--as-of {world.as_of.isoformat()}")
            raise UsageError(f"the vault has no commit at or before {world.as_of.isoformat()}",
                             hint="pick a later time (see: git log --reverse --format=%ci | head -1)")
        pairs: list[Pair] = []
        for record in records_at(vault, past):
            try:
                pairs.append((record_path(record.type, record.id, record.created), record))
            except Exception:  # noqa: BLE001 - a record without a place still travels, under its type's folder
                pairs.append((PurePosixPath(f"{record.type}s", f"{record.id}.md"), record))
    else:
        cache = vault.cache()
        if cache is not None:
            cache.refresh()  # an edit made within the last second counts too
        pairs = list(cache.records()) if cache is not None else list(vault.iter_records())
    if not world.is_whole_vault or world.include_pending:
        pairs = _in_world(vault, pairs, world)
    return _sort(pairs)


def export_file_items(vault: Vault, world: ExportWorld = ExportWorld()) -> list[FileItem]:
    """Return the session logs and settings a whole-vault export carries (none for one world of it)."""
    from am.io.vaultfiles import export_files

    if not world.is_whole_vault or world.include_pending:
        return []
    commit = None
    if world.as_of is not None:
        commit = vault.store.last_commit_at(world.as_of.timestamp())
        if commit is None:
            return []
    return list(export_files(vault, commit))


def _in_world(vault: Vault, pairs: list[Pair], world: ExportWorld) -> list[Pair]:
    """Keep the records that hold in the world (the rules a slice uses)."""
    from am.worlds.ancestry import now, setup_world
    from am.worlds.rules import resolve

    setup = setup_world(world.repo, world.branch, world.commit, at=world.at or now(),
                        include_pending=world.include_pending,
                        cache_dir=vault.root / ".am" / "cache" / "ancestry", known_repos=vault.known_repos)
    res = resolve((r for _, r in _sort(pairs)), setup.world, setup.oracle)
    holds = {"topic": set(res.topics), "fact": set(res.facts), "relation": set(res.relations)}
    seen: set[tuple[str, str]] = set()
    out = []
    for path, record in _sort(pairs):
        key = (record.type, record.id)
        if record.id in holds[record.type] and key not in seen:  # the first of two files with one id
            seen.add(key)
            out.append((path, record))
    return out


def record_line(path: PurePosixPath, record: Record) -> dict[str, Any]:
    """Return one record as am's export writes it."""
    line: dict[str, Any] = {"meta": record_to_meta(record), "body": record.body, "path": str(path)}
    if record.eol != "\n":
        line["eol"] = record.eol
    return line


def render_export(pairs: Sequence[Pair], fmt: str, *, vault_name: str,
                  files: Sequence[FileItem] = ()) -> Iterator[str]:
    """Yield the export's text in pieces (each ends with a newline); ``files`` go after the records (jsonl, json)."""
    from am.io.vaultfiles import file_line

    if fmt == "jsonl":
        for path, record in pairs:
            yield json.dumps(record_line(path, record), ensure_ascii=False, separators=(",", ":")) + "\n"
        for item in files:
            yield json.dumps(file_line(item), ensure_ascii=False, separators=(",", ":")) + "\n"
    elif fmt == "json":
        records = [record_line(p, r) for p, r in pairs]
        doc: dict[str, Any] = {"format": "am-export", "version": 1, "records": records}
        if files:
            doc["files"] = [file_line(item) for item in files]
        yield json.dumps(doc, ensure_ascii=False, indent=1) + "\n"
    elif fmt == "mcp-memory":
        yield from _mcp_lines(pairs)
    elif fmt == "markdown":
        yield from _markdown(pairs, vault_name)
    else:
        raise UsageError(f"unknown export format {fmt!r}", hint=f"use one of: {', '.join(EXPORT_FORMATS)}")


_HOLDING = ("active", "contested")


def _mcp_lines(pairs: Sequence[Pair]) -> Iterator[str]:
    """The MCP memory server's memory.jsonl: topics as entities, facts that hold as observations."""
    topics = [r for _, r in pairs if isinstance(r, Topic)]
    names: dict[str, str] = {}
    taken: set[str] = set()
    for t in topics:
        name = t.title if t.title not in taken else f"{t.title} ({t.id})"
        taken.add(name)
        names[t.id] = name
    observations: dict[str, list[tuple[Any, str, str, str]]] = {t.id: [] for t in topics}
    for _, r in pairs:
        if isinstance(r, Fact) and r.status in _HOLDING:
            index = r.extra.get("source_index")
            order = index if isinstance(index, int) and not isinstance(index, bool) else 1 << 62
            for tid in r.topics:
                if tid in observations:
                    observations[tid].append((order, r.created or "", r.id, r.body.strip()))
    dump = json.dumps
    for t in topics:
        etype = t.extra.get("entity_type")
        entity = {"type": "entity", "name": names[t.id], "entityType": etype if isinstance(etype, str) else t.kind,
                  "observations": [text for *_, text in sorted(observations[t.id])]}
        yield dump(entity, ensure_ascii=False, separators=(",", ":")) + "\n"
    for _, r in pairs:
        if isinstance(r, Relation) and r.status in _HOLDING and r.from_ in names and r.to in names:
            source_rel = r.extra.get("source_rel")
            relation = {"type": "relation", "from": names[r.from_], "to": names[r.to],
                        "relationType": source_rel if isinstance(source_rel, str) else r.rel}
            yield dump(relation, ensure_ascii=False, separators=(",", ":")) + "\n"


def _markdown(pairs: Sequence[Pair], vault_name: str) -> Iterator[str]:
    """One Markdown document: each topic with its facts as bullets, then the relations."""
    facts_of: dict[str, list[Fact]] = {}
    for _, r in pairs:
        if isinstance(r, Fact):
            for tid in r.topics:
                facts_of.setdefault(tid, []).append(r)
    yield f"# {vault_name}\n"
    for _, t in pairs:
        if not isinstance(t, Topic):
            continue
        yield f"\n## {t.title} (`{t.id}`, {t.kind})\n"
        if t.body.strip():
            yield "\n" + t.body.rstrip("\n") + "\n"
        bullets = facts_of.get(t.id, [])
        if bullets:
            yield "\n"
        for f in bullets:
            text = " ".join(f.body.split())
            notes = [f.id, f.confidence] + ([f.status] if f.status != "active" else []) + (["pinned"] if f.pinned else [])
            yield f"- {text} ({', '.join(notes)})\n"
    relations = [r for _, r in pairs if isinstance(r, Relation)]
    if relations:
        yield "\n## Relations\n\n"
        for r in relations:
            yield f"- [[{r.from_}]] {r.rel} [[{r.to}]]" + (f" ({r.status})" if r.status != "active" else "") + "\n"

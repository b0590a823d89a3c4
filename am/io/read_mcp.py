"""The MCP reference memory server's memory.jsonl (or legacy memory.json): entities, relations, observations.

Source: modelcontextprotocol/servers, src/memory/index.ts. One JSON object a
line: ``{"type":"entity","name","entityType","observations":[...]}`` or
``{"type":"relation","from","to","relationType"}``. docs/import.md has the mapping.

Decisions: docs/decisions/portability.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from am.io.files import json_lines, parse_json, read_text, source_time
from am.io.source import Builder, SourceRead, extra_key, guess_kind, plain_value

__all__ = ["read_mcp_memory"]

SYSTEM = "mcp-memory"
_ENTITY_KEYS = ("type", "name", "entityType", "observations")
_RELATION_KEYS = ("type", "from", "to", "relationType")


def _lines(path: Path, text: str) -> list[tuple[str, Any, str | None]]:
    stripped = text.lstrip()
    if stripped.startswith("{") and "\n{" not in stripped.rstrip():
        # A whole graph in one object ({"entities": [...], "relations": [...]}, what read_graph returns).
        try:
            graph = parse_json(stripped)
        except ValueError:  # not JSON, or JSON am cannot hold: read as lines, which names the line
            graph = None
        if isinstance(graph, dict) and ("entities" in graph or "relations" in graph):
            out: list[tuple[str, Any, str | None]] = []
            for n, e in enumerate(graph.get("entities") or []):
                out.append((f"{path.name}:entities[{n}]", {"type": "entity", **e} if isinstance(e, dict) else e, None))
            for n, r in enumerate(graph.get("relations") or []):
                out.append((f"{path.name}:relations[{n}]", {"type": "relation", **r} if isinstance(r, dict) else r,
                            None))
            return out
    return [(f"{path.name}:{number}", value, error) for number, value, error in json_lines(text)]


def read_mcp_memory(path: Path) -> SourceRead:
    """Read an MCP memory file into topics (entities), facts (observations) and relations."""
    b = Builder(SYSTEM, source_time(path))
    entities: list[tuple[str, dict[str, Any]]] = []
    relations: list[tuple[str, dict[str, Any]]] = []
    for origin, value, error in _lines(path, read_text(path)):
        if error is not None:
            b.leave(origin, error)
            continue
        if not isinstance(value, dict):
            b.leave(origin, "not a JSON object")
            continue
        kind = value.get("type")
        if kind == "entity":
            b.read["entities"] += 1
            if not isinstance(value.get("name"), str) or not value["name"].strip():
                b.leave(origin, "entity without a name")
                continue
            entities.append((origin, value))
        elif kind == "relation":
            b.read["relations"] += 1
            relations.append((origin, value))
        else:
            b.leave(origin, f"unknown line type {kind!r} (expected entity or relation)")
    for origin, e in entities:
        name = e["name"]
        etype = e.get("entityType")
        extra: dict[str, Any] = {"entity_type": etype if isinstance(etype, str) else plain_value(etype)}
        extra.update((extra_key(k), plain_value(v)) for k, v in e.items() if k not in _ENTITY_KEYS)
        tid = b.topic_id_for(name)
        if tid is None:
            tid = b.topic(name, kind=guess_kind(etype if isinstance(etype, str) else None), origin=origin, extra=extra)
        else:  # two lines of one name (files joined, a hand edit): the later one's fields join the topic
            b.read["entity lines merged into an earlier one of the name"] += 1
            b.add_extra(tid, {k: v for k, v in extra.items() if k != "entity_type" or "entityType" in e})
        observations = e.get("observations") or []
        if not isinstance(observations, list):
            b.leave(origin, "observations is not a list")
            continue
        for n, text in enumerate(observations):
            b.read["observations"] += 1
            where = f"{origin} observation {n}"
            if not isinstance(text, str):
                b.leave(where, "observation is not text")
                continue
            b.fact(text, key=(name, text), topics=[tid], origin=where, extra={"source_index": n})
    for origin, r in relations:
        ends = [r.get("from"), r.get("to")]
        rtype = r.get("relationType")
        if not all(isinstance(x, str) and x.strip() for x in ends) or not isinstance(rtype, str) or not rtype.strip():
            b.leave(origin, "relation needs from, to and relationType")
            continue
        ids: list[str] = []
        for name in ends:
            assert isinstance(name, str)
            end = b.topic_id_for(name)
            if end is None:  # the server keeps relations to entities it never made: a topic stands in
                b.read["entities named only by relations"] += 1
                end = b.topic(name, origin=origin, extra={"entity_type": None}, defined=False)
            ids.append(end)
        extra = {extra_key(k): plain_value(v) for k, v in r.items() if k not in _RELATION_KEYS}
        b.relation(ids[0], rtype, ids[1], origin=origin, extra=extra)
    return b.finish()

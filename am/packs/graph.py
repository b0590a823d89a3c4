"""The topic graph of a world: topics as nodes (coloured by kind), relations and [[links]] as edges.

``world_graph(vault, request)`` reads the vault through the same slice as
``am slice`` (``slice_vault`` with no budget and no use counted): the nodes are
the topics in the slice's scope (the whole vault, or ``--topic X --depth N``),
each with the count of its facts that hold in the world; the edges are the
relations the slice shows and the same-vault wikilinks between those topics (a
fact's link counts from each of its topics). ``render_mermaid``,
``render_dot`` and ``graph_json`` turn it into text to paste (Mermaid renders
in GitHub and Obsidian, DOT in Graphviz); the positions come from
``am.packs.layout``, deterministic, so the same vault commit and request give
byte-identical output.

Decisions: docs/decisions/web.md.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from am.packs.pack import Pack, SliceRequest, clean_text
from am.records.model import Fact, Relation, Topic

if TYPE_CHECKING:
    from am.packs.reader import VaultReader

__all__ = ["KIND_COLOURS", "Edge", "Node", "TopicGraph", "graph_json", "render_dot", "render_mermaid", "world_graph"]

# One colour a kind, readable on white, the same in every format.
KIND_COLOURS = {
    "project": "#4e79a7", "tool": "#f28e2b", "person": "#e15759", "org": "#76b7b2",
    "decision": "#59a14f", "session": "#edc948", "concept": "#b07aa1", "event": "#ff9da7",
}
_OTHER_COLOUR = "#9c9c9c"


@dataclass(frozen=True)
class Node:
    """A topic in the graph, with how many of its facts hold in the world."""

    id: str
    kind: str
    title: str
    facts: int = 0
    contested: int = 0
    stale: int = 0
    pending: int = 0
    x: float = 0.0
    y: float = 0.0

    @property
    def colour(self) -> str:
        return KIND_COLOURS.get(self.kind, _OTHER_COLOUR)


@dataclass(frozen=True)
class Edge:
    """A relation (``rel`` its type, ``id`` its record) or a wikilink (``rel`` 'links-to', no id)."""

    source: str
    target: str
    rel: str
    id: str | None = None


@dataclass
class TopicGraph:
    """The graph of one world and scope, with the pack it was read from (the review queue reads it too)."""

    request: SliceRequest
    pack: Pack
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)

    @property
    def vault_commit(self) -> str | None:
        return self.pack.vault_commit


def world_graph(vault: VaultReader, request: SliceRequest) -> TopicGraph:
    """Build the topic graph of a world (and of a topic's neighbourhood), from a slice with no budget."""
    from am.packs.layout import layout
    from am.packs.slice import slice_vault

    request = replace(request, max_tokens=0, query=None, follow_links=False, compact=False)
    pack = slice_vault(vault, request, count_use=False)
    topics: dict[str, Topic] = {t.id: t for t, _ in pack.sections}
    topics.update((t.id, t) for t in pack.others)
    counts: dict[str, dict[str, int]] = {tid: {"facts": 0, "contested": 0, "stale": 0, "pending": 0} for tid in topics}
    facts: dict[str, Fact] = {}
    for kind, group in (("facts", [f for _, fs in pack.sections for f in fs] + pack.pinned),
                        ("stale", pack.stale_facts), ("contested", pack.contested), ("pending", pack.pending)):
        for fact in group:
            facts[fact.id] = fact
            for tid in fact.topics:
                if tid in counts:
                    counts[tid]["facts"] += 1
                    if kind != "facts":
                        counts[tid][kind] += 1
    edges: dict[tuple[str, str, str], Edge] = {}
    for rel in pack.relations:
        if rel.from_ in topics and rel.to in topics and rel.status == "active":
            edges[(rel.from_, rel.to, rel.rel)] = Edge(rel.from_, rel.to, rel.rel, rel.id)
    # A link between two topics a relation already joins (either way) adds nothing to the picture.
    joined = {frozenset((a, b)) for a, b, _ in edges}
    for source, target in _links(vault, topics):
        froms = (source,) if source in topics else facts[source].topics if source in facts else ()
        for start in froms:
            pair = frozenset((start, target))
            if start in topics and start != target and pair not in joined:
                joined.add(pair)
                edges[(start, target, "links-to")] = Edge(start, target, "links-to")
    ordered_edges = sorted(edges.values(), key=lambda e: (e.source, e.target, e.rel))
    places = layout(list(topics), [(e.source, e.target) for e in ordered_edges], focus=request.topic)
    nodes = [Node(t.id, t.kind, clean_text(t.title), **counts[t.id], x=places[t.id][0], y=places[t.id][1])
             for t in sorted(topics.values(), key=lambda t: t.id)]
    return TopicGraph(request, pack, nodes, ordered_edges)


def _links(vault: VaultReader, topics: dict[str, Topic]) -> list[tuple[str, str]]:
    """Return (source id, target topic id) of the same-vault wikilinks that end at a topic of the graph."""
    index = None
    opener = getattr(vault, "cache", None)
    if opener is not None:
        try:
            index = opener()
        except Exception:  # noqa: BLE001 -- the cache is disposable: read the topics' own links instead
            index = None
    if index is not None and hasattr(index, "link_pairs"):
        return [(s, t) for s, t in index.link_pairs() if t in topics]
    from am.records.links import link_targets

    found = []
    for _, record in vault.iter_records():
        if isinstance(record, (Topic, Fact)) and not isinstance(record, Relation):
            found += [(record.id, t) for t in link_targets(record.body) if t in topics]
    return found


def graph_json(graph: TopicGraph) -> dict[str, Any]:
    """Return the graph's stable JSON shape: world, scope, nodes (with positions) and edges."""
    pack, req, world = graph.pack, graph.request, graph.pack.setup.world
    return {
        "vault": {"name": pack.vault_name, "commit": pack.vault_commit},
        "world": {"repo": world.repo, "branch": world.branch, "commit": world.commit, "rule": pack.setup.rule,
                  "at": req.at_label, "include_pending": req.include_pending},
        "scope": {"description": pack.scope, "topic": req.topic, "depth": req.depth if req.topic else None},
        "nodes": [{"id": n.id, "kind": n.kind, "title": n.title, "colour": n.colour, "facts": n.facts,
                   "contested": n.contested, "stale": n.stale, "pending": n.pending, "x": n.x, "y": n.y}
                  for n in graph.nodes],
        "edges": [{"from": e.source, "to": e.target, "rel": e.rel, "id": e.id} for e in graph.edges],
        "kinds": {k: KIND_COLOURS.get(k, _OTHER_COLOUR) for k in sorted({n.kind for n in graph.nodes})},
    }


def render_json(graph: TopicGraph) -> str:
    """Render the graph as sorted, indented JSON."""
    return json.dumps(graph_json(graph), ensure_ascii=False, indent=2, sort_keys=True) + "\n"


def _title(graph: TopicGraph) -> str:
    world = graph.pack.setup.world
    where = (world.repo or "no repo") + (f" @ {world.branch}" if world.branch else "") + (
        f" ({world.commit[:10]})" if world.commit else "")
    return f"{graph.pack.vault_name}: {where}; {graph.pack.scope}"


def _mermaid_id(index: int) -> str:
    return f"n{index}"


# Inside "...", Mermaid reads #quot; and friends as entities and the label as HTML: escape what would end or
# confuse it. & would start an HTML entity (&lt; shown as <); ﬂ and ¶ begin the placeholders Mermaid stands
# entities in with while it parses (ﬂ° ... ¶ß), which it turns back into & and ; everywhere in the drawing.
_MERMAID_ESCAPES = {'"': "#quot;", "<": "#lt;", ">": "#gt;", "#": "#35;", "`": "#96;", "&": "#amp;",
                    "\ufb02": "#64258;", "\u00b6": "#182;"}


def _mermaid_text(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return "".join(_MERMAID_ESCAPES.get(c, c) for c in text)


def render_mermaid(graph: TopicGraph) -> str:
    """Render a Mermaid flowchart: one node a topic (``id: title``, n facts), one edge a relation or link."""
    ids = {n.id: _mermaid_id(i) for i, n in enumerate(graph.nodes)}
    title = re.sub(r"\s+", " ", _title(graph)).replace("'", "''")
    lines = ["---", f"title: '{title}'", "---", "flowchart LR"]
    for node in graph.nodes:
        text = "<br/>".join(_mermaid_text(part) for part in _label_lines(node))
        lines.append(f'    {ids[node.id]}["{text}"]:::{_class(node.kind)}')
    for edge in graph.edges:
        arrow = "-.->" if edge.rel == "links-to" else "-->"
        lines.append(f"    {ids[edge.source]} {arrow}|{edge.rel}| {ids[edge.target]}")
    for kind in sorted({n.kind for n in graph.nodes}):
        colour = KIND_COLOURS.get(kind, _OTHER_COLOUR)
        lines.append(f"    classDef {_class(kind)} fill:{colour},stroke:#333,color:#fff")
    return "\n".join(lines) + "\n"


def _label_lines(node: Node) -> list[str]:
    lines = [node.id]
    if node.title and node.title != node.id:
        lines.append(node.title)
    if node.facts:
        lines.append(f"{node.facts} fact{'s' * (node.facts != 1)}")
    return lines


def _class(kind: str) -> str:
    return "k_" + re.sub(r"[^A-Za-z0-9_]", "_", kind)


def _dot_text(text: str) -> str:
    return '"' + re.sub(r"\s+", " ", text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_dot(graph: TopicGraph) -> str:
    """Render a Graphviz digraph: nodes filled with their kind's colour, relations solid, links dashed."""
    lines = [f"digraph {_dot_text('am')} {{", f"  label={_dot_text(_title(graph))};", "  labelloc=t;",
             "  rankdir=LR;", '  node [shape=box, style="rounded,filled", fontcolor=white, fontname="Helvetica"];',
             '  edge [fontname="Helvetica", fontsize=10];']
    for node in graph.nodes:
        quoted = '"' + "\\n".join(_dot_text(part)[1:-1] for part in _label_lines(node)) + '"'
        lines.append(f"  {_dot_text(node.id)} [label={quoted}, fillcolor={_dot_text(node.colour)}, "
                     f"tooltip={_dot_text(node.kind)}];")
    for edge in graph.edges:
        style = ", style=dashed" if edge.rel == "links-to" else ""
        lines.append(f"  {_dot_text(edge.source)} -> {_dot_text(edge.target)} [label={_dot_text(edge.rel)}{style}];")
    lines.append("}")
    return "\n".join(lines) + "\n"

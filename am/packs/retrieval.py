"""Find the records a query is about, degrading from vectors to full text to the graph.

Levels, tried in order, each within what is left of a time budget:

1. ``vector``: the backend this machine's configuration chooses
   (am/packs/embedding.py: ``$AM_EMBEDDINGS``, ``$AM_HOME/config.yml``, else
   WordLlama when the ``am[semantic]`` extra is installed; never a vault). An
   *embedder* takes part in the next level: its vectors live in the cache and
   ``HybridSearch`` fuses their ranking with full text's (level
   ``vector+full-text``, or ``vector`` when only vectors found what holds); a
   *search backend* answers alone, first. Without one the note says why
   (``vector: not installed``, ``vector: off (...)``).
2. ``full-text``: the cache's full-text index (any ``search(query, limit)``
   callable returning ids, best first; a ``HybridSearch`` fuses vectors in).
3. ``graph``: topics whose id, title or aliases match a word of the query,
   and their neighbours one hop away in the relation-and-link graph.
4. ``none``: nothing matched; the caller shows the world's top-ranked records
   and says so.

Only hits among the records that hold in the world count, so a level whose
hits all lie elsewhere lets the next one try. Every level that was tried is
named in ``Retrieved.notes``.

Decisions: docs/decisions/recall.md.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from am.records.model import Fact, Record, Relation, Topic
from am.worlds.rules import FactView

if TYPE_CHECKING:
    from am.packs.reader import VaultOpener, VaultReader
    from am.worlds.ancestry import WorldSetup

__all__ = [
    "EmbeddingBackend",
    "HybridSearch",
    "Retrieved",
    "load_backend",
    "retrieve",
    "neighbourhood",
    "link_edges",
    "follow_links",
]

SearchFn = Callable[[str, int], Sequence[str]]


class EmbeddingBackend(Protocol):
    """A semantic search backend: returns (record id, score) pairs, best first."""

    name: str

    def search(self, query: str, *, limit: int) -> list[tuple[str, float]]:
        """Return up to ``limit`` (record id, score) pairs for the query, best first."""
        ...


@dataclass(frozen=True)
class Retrieved:
    """What a query found: ranked record ids, the level that served, and what each level said."""

    level: str
    ids: tuple[str, ...]
    notes: tuple[str, ...]
    found: tuple[tuple[str, str], ...] = ()  # (id, how it was found) when vectors took part


def load_backend(settings: Mapping[str, Any] | None = None) -> tuple[Any | None, str]:
    """Return the backend this machine's configuration names (or None) and the vector level's note.

    See am/packs/embedding.py: an embedder (am keeps and fuses its vectors) or a search backend.
    """
    from am.packs.embedding import load_backend as load

    return load(settings)


class HybridSearch:
    """The cache's full-text search fused with its vectors: ``search(query, limit) -> ids``, best first.

    After a call, ``found`` maps each id to how it was found (full-text, vector,
    full-text+vector), ``notes`` says what the vector level did and ``served``
    names the levels whose hits hold in the world. The vector part never raises:
    a model or cache that fails leaves the full-text ids and a note.
    """

    STATUSES = ("active", "contested", "pending-review")

    def __init__(self, index: Any, embedder: Any, *, budget_s: float = 1.0) -> None:
        self.index = index
        self.embedder = embedder
        self.budget_s = budget_s
        self.found: dict[str, str] = {}
        self.notes: list[str] = []

    def __call__(self, query: str, limit: int) -> list[str]:
        from am.cache import vectors

        full = [h.id for h in self.index.search(query, limit=limit, statuses=self.STATUSES)]
        self.notes = []
        try:
            status = vectors.ensure(self.index, self.embedder, budget_s=self.budget_s)
            near = [h.id for h, _ in vectors.search(self.index, self.embedder, query, limit=limit,
                                                     statuses=self.STATUSES)]
        except Exception as err:  # noqa: BLE001 - an optional level's failure must not cost the user the answer
            self.notes.append(f"vector: failed ({type(err).__name__}: {err})")
            near = []
        else:
            if status.note():
                self.notes.append(status.note())
        fused = vectors.fuse(full, near)
        self.found = dict(fused)
        return [rid for rid, _ in fused][:limit]

    def served(self, held: Sequence[str]) -> tuple[str, tuple[str, ...]]:
        """Return the level that served the ids that hold, and notes counting how they were found."""
        from am.cache.vectors import levels_of

        found = [(rid, self.found.get(rid, "full-text")) for rid in held]
        counts = {how: sum(1 for _, h in found if h == how) for how in ("full-text+vector", "vector", "full-text")}
        notes = [*self.notes, f"vector: {counts['vector'] + counts['full-text+vector']} hits",
                 f"full-text: {counts['full-text'] + counts['full-text+vector']} hits",
                 f"found by both: {counts['full-text+vector']}"]
        return levels_of(found), tuple(notes)


def _words(query: str) -> list[str]:
    return [w for w in re.split(r"[\s,.;:!?，。；：！？、()\[\]\"'`]+", query.casefold()) if w]


def link_edges(records: Iterable[Topic | Fact | FactView],
               links: Iterable[tuple[str, str]] | None = None) -> list[tuple[str, str]]:
    """Return (topic, link target) edges of same-vault [[links]] in topic and fact bodies.

    ``links`` are (source id, target id) pairs already known (the cache's link
    table); without them the bodies are parsed.
    """
    by_id = {r.id: r for r in records}
    pairs: Iterable[tuple[str, str]]
    if links is None:
        from am.records.links import parse_links

        pairs = [(r.id, link.target) for r in by_id.values() if "[[" in r.body
                 for link in parse_links(r.body) if link.vault is None]
    else:
        pairs = links
    edges: list[tuple[str, str]] = []
    for source, target in pairs:
        record = by_id.get(source)
        if record is None:
            continue  # a record that does not hold here links nothing here
        sources = (record.id,) if isinstance(record, Topic) else record.topics
        edges.extend((s, target) for s in sources if s != target)
    return edges


def neighbourhood(start: Sequence[str], depth: int, *, topics: Mapping[str, Topic], facts: Mapping[str, Fact | FactView],
                  relations: Mapping[str, Relation],
                  links: Iterable[tuple[str, str]] | None = None) -> dict[str, int]:
    """Return {topic id: distance} within ``depth`` hops of the start topics (relations and links)."""
    import networkx as nx  # type: ignore[import-untyped]

    graph = nx.Graph()
    graph.add_nodes_from(sorted(topics))
    for rel in relations.values():
        graph.add_edge(rel.from_, rel.to)
    for a, b in link_edges([*topics.values(), *facts.values()], links):
        graph.add_edge(a, b)
    # Relations may end at a fact: step through it to the fact's topics.
    for fid, fact in facts.items():
        if fid in graph:
            for t in fact.topics:
                graph.add_edge(fid, t)
    found: dict[str, int] = {}
    for s in start:
        if s not in graph:
            continue
        for node, dist in nx.single_source_shortest_path_length(graph, s, cutoff=depth).items():
            if node in topics and dist < found.get(node, depth + 1):
                found[node] = dist
    return found


def _graph_level(query: str, *, topics: Mapping[str, Topic], facts: Mapping[str, Fact | FactView],
                 relations: Mapping[str, Relation], links: Iterable[tuple[str, str]] | None) -> list[str]:
    words = _words(query)
    whole = query.casefold().strip()
    seeds = []
    for tid in sorted(topics):
        t = topics[tid]
        names = [n.casefold() for n in (tid, t.title, *t.aliases) if n]
        # Chinese has no spaces: a name inside the query counts as well as a word inside a name.
        if any(n in whole for n in names if len(n) >= 2) or any(w in n for w in words if len(w) >= 2 for n in names):
            seeds.append(tid)
    if not seeds:
        return []
    near = neighbourhood(seeds, 1, topics=topics, facts=facts, relations=relations, links=links)
    return sorted(near, key=lambda tid: (near[tid], tid))


def _in_time(budget_s: float, began: float) -> float:
    return budget_s - (time.monotonic() - began)


def retrieve(query: str, *, topics: Mapping[str, Topic], facts: Mapping[str, Fact | FactView],
             relations: Mapping[str, Relation], search: SearchFn | None = None,
             backend: EmbeddingBackend | None = None, backend_note: str = "vector: not installed",
             links: Iterable[tuple[str, str]] | None = None, limit: int = 200,
             budget_s: float = 2.0) -> Retrieved:
    """Return the ids (facts and topics that hold) a query is about, and the level that served."""
    began = time.monotonic()
    notes: list[str] = []
    held = set(facts) | set(topics)

    def keep(ids: Iterable[str]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(i for i in ids if i in held))

    if backend is None:
        notes.append(backend_note)
    else:
        pool = ThreadPoolExecutor(max_workers=1)
        try:
            future = pool.submit(backend.search, query, limit=limit)
            hits = keep(i for i, _ in future.result(timeout=max(0.05, _in_time(budget_s, began) / 2)))
        except FutureTimeout:
            hits = ()
            notes.append(f"vector: timed out after {budget_s / 2:.1f} s")
        except Exception as err:  # an optional backend's failure must not cost the user the answer
            hits = ()
            notes.append(f"vector: failed ({type(err).__name__}: {err})")
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        if hits:
            notes.append(f"vector: {len(hits)} hits")
            return Retrieved("vector", hits, tuple(notes))
        if not any(n.startswith("vector: ") and ("failed" in n or "timed" in n) for n in notes):
            notes.append("vector: no match in this world")
    if search is None:
        notes.append("full-text: index unavailable")
    elif _in_time(budget_s, began) <= 0:
        notes.append("full-text: skipped, out of time")
    else:
        try:
            hits = keep(search(query, limit))
        except Exception as err:  # a damaged cache degrades to the graph; it is rebuilt next time
            hits = ()
            notes.append(f"full-text: failed ({type(err).__name__}: {err})")
        else:
            if hits and isinstance(search, HybridSearch):
                level, more = search.served(hits)
                return Retrieved(level, hits, (*notes, *more), tuple((i, search.found.get(i, "full-text"))
                                                                     for i in hits))
            if hits:
                notes.append(f"full-text: {len(hits)} hits")
                return Retrieved("full-text", hits, tuple(notes))
            notes.append("full-text: no match in this world" if not isinstance(search, HybridSearch)
                         else "vector and full-text: no match in this world")
    hits = keep(_graph_level(query, topics=topics, facts=facts, relations=relations, links=links))
    if hits:
        notes.append(f"graph: {len(hits)} topics from matching names")
        return Retrieved("graph", hits, tuple(notes))
    notes.append("graph: no topic name matches")
    return Retrieved("none", (), tuple(notes))


def follow_links(facts: Iterable[Fact], vault_name: str, setup: WorldSetup, *, open_vault: VaultOpener,
                 allowed: tuple[str, ...] | None = None) -> tuple[list[tuple[str, Record]], list[str]]:
    """Return the records that facts link in other vaults ([[vault:id]] or an obsidian:// link, one hop), judged in
    the same world.

    ``allowed`` names the vaults that may be opened (an agents' server reaches only those it was started
    with: a link an agent planted must not read a private vault); None, any registered one (a person's slice).
    Returns (vault name, record) pairs and a note for every link that could not be followed.
    """
    from am.errors import AmError
    from am.records.links import parse_links
    from am.registry import Registry
    from am.worlds.rules import judge

    wanted: dict[tuple[str, str], None] = {}
    for fact in facts:
        if ("[[" in fact.body and ":" in fact.body) or "obsidian://" in fact.body:  # [[vault:id]], or Obsidian's URI
            for link in parse_links(fact.body):
                if link.vault and link.vault != vault_name:
                    wanted.setdefault((link.vault, link.target), None)
    found: list[tuple[str, Record]] = []
    notes: list[str] = []
    if not wanted:
        return found, notes
    registry = Registry.load()
    opened: dict[str, VaultReader | None] = {}
    try:
        for name, target in sorted(wanted):
            shown = f"[[{name}:{target}]]"
            if name not in opened:
                opened[name] = None
                if allowed is not None and name not in allowed:
                    notes.append(f"{shown} not followed: this server reaches vault {name} only when started with "
                                 f"--link-vault {name}")
                    continue
                if name not in registry.vaults:
                    notes.append(f"{shown} not followed: no vault named {name} is registered")
                    continue
                try:
                    opened[name] = open_vault(registry.vaults[name])
                except AmError as err:  # one broken neighbour must not break the pack
                    notes.append(f"{shown} not followed: vault {name} cannot be opened ({err.message})")
                    continue
            other = opened[name]
            if other is None:
                if name not in registry.vaults and (allowed is None or name in allowed):
                    notes.append(f"{shown} not followed: no vault named {name} is registered")
                continue
            record = _named_record(other, target)
            if record is None:
                notes.append(f"{shown} not followed: vault {name} has no record {target}")
                continue
            if isinstance(record, (Fact, Relation)) and not judge(record, setup.world, setup.oracle).holds:
                notes.append(f"{shown} does not hold in this world")
                continue
            found.append((name, record))
    finally:
        for other in opened.values():
            if other is not None:
                other.close()
    return found, notes


def _named_record(vault: VaultReader, name: str) -> Record | None:
    """Return the record of ``vault`` a link names: by id, else by file name, title or alias (as Obsidian
    and am resolve a [[Name]]: am/records/names.py, through the vault's cache); None when nothing is named."""
    from am.errors import AmError
    from am.records.names import NOTE_PREFIX, name_key

    try:
        return vault.get(name)[1]
    except AmError:
        pass
    index = vault.cache()
    found = index.resolve_name_key(name_key(name)) if index is not None and hasattr(index, "resolve_name_key") else None
    if found is None or found.startswith(NOTE_PREFIX):
        return None
    try:
        return vault.get(found)[1]
    except AmError:
        return None

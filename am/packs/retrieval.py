"""Find the records a query is about, degrading from vectors to full text to the graph.

Levels, tried in order, each within what is left of a time budget:

1. ``vector``: an embedding backend, when this machine's configuration names
   one (``$AM_EMBEDDINGS``, else ``embeddings:`` in ``$AM_HOME/config.yml``):
   the name of an entry point in the ``am.embeddings`` group of an installed
   package, or ``module:factory``. Never from the vault: ``.am/vault.yml`` is
   someone else's file after a clone, so its ``embeddings`` key is only
   mentioned in the note. None ships with am, so by default this level
   reports ``vector: not configured``.
2. ``full-text``: the cache's full-text index (any ``search(query, limit)``
   callable returning ids, best first).
3. ``graph``: topics whose id, title or aliases match a word of the query,
   and their neighbours one hop away in the relation-and-link graph.
4. ``none``: nothing matched; the caller shows the world's top-ranked records
   and says so.

Only hits among the records that hold in the world count, so a level whose
hits all lie elsewhere lets the next one try. Every level that was tried is
named in ``Retrieved.notes``.
"""

from __future__ import annotations

import importlib
import os
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


ENTRY_POINT_GROUP = "am.embeddings"
MACHINE_CONFIG = "config.yml"  # in $AM_HOME: this machine's settings, never inside a vault


def configured_backend() -> tuple[str | None, str]:
    """Return the embedding backend this machine's configuration names, and where it was found.

    Only the user's own configuration counts: ``$AM_EMBEDDINGS``, else
    ``embeddings:`` in ``$AM_HOME/config.yml``. A vault is someone else's files
    (a clone, a pull request), so nothing in it may choose code to run.
    """
    spec = os.environ.get("AM_EMBEDDINGS", "").strip()
    if spec:
        return spec, "AM_EMBEDDINGS"
    from am.registry import am_home

    path = am_home() / MACHINE_CONFIG
    where = f"$AM_HOME/{MACHINE_CONFIG}"
    try:
        with open(path, "rb") as handle:
            data = handle.read(65536 + 1)
    except FileNotFoundError:
        return None, where
    except OSError as err:
        raise BackendError(f"cannot read {path} ({err.strerror})") from None
    from am.errors import InvalidRecordError
    from am.records.frontmatter import strict_load

    try:
        if len(data) > 65536:
            raise InvalidRecordError("larger than 64 KiB", path=str(path))
        settings = strict_load(data.decode("utf-8"), path=str(path)) if data.strip() else {}
    except (InvalidRecordError, UnicodeDecodeError) as err:
        raise BackendError(f"cannot read {path} ({err})") from None
    value = settings.get("embeddings") if isinstance(settings, dict) else None
    return (str(value).strip() or None) if value else None, where


class BackendError(Exception):
    """The machine's configuration of a backend cannot be read."""


def _factory(spec: str) -> Callable[[], EmbeddingBackend]:
    """Return the factory a spec names: an entry point of an installed package, or ``module[:factory]``."""
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINT_GROUP):
        if point.name == spec:
            return point.load()  # type: ignore[no-any-return]
    module_name, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module_name), attr or "backend")  # type: ignore[no-any-return]


def load_backend(settings: Mapping[str, Any] | None = None) -> tuple[EmbeddingBackend | None, str]:
    """Return the embedding backend this machine's configuration names (or None) and a note saying what happened.

    ``settings`` are the vault's (``.am/vault.yml``): an ``embeddings`` key there
    is never loaded, only mentioned in the note.
    """
    planted = (settings or {}).get("embeddings")
    ignored = (f"; .am/vault.yml names {str(planted)[:80]!r}, which am never loads (a vault cannot choose code: "
               "set AM_EMBEDDINGS or embeddings: in $AM_HOME/config.yml)") if planted else ""
    try:
        spec, where = configured_backend()
    except BackendError as err:
        return None, f"vector: {err}{ignored}"
    if not spec:
        return None, f"vector: not configured{ignored}"
    try:
        backend: EmbeddingBackend = _factory(spec)()
    except Exception as err:  # noqa: BLE001 - a broken optional backend must never break a slice
        return None, f"vector: backend {spec} ({where}) failed to load ({type(err).__name__}: {err}){ignored}"
    return backend, f"vector: {getattr(backend, 'name', spec)}{ignored}"


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
             backend: EmbeddingBackend | None = None, backend_note: str = "vector: not configured",
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
            if hits:
                notes.append(f"full-text: {len(hits)} hits")
                return Retrieved("full-text", hits, tuple(notes))
            notes.append("full-text: no match in this world")
    hits = keep(_graph_level(query, topics=topics, facts=facts, relations=relations, links=links))
    if hits:
        notes.append(f"graph: {len(hits)} topics from matching names")
        return Retrieved("graph", hits, tuple(notes))
    notes.append("graph: no topic name matches")
    return Retrieved("none", (), tuple(notes))


def follow_links(facts: Iterable[Fact], vault_name: str, setup: WorldSetup, *,
                 open_vault: VaultOpener) -> tuple[list[tuple[str, Record]], list[str]]:
    """Return the records that facts link in other vaults ([[vault:id]], one hop), judged in the same world.

    Returns (vault name, record) pairs and a note for every link that could not be followed.
    """
    from am.errors import AmError
    from am.records.links import parse_links
    from am.registry import Registry
    from am.worlds.rules import judge

    wanted: dict[tuple[str, str], None] = {}
    for fact in facts:
        if "[[" in fact.body and ":" in fact.body:
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
                if name not in registry.vaults:
                    notes.append(f"{shown} not followed: no vault named {name} is registered")
                continue
            try:
                _, record = other.get(target)
            except AmError:
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

"""A slice straight from the cache: worlds judged per distinct value, only the shown facts decoded.

For every scope but --as-of and a query's graph level, a pack
needs the counts of what holds, the supersession in the world, and the
best-ranked facts until the budget is full. ``cached_pack`` gets them without
building a Python object per fact:

- facts are grouped in SQL by their world fields (status, repo, branch,
  commit, until_commit, valid time), and ``am.worlds.rules.judge`` decides each
  distinct group once; verdicts, rules and counts are therefore resolve()'s,
  and the ancestry oracle is asked once per distinct commit;
- SQL returns the supersession edges whose two ends may hold in the world;
  an edge hides its old fact when both ends' groups hold and the new one is
  believed (resolve()'s rule, applied in its order);
- facts are read best first along an index (pinned, confidence, newest, id)
  and decoded a chunk at a time until the budget is full; the rest are counted;
- with ``--query``, when the full-text level serves (no embedding backend, and
  a hit holds), only the hits and the facts about them are judged and ranked;
- with ``--topic ID --depth N``, the neighbourhood is walked on the graph
  ``am.packs.retrieval.neighbourhood`` builds, from the relations that hold and the
  cache's link rows (a fact source judged by its world fields), then only the
  facts about the topics reached are judged and ranked.

It returns None when two files share an id (the first-by-path rule needs
every row), and the caller takes the general path. Both paths give
byte-identical packs (tests/test_slice_cache.py holds them equal).

Decisions: docs/decisions/packs.md.
"""

from __future__ import annotations

import heapq
from collections.abc import Generator
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from am.cache.rows import record_from_json
from am.records.model import RELATION_TYPES, Fact, Relation, Topic
from am.packs.assemble import fill, ids_of, stale_lookup, topic_scope
from am.packs.pack import Pack, SliceRequest, clean_text
from am.packs.worldmemo import remembered
from am.worlds.rules import (
    WHY_PENDING,
    WHY_SUPERSEDED,
    AncestryOracle,
    FactView,
    Resolution,
    Verdict,
    World,
    judge,
)

if TYPE_CHECKING:
    from am.cache.usage import UseSignals
    from am.cache.index import Index
    from am.worlds.ancestry import WorldSetup
    from am.packs.retrieval import Retrieved, SearchFn

__all__ = ["cached_pack", "held_counts", "held_watching"]

_Key = tuple[Any, ...]  # status, repo, version, commit, until_commit, valid_from, valid_until
_BELIEVED = ("active", "contested")
_CONFIDENCE_RANK = {"high": 0, "medium": 1, "low": 2}
_NEVER = float("inf")


class _RelationView(NamedTuple):
    """What a pack needs of a relation before it is shown."""

    id: str
    rel: str
    from_: str
    to: str
    status: str


class _Judge:
    """Verdicts per distinct combination of world fields, each decided once by ``am.worlds.rules.judge``."""

    def __init__(self, world: World, oracle: AncestryOracle | None) -> None:
        self.world, self.oracle = world, oracle
        self.known: dict[_Key, Verdict] = {}

    def __call__(self, key: _Key) -> Verdict:
        found = self.known.get(key)
        if found is None:
            status, repo, version, commit, until, start, end = key
            view = FactView("", status, "medium", repo, version, commit, until, start, end, (), None, False, None, ())
            found = self.known[key] = judge(view, self.world, self.oracle)
        return found


def _key(values: tuple[Any, ...] | list[Any]) -> _Key:
    # A record without a status is active (as the general path reads the cache).
    return ("active" if values[0] is None else values[0], *values[1:7])


def cached_pack(index: Index, request: SliceRequest, setup: WorldSetup, *, vault_name: str,
                vault_commit: str | None, search: SearchFn | None = None,
                backend_note: str = "vector: not installed", signals: UseSignals | None = None) -> Pack | None:
    """Build a pack from the cache in pieces; None when the general path must do it.

    ``signals`` (use and age, am/cache/usage.py) rank after pinned (and a query's order):
    promoted, then new or recently used, then demoted facts.

    Serves every topic, and ``--query`` when no embedding backend is configured
    and the full-text index finds something that holds (``search(query, limit)``
    is the cache's search), and ``--topic ID --depth N`` (the neighbourhood
    from the cache's relation and link rows); the graph level needs the whole
    world's topics matched against the query, so it takes the general path.
    """

    if (request.query and search is None) or index.has_twins():
        return None
    if request.topic is not None and not index.records(type="topic", ids=[request.topic]):
        return None  # the general path names the missing topic
    world = setup.world
    verdict = _Judge(world, setup.oracle)
    res, never, hidden = remembered(index, world, setup.oracle, False, verdict.known,
                                    lambda times: _resolution(index, world, verdict, times=times))
    topics = res.topics
    if request.query:
        assert search is not None
        found_q = _query_scope(index, request.query, search, backend_note, verdict, hidden, topics, signals)
        if found_q is None:
            return None
        retrieved, chosen, scope_topics = found_q
        pack = Pack(request, setup, vault_name, vault_commit, res,
                    f"query \"{clean_text(request.query)}\" (served by: {retrieved.level})", retrieval=retrieved)
        ranked: Generator[Fact | None, None, None] = _loaded(index, chosen)
        total = len(chosen)
    elif request.topic is not None:
        scope_topics = _near(index, request.topic, request.depth, topics, res.relations.values(), verdict, hidden)
        ranked, total = _facts_about(index, world, never, scope_topics, verdict, hidden, res.fact_counts()[0],
                                     signals)
        pack = Pack(request, setup, vault_name, vault_commit, res, topic_scope(request))
    else:
        pack = Pack(request, setup, vault_name, vault_commit, res, "every topic")
        ranked, scope_topics = _ranked(index, world, never, verdict, hidden, signals=signals), set(topics)
        total = res.fact_counts()[0]
    pack.stale_lookup = _stale_lookup(index, setup)
    pack.dirty = len(index.dirty_paths()) if hasattr(index, "dirty_paths") else 0
    in_scope = [r for r in res.relations.values() if r.from_ in scope_topics and r.to in scope_topics]
    try:
        fill(pack, ranked, total, scope_topics, in_scope, topics)
    finally:
        ranked.close()
    if pack.relations:
        full = {r.id: r for _, r in index.records(ids=[r.id for r in pack.relations]) if isinstance(r, Relation)}
        pack.relations[:] = [full.get(r.id, r) for r in pack.relations]
        pack.order = [(kind, full.get(item.id, item) if kind == "relations" else item, holder)
                      for kind, item, holder in pack.order]
    return pack


def held_counts(index: Index, setup: WorldSetup) -> tuple[int, int] | None:
    """Return how many facts hold in the world and how many of them are contested, with no pack built.

    The counts of ``cached_pack``'s header (the facts of a ``--max-tokens 0`` pack of every topic), judged
    per distinct world fields; None when two files share an id (only the general path can count then).
    """
    if index.has_twins():
        return None
    world = setup.world
    verdict = _Judge(world, setup.oracle)
    res, _, _ = remembered(index, world, setup.oracle, True, verdict.known,
                           lambda times: _resolution(index, world, verdict, counts_only=True, times=times))
    return res.fact_counts()


def held_watching(index: Index, setup: WorldSetup) -> tuple[list[Fact], Any] | None:
    """Return the facts of ``cached_pack``'s ``--max-tokens 0`` pack of every topic that watch code paths
    (sorted by id), and the world's staleness lookup, with no pack built: only those facts decoded.

    None when two files share an id (only the general path can tell then).
    """
    if index.has_twins() or not hasattr(index, "watching_facts"):
        return None
    world = setup.world
    verdict = _Judge(world, setup.oracle)
    never = ("expired", "superseded") + (() if world.include_pending else (WHY_PENDING,))
    hidden = _hidden(index, world, never, verdict)
    facts = [f for row in index.watching_facts(repo=world.repo, dropped=never)
             if row[0] not in hidden and verdict(_key(row[1:8])).holds
             and isinstance(f := record_from_json("fact", row[8]), Fact)]
    return facts, _stale_lookup(index, setup)


def _stale_lookup(index: Any, setup: WorldSetup) -> Any:
    """Return the world's staleness lookup (DESIGN §5.6); the watching facts are read from SQL only when needed."""
    from am.worlds.stale import WatchedFact

    repo = setup.world.repo
    if repo is None or setup.oracle is None or not hasattr(index, "watched_facts"):
        return None

    def watched() -> list[WatchedFact]:
        return [WatchedFact(r[0], r[4], ids_of(r[8])) for r in index.watched_facts(repo=repo) if r[4]]

    return stale_lookup(setup, watched)


def _resolution(index: Index, world: World, verdict: _Judge, *, counts_only: bool = False,
                times: list[str | None]) -> tuple[Resolution, tuple[str, ...], dict[str, tuple[str, _Key]]]:
    """Return what holds in the world (facts only counted; topics and relations that hold, unless
    ``counts_only``), the statuses that never hold there, and the facts superseded here; the valid-time
    bounds of every fact and relation judged are added to ``times`` (am/packs/worldmemo.py)."""
    res = Resolution()
    held = contested = 0
    for row in index.fact_world_groups():
        key, count = _key(row), row[7]
        times += key[5:7]
        found = verdict(key)
        if not found.holds:
            why = found.why or key[0]
            res.excluded[why] = res.excluded.get(why, 0) + count
            continue
        held += count
        contested += count if key[0] == "contested" else 0
        res.rules[found.rule] = res.rules.get(found.rule, 0) + count
    never = ("expired", "superseded") + (() if world.include_pending else (WHY_PENDING,))
    hidden = _hidden(index, world, never, verdict)
    for _, old_key in hidden.values():
        rule = verdict(old_key).rule
        held -= 1
        contested -= old_key[0] == "contested"
        res.rules[rule] -= 1
        if not res.rules[rule]:
            del res.rules[rule]
    if hidden:
        res.excluded[WHY_SUPERSEDED] = res.excluded.get(WHY_SUPERSEDED, 0) + len(hidden)
        res.superseded_here = {old: new for old, (new, _) in sorted(hidden.items())}
    res.counted = (held, contested)
    if counts_only:
        return res, never, hidden
    statuses = _BELIEVED + (("pending-review",) if world.include_pending else ())
    topics = cast(dict[str, Topic], {t.id: t for t in index.topic_values(statuses=statuses)})
    res.topics = topics
    for rid, rel, src, dst, *fields in index.relation_world_rows():
        key = _key(fields)
        times += key[5:7]
        if rel in RELATION_TYPES and verdict(key).holds and src not in hidden and dst not in hidden:
            res.relations[rid] = _RelationView(rid, rel, src, dst, key[0])  # type: ignore[assignment]
    return res, never, hidden


def _query_scope(index: Index, query: str, search: SearchFn, note: str, verdict: _Judge,
                 hidden: dict[str, tuple[str, _Key]], topics: dict[str, Topic],
                 signals: UseSignals | None = None) -> tuple[Retrieved, list[str], set[str]] | None:
    """Return what the full-text level retrieves, the facts in scope (ranked ids) and the topics in scope.

    As ``am.packs.retrieval.retrieve`` and ``am.packs.slice._scope_facts`` do on the whole
    world: hits that hold, in search order; the facts that are hits or are about
    a hit; the topics that are hits or that a hit fact is about. None when the
    search fails or nothing it finds holds (the general path then tries the graph).
    """
    from am.packs.retrieval import Retrieved

    try:
        raw = list(search(query, 200))
    except Exception:  # noqa: BLE001 -- the general path runs the search again and names the failure
        return None
    held = {r[0] for r in index.fact_rows_about(raw, members=False)
            if r[0] not in hidden and verdict(_key(r[1:8])).holds}
    hits = tuple(dict.fromkeys(i for i in raw if i in held or i in topics))
    if not hits:
        return None
    hit = set(hits)
    about = [r for r in index.fact_rows_about(hits) if r[0] not in hidden and verdict(_key(r[1:8])).holds]
    chosen = [r for r in about if r[0] in hit or hit.intersection(ids_of(r[11]))]
    scope = {t for t in hits if t in topics} | {t for r in chosen if r[0] in hit for t in ids_of(r[11])}
    order = {i: n for n, i in enumerate(hits)}
    last = len(order)
    chosen.sort(key=lambda r: (not r[8], order.get(r[0], last), _tier(signals, r), _CONFIDENCE_RANK.get("medium" if r[9] is None else r[9], 3),
                               _NEVER if r[10] is None else -r[10], r[0]))
    served = getattr(search, "served", None)  # a HybridSearch: vectors fused in
    if served is not None:
        level, more = served(hits)
        found = tuple((i, search.found.get(i, "full-text")) for i in hits)  # type: ignore[attr-defined]
        return Retrieved(level, hits, (note, *more), found), [r[0] for r in chosen], scope
    notes = (note, f"full-text: {len(hits)} hits")
    return Retrieved("full-text", hits, notes), [r[0] for r in chosen], scope


def _held(rows: Any, verdict: _Judge, hidden: dict[str, tuple[str, _Key]]) -> dict[str, tuple[str, ...]]:
    """Return {id: topics} of the rows' facts (id, 7 world fields, ..., topics last) that hold, not superseded here."""

    return {r[0]: ids_of(r[-1]) for r in rows if r[0] not in hidden and verdict(_key(r[1:8])).holds}


def _near(index: Index, start: str, depth: int, topics: dict[str, Topic], relations: Any, verdict: _Judge,
          hidden: dict[str, tuple[str, _Key]]) -> set[str]:
    """Return the topics within ``depth`` hops of ``start``, as ``am.packs.retrieval.neighbourhood`` finds them.

    The same undirected graph: topics that hold; relations that hold; same-vault
    links (a topic links itself, a fact that holds links its topics, a fact
    winning over a topic with its id; a dangling target is a node too); then, in
    id order, each fact that holds and is a node of the graph joins its topics.
    The facts' link edges are read from SQL only around the nodes the walk
    reaches (and around facts' ids, which may step through).
    """
    adj: dict[str, set[str]] = {}

    def edge(a: str, b: str) -> None:
        adj.setdefault(a, set()).add(b)
        adj.setdefault(b, set()).add(a)

    def fact_links(rows: list[tuple[Any, ...]]) -> Generator[tuple[str, str], None, None]:
        for topic, target, fid, *fields in rows:
            if topic != target and fid not in hidden and verdict(_key(fields)).holds:
                yield topic, target

    for rel in relations:
        edge(rel.from_, rel.to)
    # Links of topics and relations (a fact that holds with their id takes them), and of facts that do not
    # hold here but share their id with a topic that does.
    rows = index.link_rows(sorted(topics))
    others = {r[0] for r in rows}
    held = _held(index.fact_rows_about(sorted(others), members=False), verdict, hidden) if others else {}
    for source, target, kind, *_ in rows:
        about = held.get(source)
        if about is None:
            if source not in topics:
                continue  # a record that does not hold here links nothing here
            about = (source,)
        elif kind == "fact":
            continue  # a fact that holds: its links are read with the other facts'
        for s in about:
            if s != target:
                edge(s, target)
    # Facts that hold and are link targets or linking facts' topics: their link edges decide whether they
    # are nodes, so they are read now.
    targets, members = index.link_ends()
    maybe = (set(targets) | set(members)) - topics.keys()
    if maybe:
        fact_ids = _held(index.fact_rows_about(sorted(maybe), members=False), verdict, hidden)
        if fact_ids:
            for a, b in fact_links(index.fact_links_touching(sorted(fact_ids))):
                edge(a, b)
    # Facts that hold and are nodes step through to their topics, in id order; a topic one of them
    # adds that is a later fact's id makes that fact a node before its turn.
    nodes = topics.keys() | adj.keys()
    found = _held(index.fact_rows_about(sorted(nodes), members=False), verdict, hidden)
    queue = sorted(found)
    heapq.heapify(queue)
    while queue:
        fid = heapq.heappop(queue)
        new = [t for t in found[fid] if t > fid and t not in nodes]
        for t in found[fid]:
            edge(fid, t)
            nodes.add(t)
        if new:
            more = _held(index.fact_rows_about(sorted(set(new)), members=False), verdict, hidden)
            for t in more.keys() - found.keys():
                found[t] = more[t]
                heapq.heappush(queue, t)
    # Breadth first; a start that is no node of the graph reaches nothing.
    seen, frontier = {start}, [start]
    for _ in range(depth):
        if not frontier:
            break
        around = set(frontier)
        ends = [b for a in frontier for b in adj.get(a, ())]
        for topic, target in fact_links(index.fact_links_touching(sorted(around))):
            if topic in around:
                ends.append(target)
            if target in around:
                ends.append(topic)
        frontier = []
        for b in ends:
            if b not in seen:
                seen.add(b)
                frontier.append(b)
    return {start} | (seen & topics.keys())


_DENSE = 0.25  # a scope with this share of the world's facts is read along the rank index, not by topic


def _facts_about(index: Index, world: World, never: tuple[str, ...], near: set[str], verdict: _Judge,
                 hidden: dict[str, tuple[str, _Key]], held: int,
                 signals: UseSignals | None = None) -> tuple[Generator[Fact | None, None, None], int]:
    """Return the facts about these topics that hold and are not superseded here, best ranked first, and
    how many they are."""

    counts = index.fact_world_counts_about(sorted(near))
    total = sum(row[7] for row in counts if verdict(_key(row)).holds)
    if hidden:
        total -= sum(1 for r in index.fact_rows_about(sorted(hidden), members=False)
                     if near.intersection(ids_of(r[11])))
    if total < held * _DENSE:
        rows = [r for r in index.fact_rows_about(sorted(near))
                if r[0] not in hidden and near.intersection(ids_of(r[11])) and verdict(_key(r[1:8])).holds]
        rows.sort(key=lambda r: (not r[8], _tier(signals, r), _CONFIDENCE_RANK.get("medium" if r[9] is None else r[9], 3),
                                 _NEVER if r[10] is None else -r[10], r[0]))
        return _loaded(index, [r[0] for r in rows]), total
    return _ranked(index, world, never, verdict, hidden, near, signals), total


def _loaded(index: Index, ids: list[str]) -> Generator[Fact | None, None, None]:
    """Yield the facts with these ids in full, in this order, reading them 200 at a time (None: gone)."""
    for at in range(0, len(ids), 200):
        batch = ids[at:at + 200]
        found: dict[str, Fact] = {}
        for _, record in index.records(ids=batch):
            if isinstance(record, Fact):
                found.setdefault(record.id, record)
        for fid in batch:
            yield found.get(fid)


def _hidden(index: Index, world: World, never: tuple[str, ...], verdict: _Judge) -> dict[str, tuple[str, _Key]]:
    """Return the facts superseded in this world: old id -> (the new id that hides it, the old one's fields)."""
    by_list, by_link = index.supersession_edges(repo=world.repo, dropped=never, believed=_BELIEVED)
    hidden: dict[str, tuple[str, _Key]] = {}
    # resolve() takes the 'supersedes' lists first, then 'superseded_by'; the first edge to hide a fact names it.
    for edges in (by_list, by_link):
        for row in edges:
            new_id, new_key, old_id, old_key = row[0], _key(row[1:8]), row[8], _key(row[9:16])
            if old_id not in hidden and verdict(new_key).holds and verdict(old_key).holds:
                hidden[old_id] = (new_id, old_key)
    return hidden


def _tier(signals: UseSignals | None, row: tuple[Any, ...]) -> int:
    """Return the use-and-age tier of a fact_rows_about row (id, 7 world fields, pinned, conf, created_ts, ...)."""
    return 0 if signals is None else signals.tier(row[0], row[10], bool(row[8]))


def _ranked(index: Index, world: World, never: tuple[str, ...], verdict: _Judge,
            hidden: dict[str, tuple[str, _Key]], near: set[str] | None = None,
            signals: UseSignals | None = None) -> Generator[Fact, None, None]:
    """Yield the facts that hold and are not superseded here (and are about one of ``near``), in full,
    best ranked first (with ``signals``: pinned, promoted, new or recently used, demoted; each by rank)."""
    tiers = None if signals is None else (signals.promoted, signals.recent, signals.cutoff)
    for row in index.ranked_facts(repo=world.repo, dropped=never, topics=near is not None, tiers=tiers):
        if row[0] in hidden or not verdict(_key(row[1:8])).holds:
            continue
        if near is not None and not near.intersection(ids_of(row[8])):
            continue
        fact = record_from_json("fact", row[-1])
        assert isinstance(fact, Fact)
        yield fact

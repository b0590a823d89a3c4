"""Context packs: what holds in a world, ranked, cut to a token budget, rendered (DESIGN §6).

``build_pack(records, request, setup, ...)`` is pure: it takes any iterable of
records (the cache, a work-tree scan, or a past commit's tree) and the world
(``am.worlds.ancestry.setup_world``), and returns a ``Pack``; ``am.packs.pack`` renders it
(``render_markdown``, ``render_json``, re-exported here), and the same records
and request give byte-identical output. ``slice_vault(vault, request)`` does
the I/O around it.

Ranking: pinned facts first, then (with --query) the retrieval order, then
confidence, then recency, then id. The budget admits facts in that order, a
topic's heading with its first fact, then relations among the shown topics;
whatever does not fit is counted in the pack, with the way to get it.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from am.errors import NotFoundError, UsageError
from am.records.model import Fact, Record, Relation, Topic
from am.packs.pack import (
    DEFAULT_MAX_TOKENS,
    Pack,
    SliceRequest,
    clean_text,
    estimate_tokens,
    fact_markdown,
    is_home_topic,
    placeholder_topic,
    relation_markdown,
    render_json,
    render_markdown,
    topic_markdown,
)
from am.worlds.rules import (
    WHY_PENDING,
    WHY_REPO,
    FactView,
    Resolution,
    World,
    resolve,
    to_moment,
)

Loader = Callable[[Sequence[str]], Mapping[str, Fact]]

if TYPE_CHECKING:
    from am.worlds.ancestry import WorldSetup
    from am.packs.retrieval import Retrieved
    from am.vault import Vault

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "SliceRequest",
    "Pack",
    "estimate_tokens",
    "build_pack",
    "render_markdown",
    "render_json",
    "slice_vault",
]

_CONFIDENCE_RANK = {"high": 0, "medium": 1, "low": 2}
_LEFT_OUT_FACT_TOKENS = 120
_NO_TIME = datetime(1, 1, 2, tzinfo=timezone.utc)
_RANK_OF = attrgetter("rank")


def _created(record: Fact | FactView) -> datetime:
    """Return when a fact was written, as an aware moment (naive: local time; unknown: long ago)."""
    if not record.created:
        return _NO_TIME
    try:
        moment = datetime.fromisoformat(record.created)
    except ValueError:
        moment = to_moment(record.created) or _NO_TIME
    return moment if moment.tzinfo is not None else moment.astimezone()


def _rank(facts: list[Fact | FactView], order: Mapping[str, int]) -> None:
    """Sort facts best first: pinned, retrieval order, confidence, newest, id."""
    # Stable sorts applied from the last key to the first; each key is cheap to compare.
    last = len(order)
    if all(isinstance(f, FactView) and f.rank >= 0 for f in facts):
        # The cache ranked them by (pinned, confidence, newest, id): only the retrieval order is left.
        if order:
            facts.sort(key=lambda f: (not f.pinned, order.get(f.id, last), _RANK_OF(f)))
        else:
            facts.sort(key=_RANK_OF)
        return
    facts.sort(key=lambda f: f.id)
    facts.sort(key=_created, reverse=True)
    facts.sort(key=lambda f: (not f.pinned, order.get(f.id, last), _CONFIDENCE_RANK.get(f.confidence, 3)))


def topic_scope(request: SliceRequest) -> str:
    """Describe the scope of ``--topic ID --depth N``."""
    return f"the neighbourhood of `{request.topic}` within {request.depth} hop{'s' * (request.depth != 1)}"


def _scope_facts(res: Resolution, request: SliceRequest, retrieved: Retrieved | None,
                 near: Mapping[str, int] | None) -> tuple[list[Fact | FactView], set[str], str]:
    """Return the facts and topics in scope, and a description of the scope."""
    facts = list(res.facts.values())
    if near is not None:
        topics = set(near)
        return [f for f in facts if topics.intersection(f.topics)], topics, topic_scope(request)
    if retrieved is not None:
        scope = f"query \"{clean_text(request.query or '')}\" (served by: {retrieved.level})"
        if retrieved.level == "none":
            return facts, set(res.topics), scope + "; nothing matched, so the world's top-ranked records follow"
        hit = set(retrieved.ids)
        chosen = [f for f in facts if f.id in hit or hit.intersection(f.topics)]
        topics = {t for t in hit if t in res.topics} | {t for f in chosen for t in f.topics if f.id in hit}
        return chosen, topics, scope
    return facts, set(res.topics), "every topic"


def build_pack(records: Iterable[Record | FactView], request: SliceRequest, setup: WorldSetup, *,
               vault_name: str, vault_commit: str | None, search: Any = None,
               backend: Any = None, backend_note: str = "vector: not configured",
               links: Any = None, load: Loader | None = None, dropped: Mapping[str, int] | None = None) -> Pack:
    """Resolve records in the world, choose the scope, rank, and fill the budget.

    Facts may come as ``FactView`` (no body); ``load(ids)`` then returns the
    full facts, and is asked only for the facts the budget admits; ``dropped`` counts
    facts the source already left out (why -> how many), for the header.
    """
    res = resolve(records, setup.world, setup.oracle)
    for why, count in (dropped or {}).items():
        res.excluded[why] = res.excluded.get(why, 0) + count
    near: dict[str, int] | None = None
    retrieved: Retrieved | None = None
    if request.topic is not None:
        if request.topic not in res.all_topics:
            raise NotFoundError(f"no topic {request.topic!r} in the vault", hint="list them with: am topic list")
        from am.packs.retrieval import neighbourhood

        near = neighbourhood([request.topic], request.depth, topics=res.topics, facts=res.facts,
                             relations=res.relations, links=links)
        near.setdefault(request.topic, 0)
    elif request.query:
        from am.packs.retrieval import retrieve

        retrieved = retrieve(request.query, topics=res.topics, facts=res.facts, relations=res.relations,
                             search=search, backend=backend, backend_note=backend_note, links=links)
    facts, topic_ids, scope = _scope_facts(res, request, retrieved, near)
    order = {} if retrieved is None else {i: n for n, i in enumerate(retrieved.ids)}
    _rank(facts, order)
    pack = Pack(request, setup, vault_name, vault_commit, res, scope, retrieval=retrieved)
    relations = sorted((r for r in res.relations.values()
                        if r.from_ in topic_ids and r.to in topic_ids), key=lambda r: r.id)
    loaded: dict[str, Fact] = {}
    fill(pack, (_full(facts, n, loaded, load) for n in range(len(facts))), len(facts), topic_ids, relations,
         res.topics)
    return pack


def _full(facts: list[Fact | FactView], n: int, cache: dict[str, Fact], load: Loader | None) -> Fact | None:
    """Return the n-th fact in full, loading it and the next few in one batch when needed."""
    fact = facts[n]
    if isinstance(fact, Fact):
        return fact
    if fact.id not in cache and load is not None:
        batch = [f.id for f in facts[n:n + 200] if not isinstance(f, Fact)]
        cache.update(load(batch))
    return cache.get(fact.id)


def fill(pack: Pack, ranked: Iterable[Fact | None], total: int, topic_ids: Collection[str],
         relations: Sequence[Relation], topics: Mapping[str, Topic]) -> None:
    """Admit facts, topic headings and relations in rank order while the budget lasts.

    ``ranked`` yields the ``total`` facts in scope in full, best first (None:
    a fact whose file went away); it is read only as far as the budget goes.
    ``topics`` are the topics that hold, by id.
    """
    budget = pack.request.max_tokens or None
    # Room for the header and the closing note, whose size barely depends on the content.
    used = 260 + estimate_tokens(pack.scope) + 40 * len(pack.setup.notes)
    opened: dict[str, list[Fact]] = {}
    section_rank: dict[str, int] = {}
    left = {"facts": 0, "topics": 0, "relations": 0}
    needed = used

    def fits(cost: int) -> bool:
        nonlocal needed
        needed += cost
        return budget is None or used + cost <= budget

    for n, fact in enumerate(ranked):
        if fact is None:  # its file went away between the two reads of the cache
            left["facts"] += 1
            continue
        section = next((t for t in fact.topics if t in topic_ids), fact.topics[0] if fact.topics else "")
        cost = estimate_tokens(fact_markdown(fact, section))
        is_main = fact.status == "active"
        if is_main and section not in opened:
            cost += estimate_tokens(topic_markdown(topics.get(section) or placeholder_topic(section)))
        if not fits(cost):
            # The cut is a prefix of the ranking; what follows is only counted, with a generous
            # size per fact (1-3 sentences and a meta line), so the hint gets them all.
            rest = total - n - 1
            left["facts"] += 1 + rest
            needed += rest * _LEFT_OUT_FACT_TOKENS
            break
        used += cost
        if fact.status == "contested":
            pack.contested.append(fact)
        elif fact.status == "pending-review":
            pack.pending.append(fact)
        else:
            opened.setdefault(section, []).append(fact)
            section_rank.setdefault(section, n)
    # Topics in scope with nothing shown yet still tell the agent what exists.
    for tid in sorted(set(topic_ids) - set(opened)):
        topic = topics.get(tid)
        if topic is None:
            continue
        cost = estimate_tokens(topic_markdown(topic))
        if fits(cost):
            used += cost
            opened[tid] = []
            section_rank[tid] = total
        else:
            left["topics"] += 1
    for rel in relations:
        if rel.from_ in opened and rel.to in opened:
            cost = estimate_tokens(relation_markdown(rel))
            if fits(cost):
                used += cost
                pack.relations.append(rel)
                continue
        left["relations"] += 1
    # The world's own project comes first: it is what the agent is working on.
    home = pack.setup.world.repo
    pack.sections = [(topics.get(tid) or placeholder_topic(tid), opened[tid])
                     for tid in sorted(opened, key=lambda t: (not is_home_topic(t, home), section_rank[t], t))]
    pack.left_out = left
    pack.needed = needed


def _open_index(vault: Vault) -> Any:
    """Return the vault's cache, fresh, or None when it cannot be used (then the files are scanned)."""
    opener = getattr(vault, "cache", None)
    if opener is None:
        return None
    try:
        return opener()
    except ImportError:
        return None
    except Exception as err:  # the cache is disposable; a slice never fails because of it
        import logging

        logging.getLogger("am").warning("slice reads the files instead of the cache: %s", err)
        return None


def _from_cache(index: Any, world: World | None = None) -> tuple[list[Record | FactView], Loader | None,
                                                                  dict[str, int] | None]:
    """Read topics and relations in full and facts as views; return them, the loader of full facts, and the
    count of facts left out by SQL (with a world: facts that cannot hold there are neither read nor ranked)."""
    rows = getattr(index, "fact_world_rows", None)
    if rows is None:
        return [r for _, r in index.records()], None, None
    values = getattr(index, "record_values", None)
    if values is not None:
        out: list[Record | FactView] = [*values(type="topic"), *values(type="relation")]
    else:
        out = [r for _, r in index.records(type="topic")] + [r for _, r in index.records(type="relation")]
    dropped: dict[str, int] | None = None
    # Two files with one id: the first by path wins in resolve(), so every row must reach it in id order.
    if world is not None and not index.has_duplicate_facts():
        never = ("expired", "superseded") + (() if world.include_pending else (WHY_PENDING,))
        found = index.fact_world_rows(repo=world.repo, dropped=never)
        dropped = {WHY_REPO if status is None else status: n
                   for status, n in index.fact_world_dropped(repo=world.repo, dropped=never).items()}
    else:
        found = index.fact_world_rows()
    view, ids, ranked = FactView, _ids, dropped is not None
    for rank, (fid, status, confidence, repo, version, commit, until, start, end, supersedes, successor, pinned,
               created, topics, _) in enumerate(found):
        out.append(view(fid, status, confidence, repo, version, commit, until, start, end,
                        () if supersedes is None else ids(supersedes), successor, pinned == 1, created, ids(topics),
                        rank if ranked else -1))

    def load(ids: Sequence[str]) -> dict[str, Fact]:
        found: dict[str, Fact] = {}
        for _, record in index.records(ids=ids):
            if isinstance(record, Fact):
                found.setdefault(record.id, record)
        return found

    return out, load, dropped


def _ids(text: str | None) -> tuple[str, ...]:
    if not text or text == "[]":
        return ()
    if "\\" in text:
        return tuple(json.loads(text))
    # Without escapes, a JSON list of strings splits plainly (and ten times faster than json.loads).
    return tuple(text[2:-2].split('","'))


class _CachedLinks:
    """The cache's same-vault (source, target) link pairs, read when first iterated (a query's full-text
    level usually serves before the graph level needs them)."""

    def __init__(self, index: Any) -> None:
        self.index = index
        self.pairs: list[tuple[str, str]] | None = None

    def __iter__(self) -> Iterator[tuple[str, str]]:
        if self.pairs is None:
            self.pairs = list(self.index.link_pairs())
        return iter(self.pairs)


def _search_fn(index: Any) -> Any:
    """Return the cache's full-text search as ``search(query, limit) -> ids``, or None without a cache."""
    if index is None:
        return None

    def search(query: str, limit: int) -> list[str]:
        hits = index.search(query, limit=limit, statuses=("active", "contested", "pending-review"))
        return [hit.id for hit in hits]

    return search


def slice_vault(vault: Vault, request: SliceRequest, *, records: Iterable[Record | FactView] | None = None) -> Pack:
    """Build the pack of a vault for a request: choose the record source, the world and the retrieval."""
    # Reading 100k records makes no reference cycles, but would trigger a dozen full
    # collections that walk every one of them (about a fifth of a large slice).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _slice_vault(vault, request, records)
    finally:
        if collecting:
            gc.enable()


def _slice_vault(vault: Vault, request: SliceRequest, records: Iterable[Record | FactView] | None) -> Pack:
    from am.worlds.ancestry import now, records_at, setup_world

    if request.depth < 0:
        raise UsageError("--depth must be 0 or more")
    if request.topic and request.query:
        raise UsageError("--topic and --query choose the scope in two ways; give one of them")
    at = request.at or now()
    setup = setup_world(request.repo, request.branch, request.commit, at=at,
                        include_pending=request.include_pending, cache_dir=vault.root / ".am" / "cache" / "ancestry")
    commit = vault.store.head()
    index = None
    load: Loader | None = None
    dropped: dict[str, int] | None = None
    backend, note = (None, "vector: not configured")
    if request.query:
        from am.packs.retrieval import load_backend

        backend, note = load_backend(vault.settings)
    if request.as_of is not None:
        past = vault.store.last_commit_at(request.as_of.timestamp())
        if past is None:
            raise UsageError(f"the vault has no commit at or before {request.as_of_label or request.as_of}",
                             hint="pick a later time (see: git log --reverse --format=%ci | head -1)")
        commit = past
        records = records_at(vault, past)
    elif records is None:
        index = _open_index(vault)
        if index is not None:
            commit = index.head or commit
            if backend is None and hasattr(index, "fact_world_groups"):
                from am.packs.cache import cached_pack

                # Every topic, a topic's neighbourhood, or a query the full-text index serves: judged
                # and ranked in pieces, only the shown facts decoded.
                pack = cached_pack(index, request, setup, vault_name=vault.name, vault_commit=commit,
                                   search=_search_fn(index), backend_note=note)
                if pack is not None:
                    return _with_links(pack, vault, request, setup)
            records, load, dropped = _from_cache(index, setup.world)
        else:
            records = (r for _, r in vault.iter_records())
    search = _search_fn(index) if request.query else None
    links = None
    if index is not None and (request.topic or request.query):
        # The cache already parsed every body's links; parsing 10k bodies again costs seconds.
        links = _CachedLinks(index)
    # The cache belongs to the vault, which closes it.
    pack = build_pack(records, request, setup, vault_name=vault.name, vault_commit=commit,
                      search=search, backend=backend, backend_note=note, links=links, load=load,
                      dropped=dropped)
    return _with_links(pack, vault, request, setup)


def _with_links(pack: Pack, vault: Vault, request: SliceRequest, setup: WorldSetup) -> Pack:
    """Add what cross-vault links of the shown facts name, when asked to follow them."""
    if request.follow_links:
        from am.packs.retrieval import follow_links

        found, notes = follow_links([f for _, fs in pack.sections for f in fs] + pack.contested + pack.pending,
                                    vault.name, setup)
        pack.foreign.extend(found)
        pack.foreign_notes.extend(notes)
    return pack

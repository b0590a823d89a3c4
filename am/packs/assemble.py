"""Assembling a pack from ranked facts: ranking, the token budget and the sections (pure).

``build_pack(records, request, setup, ...)`` takes any iterable of records (the
cache, a work-tree scan, or a past commit's tree) and the world
(``am.worlds.ancestry.setup_world``) and returns a ``Pack``; ``fill`` admits
ranked facts under the budget, and is shared with the cache's fast path
(``am.packs.cache``), which ranks in SQL and hands the result here.

Ranking: pinned facts first, then (with --query) the retrieval order, then
confidence, then recency, then id. The budget admits facts in that order, a
topic's heading with its first fact, then relations among the shown topics;
whatever does not fit is counted in the pack, with the way to get it.

Decisions: docs/decisions/packs.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from am.errors import NotFoundError
from am.records.model import Fact, Record, Relation, Topic
from am.packs.pack import (
    Pack,
    SliceRequest,
    clean_text,
    estimate_tokens,
    fact_markdown,
    header_tokens,
    is_home_topic,
    other_topic_cost,
    placeholder_topic,
    relation_markdown,
    topic_markdown,
)
from am.worlds.stale import WatchedFact
from am.worlds.rules import (
    FactView,
    Resolution,
    resolve,
    to_moment,
)

if TYPE_CHECKING:
    from am.packs.retrieval import Retrieved
    from am.worlds.ancestry import WorldSetup
    from am.worlds.stale import StaleMark
    from am.cache.usage import UseSignals

__all__ = ["Loader", "build_pack", "fill", "topic_scope", "ids_of", "stale_lookup"]

Loader = Callable[[Sequence[str]], Mapping[str, Fact]]

_CONFIDENCE_RANK = {"high": 0, "medium": 1, "low": 2}
_LEFT_OUT_FACT_TOKENS = 120
_NO_TIME = datetime(1, 1, 2, tzinfo=timezone.utc)
_RANK_OF = attrgetter("rank")


def _created(record: Fact | FactView) -> datetime:
    """Return when a fact was written, as an aware moment (no offset: UTC; unknown: long ago)."""
    return (to_moment(record.created) if record.created else None) or _NO_TIME


def _rank(facts: list[Fact | FactView], order: Mapping[str, int], signals: UseSignals | None = None) -> None:
    """Sort facts best first: pinned, retrieval order, use and age (promoted, new or used, demoted),
    confidence, newest, id."""
    # Stable sorts applied from the last key to the first; each key is cheap to compare.
    last = len(order)

    def tier(f: Fact | FactView) -> int:
        return 0 if signals is None else signals.tier(f.id, _created(f).timestamp(), f.pinned)

    if all(isinstance(f, FactView) and f.rank >= 0 for f in facts):
        # The cache ranked them by (pinned, confidence, newest, id): the retrieval order and the tier are left.
        if order or signals is not None:
            facts.sort(key=lambda f: (not f.pinned, order.get(f.id, last), tier(f), _RANK_OF(f)))
        else:
            facts.sort(key=_RANK_OF)
        return
    facts.sort(key=lambda f: f.id)
    facts.sort(key=_created, reverse=True)
    facts.sort(key=lambda f: (not f.pinned, order.get(f.id, last), tier(f), _CONFIDENCE_RANK.get(f.confidence, 3)))


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
               backend: Any = None, backend_note: str = "vector: not installed",
               links: Any = None, load: Loader | None = None, dropped: Mapping[str, int] | None = None,
               watched: Callable[[], Iterable[WatchedFact]] | None = None, dirty: int = 0,
               signals: UseSignals | None = None, first: Sequence[str] = (),
               near: Mapping[str, int] | None = None) -> Pack:
    """Resolve records in the world, choose the scope, rank, and fill the budget.

    Facts may come as ``FactView`` (no body); ``load(ids)`` then returns the
    full facts, and is asked only for the facts the budget admits; ``dropped`` counts
    facts the source already left out (why -> how many), for the header;
    ``watched()`` names every fact that watches code paths (a view has no
    ``paths``; full facts are found by themselves): asked only when the world's
    staleness answers lack a shown fact, to compute them all at once. ``first``: fact ids that rank first (after pinned) when
    there is no query (``--path``'s matches); ``near``: the topics in scope, chosen by the caller (``--path``'s),
    while what holds is counted over every record.
    """
    res = resolve(records, setup.world, setup.oracle)
    for why, count in (dropped or {}).items():
        res.excluded[why] = res.excluded.get(why, 0) + count
    retrieved: Retrieved | None = None
    if near is not None:
        pass
    elif request.topic is not None:
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
    order = {i: n for n, i in enumerate(first if retrieved is None else retrieved.ids)}
    _rank(facts, order, signals)
    pack = Pack(request, setup, vault_name, vault_commit, res, scope, retrieval=retrieved, dirty=dirty)
    if watched is None:
        def watched() -> list[WatchedFact]:
            return [WatchedFact(f.id, f.commit, f.paths) for f in res.facts.values()
                    if isinstance(f, Fact) and f.paths and f.commit]
    pack.stale_lookup = stale_lookup(setup, watched)
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


def _place(fact: Fact, pack: Pack) -> str:
    """Return where a pack shows a fact: pinned, a topic's section, stale, contested or pending."""
    if fact.status == "contested":
        return "contested"
    if fact.status == "pending-review":
        return "pending"
    if fact.id in pack.stale:
        return "stale"
    return "pinned" if fact.pinned else "topic"


_HEADINGS = {"pinned": "\n## Pinned\n\n", "stale": "\n## Stale here (code they watch changed since they were "
             "observed: check before relying on them)\n\n",
             "contested": "\n## Contested (they hold, but are disputed: check before relying on them)\n\n",
             "pending": "\n## Pending review (not yet reviewed; shown on request)\n\n"}


def fill(pack: Pack, ranked: Iterable[Fact | None], total: int, topic_ids: Collection[str],
         relations: Sequence[Relation], topics: Mapping[str, Topic]) -> None:
    """Admit facts, topic headings and relations in rank order while the budget lasts.

    ``ranked`` yields the ``total`` facts in scope in full, best first (None:
    a fact whose file went away); it is read only as far as the budget goes.
    ``topics`` are the topics that hold, by id. Pinned facts (ranked first) go
    to their own section at the top; topics in scope with no fact shown are
    named on one line. The header's size is reserved from the start, and
    ``render_markdown`` trims from the end should the whole text still exceed
    the budget, so the pack never does.
    """
    budget = pack.request.max_tokens or None
    compact = pack.request.compact
    used = header_tokens(pack)
    opened: dict[str, list[Fact]] = {}
    section_rank: dict[str, int] = {}
    left = {"facts": 0, "topics": 0, "relations": 0}
    lists = {"pinned": pack.pinned, "stale": pack.stale_facts, "contested": pack.contested, "pending": pack.pending}
    needed = used

    def fits(cost: int) -> bool:
        nonlocal needed
        needed += cost
        return budget is None or used + cost <= budget

    def cost_of(fact: Fact, where: str | None, place: str, heading: bool) -> int:
        cost = estimate_tokens(fact_markdown(fact, where, stale=pack.stale.get(fact.id), compact=compact))
        if heading and place == "topic":
            cost += estimate_tokens(topic_markdown(topics.get(where or "") or placeholder_topic(where or ""),
                                                   compact=compact))
        elif heading:
            cost += estimate_tokens(_HEADINGS[place])
        return cost

    # No budget: no fact is cut, and a fact's size counts only in the hint of what was left out (a relation
    # whose topic is not shown, a fact whose file went away), so it is rendered for that only (20k: a second).
    later: list[tuple[Fact, str | None, str, bool]] = []
    lookup = pack.stale_lookup
    for n, fact in enumerate(ranked):
        if fact is None:  # its file went away between the two reads of the cache
            left["facts"] += 1
            continue
        if lookup is not None and fact.paths:
            mark = lookup(fact)
            if mark is not None:
                pack.stale[fact.id] = mark
        place = _place(fact, pack)
        section = next((t for t in fact.topics if t in topic_ids), fact.topics[0] if fact.topics else "")
        where = section if place == "topic" else None
        heading = section not in opened if place == "topic" else not lists[place]
        if budget is None:
            later.append((fact, where, place, heading))
        elif not fits(cost := cost_of(fact, where, place, heading)):
            pack.stale.pop(fact.id, None)
            # The cut is a prefix of the ranking; what follows is only counted, with a generous
            # size per fact (1-3 sentences and a meta line), so the hint gets them all.
            rest = total - n - 1
            left["facts"] += 1 + rest
            needed += rest * _LEFT_OUT_FACT_TOKENS
            break
        else:
            used += cost
        if place == "topic":
            holder = opened.setdefault(section, [])
            section_rank.setdefault(section, n)
        else:
            holder = lists[place]
        holder.append(fact)
        pack.order.append(("facts", fact, holder))
    # Topics in scope with nothing shown still tell the agent what exists: on one line, never as empty sections.
    line = False
    for tid in sorted(set(topic_ids) - set(opened)):
        topic = topics.get(tid)
        if topic is None:
            continue
        cost = other_topic_cost(topic) + (0 if line else 10)
        if fits(cost):
            used += cost
            line = True
            pack.others.append(topic)
            pack.order.append(("topics", topic, pack.others))
        else:
            left["topics"] += 1
    shown = set(opened) | {t.id for t in pack.others}
    for rel in relations:
        if rel.from_ in shown and rel.to in shown:
            cost = estimate_tokens(relation_markdown(rel))
            if fits(cost):
                used += cost
                pack.relations.append(rel)
                pack.order.append(("relations", rel, pack.relations))
                continue
        left["relations"] += 1
    # The world's own project comes first: it is what the agent is working on.
    home = pack.setup.world.repo
    pack.sections = [(topics.get(tid) or placeholder_topic(tid), opened[tid])
                     for tid in sorted(opened, key=lambda t: (not is_home_topic(t, home), section_rank[t], t))]
    pack.left_out = left
    if later and any(left.values()):
        needed += sum(cost_of(*item) for item in later)
    pack.needed = needed


def stale_lookup(setup: WorldSetup,
                 watched: Callable[[], Iterable[WatchedFact]]) -> Callable[[Fact], StaleMark | None] | None:
    """Return ``lookup(fact) -> StaleMark | None`` for the world (None without a clone's commit graph).

    A fact is looked up only when a pack shows it, in the answers kept for the
    world's tip; the first fact those answers lack has every watching fact
    (``watched()``) computed at once (am/worlds/stale.py), so a warm slice pays
    for the facts it shows, not for every fact that watches a path.
    """
    oracle = setup.oracle
    if oracle is None or not hasattr(oracle, "staleness"):
        return None
    from am.worlds.stale import StaleMark

    staleness = oracle.staleness()
    history = staleness.history
    state: dict[str, Any] = {"known": staleness.known(), "complete": False}

    def full(commit: str) -> str | None:
        return commit if commit in history else oracle.full_id(commit)

    def lookup(fact: Fact) -> StaleMark | None:
        if not fact.paths or not fact.commit:
            return None
        commit = full(fact.commit)
        if commit is None:
            return None
        paths = fact.paths if len(fact.paths) == 1 else tuple(sorted(set(fact.paths)))
        known = state["known"]
        if not state["complete"] and any(f"{commit} {w}" not in known for w in paths):
            pairs = [(commit, w) for w in paths]
            for other in watched():
                c = full(other.commit) if other.commit else None
                if c is not None:
                    pairs.extend((c, w) for w in other.paths)
            known = state["known"] = staleness.answers(pairs)
            state["complete"] = True
        for w in paths:
            found = known.get(f"{commit} {w}")
            if found:
                return StaleMark(w, found[0], found[1])
        return None

    return lookup


def ids_of(text: str | None) -> tuple[str, ...]:
    """Return the ids of a JSON list of strings as the cache stores them (``None`` or ``[]``: none)."""
    if not text or text == "[]":
        return ()
    if "\\" in text:
        return tuple(json.loads(text))
    # Without escapes, a JSON list of strings splits plainly (and ten times faster than json.loads).
    return tuple(text[2:-2].split('","'))



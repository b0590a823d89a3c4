"""A plain slice straight from the cache: worlds judged per distinct value, only the shown facts decoded.

For the default scope (every topic: no --topic, --query or --as-of) a pack
needs the counts of what holds, the supersession in the world, and the
best-ranked facts until the budget is full. ``cached_pack`` gets them without
building a Python object per fact:

- facts are grouped in SQL by their world fields (status, repo, branch,
  commit, until_commit, valid time), and ``am.worlds.judge`` decides each
  distinct group once; verdicts, rules and counts are therefore resolve()'s,
  and the ancestry oracle is asked once per distinct commit;
- SQL returns the supersession edges whose two ends may hold in the world;
  an edge hides its old fact when both ends' groups hold and the new one is
  believed (resolve()'s rule, applied in its order);
- facts are read best first along an index (pinned, confidence, newest, id)
  and decoded a chunk at a time until the budget is full; the rest are counted.

It returns None when two files share an id (the first-by-path rule needs
every row), and the caller takes the general path. Both paths give
byte-identical packs (tests/test_slice_cache.py holds them equal).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any, NamedTuple

from am.indexrows import record_from_json
from am.model import Fact, Relation, Topic
from am.pack import Pack, SliceRequest
from am.worlds import (
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
    from am.ancestry import WorldSetup

__all__ = ["cached_pack"]

_Key = tuple[Any, ...]  # status, repo, version, commit, until_commit, valid_from, valid_until
_BELIEVED = ("active", "contested")


class _RelationView(NamedTuple):
    """What a pack needs of a relation before it is shown."""

    id: str
    rel: str
    from_: str
    to: str
    status: str


class _Judge:
    """Verdicts per distinct combination of world fields, each decided once by ``am.worlds.judge``."""

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


def cached_pack(index: Any, request: SliceRequest, setup: WorldSetup, *, vault_name: str,
                vault_commit: str | None) -> Pack | None:
    """Build the pack of the default scope from the cache; None when the general path must do it."""
    from am.slice import fill

    if index.has_twins():
        return None
    world = setup.world
    verdict = _Judge(world, setup.oracle)
    res = Resolution()
    held = contested = 0
    for row in index.fact_world_groups():
        key, count = _key(row), row[7]
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
    for fid, old_key in hidden.values():
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
    statuses = _BELIEVED + (("pending-review",) if world.include_pending else ())
    topics: dict[str, Topic] = {t.id: t for t in index.topic_values(statuses=statuses)}
    res.topics = topics
    for rid, rel, src, dst, *fields in index.relation_world_rows():
        key = _key(fields)
        if verdict(key).holds and src not in hidden and dst not in hidden:
            res.relations[rid] = _RelationView(rid, rel, src, dst, key[0])  # type: ignore[assignment]
    pack = Pack(request, setup, vault_name, vault_commit, res, "every topic")
    in_scope = [r for r in res.relations.values() if r.from_ in topics and r.to in topics]
    ranked = _ranked(index, world, never, verdict, hidden)
    try:
        fill(pack, ranked, held, topics, in_scope, topics)
    finally:
        ranked.close()
    if pack.relations:
        full = {r.id: r for _, r in index.records(ids=[r.id for r in pack.relations]) if isinstance(r, Relation)}
        pack.relations = [full.get(r.id, r) for r in pack.relations]
    return pack


def _hidden(index: Any, world: World, never: tuple[str, ...], verdict: _Judge) -> dict[str, tuple[str, _Key]]:
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


def _ranked(index: Any, world: World, never: tuple[str, ...], verdict: _Judge,
            hidden: dict[str, tuple[str, _Key]]) -> Generator[Fact, None, None]:
    """Yield the facts that hold and are not superseded here, in full, best ranked first."""
    for row in index.ranked_facts(repo=world.repo, dropped=never):
        if row[0] in hidden or not verdict(_key(row[1:8])).holds:
            continue
        fact = record_from_json("fact", row[8])
        assert isinstance(fact, Fact)
        yield fact

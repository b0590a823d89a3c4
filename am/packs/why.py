"""Questions about one world beside the pack: why a fact is (not) in it, and which facts are stale there.

``why_fact(vault, fact_id, request)`` sets the world up exactly as a slice
does, finds the supersession in that world with ``resolve`` over what can hold
there, derives staleness, and lets ``am.worlds.why.explain`` walk the rules
with their evidence. ``stale_in_world(vault, request)`` lists the facts that
hold in the world and are stale there (``am stale``, and the code-repo hook).
Both take and return values, so every door (CLI, MCP) calls the same code.

Decisions: docs/decisions/worlds.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from am.errors import NotFoundError
from am.packs.assemble import stale_lookup
from am.packs.pack import SliceRequest
from am.records.model import Fact
from am.worlds.rules import resolve
from am.worlds.stale import StaleMark, WatchedFact
from am.worlds.why import Explanation, explain

if TYPE_CHECKING:
    from am.packs.reader import VaultReader
    from am.worlds.ancestry import WorldSetup

__all__ = ["StaleFact", "StaleReport", "WorldMarks", "stale_in_world", "why_fact", "world_marks"]


def why_fact(vault: VaultReader, fact_id: str, request: SliceRequest) -> Explanation:
    """Explain whether fact ``fact_id`` holds in the world of ``request``, rule by rule, with evidence."""
    from am.packs.slice import _from_cache, _open_index, world_of
    from am.worlds.ancestry import now

    _, fact = vault.get(fact_id)
    if not isinstance(fact, Fact):
        raise NotFoundError(f"{fact_id!r} is a {fact.type}, not a fact", hint="am why explains facts")
    setup = world_of(vault, request, at=request.at or now())
    index = _open_index(vault)
    if index is not None:
        records, _, _ = _from_cache(index, setup.world)
    else:
        records = [r for _, r in vault.iter_records()]
    res = resolve(records, setup.world, setup.oracle)
    superseded_by = res.superseded_here.get(fact.id)
    stale: StaleMark | None = None
    if fact.id in res.facts and fact.paths and fact.commit:
        found = stale_lookup(setup, lambda: [WatchedFact(fact.id, fact.commit or "", fact.paths)])
        stale = found(fact) if found is not None else None
    return explain(fact, setup.world, setup.oracle, superseded_by=superseded_by, stale=stale,
                   at_label=request.at_label)


@dataclass(frozen=True)
class StaleFact:
    """A fact that holds in a world and is stale there, with what changed."""

    fact: Fact
    mark: StaleMark


@dataclass(frozen=True)
class StaleReport:
    """The facts stale in one world, and those that watch code but whose staleness cannot be derived (with why)."""

    setup: WorldSetup
    facts: tuple[StaleFact, ...]
    cannot_tell: tuple[tuple[Fact, str], ...] = ()

    def ids(self) -> set[str]:
        """Return the ids of the stale facts."""
        return {s.fact.id for s in self.facts}


def stale_in_world(vault: VaultReader, request: SliceRequest) -> StaleReport:
    """Return the facts that hold in the world of ``request`` and whose watched code changed since.

    A fact that holds and watches paths but whose staleness cannot be derived (no readable registered clone,
    no commit, or one the clone lacks) is listed in ``cannot_tell`` with the reason, never counted as fresh.
    """
    from am.packs.slice import _open_index, slice_vault, world_of
    from am.worlds.ancestry import now

    request = replace(request, max_tokens=0, topic=None, query=None)
    index = _open_index(vault) if request.as_of is None else None
    if index is not None and hasattr(index, "fact_world_groups"):
        from am.packs.cache import held_watching

        # Only the facts that watch code paths can be stale: those of the pack, judged from the cache's world
        # fields with no pack built (the whole pack decoded and rendered 20k facts for a dozen).
        setup = world_of(vault, request, at=request.at or now())
        held = held_watching(index, setup)
        if held is not None:
            facts, lookup = held
            found = tuple(StaleFact(f, mark) for f in facts if lookup is not None and (mark := lookup(f)) is not None)
            unknown = tuple((f, why) for f in facts if (why := _cannot_tell(setup, f)) is not None)
            return StaleReport(setup, found, unknown)
    pack = slice_vault(vault, request, count_use=False)
    shown = {f.id: f for f in pack.all_shown()}
    found = tuple(StaleFact(shown[fid], mark) for fid, mark in sorted(pack.stale.items()) if fid in shown)
    unknown = tuple((f, why) for f in sorted(shown.values(), key=lambda f: f.id)
                    if f.paths and (why := _cannot_tell(pack.setup, f)) is not None)
    return StaleReport(pack.setup, found, unknown)


def _cannot_tell(setup: WorldSetup, fact: Fact) -> str | None:
    """Return why a fact's staleness cannot be derived in the world (DESIGN §5.6), or None when it can."""
    oracle = setup.oracle
    if oracle is None or not hasattr(oracle, "full_id"):
        return "; ".join(setup.notes) or "no registered clone of the world's repo"
    if not fact.commit:
        return "the fact names no commit (am fact confirm ID records one)"
    if oracle.full_id(fact.commit) is None:
        shallow = " (the clone is shallow: git fetch --unshallow in it)" if getattr(oracle, "shallow", False) else ""
        return f"commit {fact.commit[:10]} is not in the clone{shallow} (fetch it, or fix the id)"
    return None


@dataclass(frozen=True)
class WorldMarks:
    """Which records hold in a world, and the mark a search result gets there (superseded here, stale)."""

    setup: WorldSetup
    holding: frozenset[str]
    marks: dict[str, str]

    def keeps(self, record_id: str) -> bool:
        """Return whether a search hit belongs to the world: it holds there, or is superseded there."""
        return record_id in self.holding or record_id in self.marks

    def mark(self, record_id: str) -> str | None:
        """Return 'superseded here by X' or 'stale here: ...' for a hit, or None."""
        return self.marks.get(record_id)


def world_marks(vault: VaultReader, request: SliceRequest) -> WorldMarks:
    """Judge the whole vault in one world, for filtering and marking search results (``am search --branch``)."""
    from am.packs.slice import slice_vault

    pack = slice_vault(vault, replace(request, max_tokens=0, topic=None, query=None), count_use=False)
    res = pack.resolution
    holding = {f.id for f in pack.all_shown()} | set(res.topics) | set(res.relations)
    marks = {old: f"superseded here by {new}" for old, new in res.superseded_here.items()}
    marks.update({fid: f"stale here: {mark.describe()}" for fid, mark in pack.stale.items()})
    return WorldMarks(pack.setup, frozenset(holding), marks)

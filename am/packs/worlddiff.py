"""`am diff`: what memory says differently in two worlds, and after a merge not yet made.

A world's state is its ``--max-tokens 0`` pack (DESIGN §5): the facts that hold, those of
them stale or contested there, and the facts superseded there. Two states are compared
fact by fact and grouped by topic (DESIGN §14): a fact holds in one world only, is
superseded, stale or contested in one only. ``--merge-preview`` judges the target branch
as it would be after merging the other: the merge is made as Git makes it
(``git merge-tree --write-tree`` does the same), as a commit object no ref names, and
the target's world is judged at it, so the preview is the slice the real merge will give.

Decisions: docs/decisions/packs.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from am.errors import UnknownWorldError, UsageError
from am.packs.pack import SliceRequest

if TYPE_CHECKING:
    from am.packs.pack import Pack
    from am.packs.reader import VaultReader
    from am.records.model import Fact
    from am.worlds.ancestry import WorldSetup

__all__ = ["WorldState", "WorldDiff", "KINDS", "state_of", "diff_states", "merge_preview", "world_label"]

# (key, what it means, in A's words and B's): each kind lists the facts where the two worlds differ.
KINDS = ("holds", "superseded", "stale", "contested")


@dataclass(frozen=True)
class WorldState:
    """What holds in one world: facts by id, and which of them are stale or contested; what is superseded there."""

    label: str
    world: dict[str, Any]
    facts: dict[str, Fact]
    stale: dict[str, str]
    contested: frozenset[str]
    superseded: dict[str, str]  # old id -> the id that supersedes it here
    marks: dict[str, Any] = field(default_factory=dict)  # id -> StaleMark: what made it stale here

    def ids(self, kind: str) -> set[str]:
        """Return the ids of one kind (holds, superseded, stale, contested) in this world."""
        return {"holds": set(self.facts), "superseded": set(self.superseded), "stale": set(self.stale),
                "contested": set(self.contested)}[kind]

    def to_json(self) -> dict[str, Any]:
        """Return the stable JSON shape (ids only)."""
        return {"label": self.label, "world": self.world, "holds": sorted(self.facts), "stale": sorted(self.stale),
                "contested": sorted(self.contested), "superseded": dict(sorted(self.superseded.items()))}


@dataclass(frozen=True)
class Change:
    """One fact where the worlds differ: the kind, the side it is true in ("a" or "b"), its text and detail."""

    kind: str
    side: str
    id: str
    text: str
    topics: tuple[str, ...]
    detail: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "side": self.side, "id": self.id, "text": self.text, "topics": list(self.topics),
                "detail": self.detail}


@dataclass(frozen=True)
class WorldDiff:
    """The changes between world A and world B, grouped by topic (a fact of two topics is listed under both)."""

    a: WorldState
    b: WorldState
    changes: tuple[Change, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def by_topic(self) -> dict[str, list[Change]]:
        out: dict[str, list[Change]] = {}
        for change in self.changes:
            for topic in change.topics or ("(no topic)",):
                out.setdefault(topic, []).append(change)
        return dict(sorted(out.items()))

    def counts(self) -> dict[str, dict[str, int]]:
        out = {kind: {"a": 0, "b": 0} for kind in KINDS}
        for change in self.changes:
            out[change.kind][change.side] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a.to_json(), "b": self.b.to_json(), "counts": self.counts(),
                "topics": {t: [c.to_json() for c in cs] for t, cs in self.by_topic().items()},
                "notes": list(self.notes)}


def world_label(world: dict[str, Any]) -> str:
    """Return a world as people write it: repo@branch, with the commit when it names one alone."""
    repo = world.get("repo") or "no repo"
    if world.get("branch"):
        return f"{repo}@{world['branch']}"
    return f"{repo}@{str(world.get('commit') or '')[:10]}"


def _state(pack: Pack, label: str) -> WorldState:
    facts = {f.id: f for f in pack.all_shown()}
    res = pack.resolution
    contested = frozenset(f.id for f in facts.values() if f.status == "contested")
    stale = {fid: mark.describe() for fid, mark in pack.stale.items() if fid in facts}
    w = pack.setup.world
    world = {"repo": w.repo, "branch": w.branch, "commit": w.commit}
    marks = {fid: mark for fid, mark in pack.stale.items() if fid in facts}
    return WorldState(label, world, facts, stale, contested, dict(res.superseded_here), marks)


def state_of(vault: VaultReader, request: SliceRequest, *, setup: WorldSetup | None = None,
             label: str | None = None) -> WorldState:
    """Return the state of one world: its whole pack (no budget), judged as am slice judges it."""
    from am.packs.slice import slice_vault

    request = replace(request, max_tokens=0, topic=None, query=None)
    pack = slice_vault(vault, request, count_use=False, setup=setup)
    w = pack.setup.world
    return _state(pack, label or world_label({"repo": w.repo, "branch": w.branch, "commit": w.commit}))


def diff_states(vault: VaultReader, a: WorldState, b: WorldState, notes: tuple[str, ...] = ()) -> WorldDiff:
    """Compare two states fact by fact: each kind's ids in one world and not the other."""
    changes: list[Change] = []
    for kind in KINDS:
        in_a, in_b = a.ids(kind), b.ids(kind)
        for side, ids, state, other in (("a", in_a - in_b, a, b), ("b", in_b - in_a, b, a)):
            for fid in sorted(ids):
                fact = state.facts.get(fid) or other.facts.get(fid) or _read(vault, fid)
                detail = {"superseded": f"by {state.superseded.get(fid)}", "stale": state.stale.get(fid)}.get(kind)
                text = fact.body.strip().split("\n", 1)[0] if fact is not None else ""
                changes.append(Change(kind, side, fid, text, tuple(fact.topics) if fact is not None else (), detail))
    return WorldDiff(a, b, tuple(changes), notes)


def _read(vault: VaultReader, fact_id: str) -> Fact | None:
    from am.errors import AmError
    from am.records.model import Fact

    try:
        _, record = vault.get(fact_id)
    except AmError:
        return None
    return record if isinstance(record, Fact) else None


def merge_preview(vault: VaultReader, repo: str, target: str, branch: str, *,
                  include_pending: bool = False) -> tuple[WorldState, WorldState, tuple[str, ...]]:
    """Return ``target``'s state now and as it would be once ``branch`` is merged into it, with notes.

    The merge is made in the clone's object store as Git makes it (``git merge-tree --write-tree``): a commit
    object with the two tips as parents that no ref names, so nothing a user sees changes. A path both sides
    changed in ways Git cannot merge keeps the target's side and is named in a note: the facts watching it are
    stale after the merge either way.
    """
    from am.worlds.ancestry import now, open_clone
    from am.worlds.preview import merge_commit

    before = state_of(vault, SliceRequest(repo=repo, branch=target, include_pending=include_pending))
    store, why = open_clone(repo)
    if store is None:
        raise UnknownWorldError(f"--merge-preview needs a clone of {repo} on this machine ({why})",
                                hint=f"register one: am repo add {repo} PATH")
    ours, theirs = before.world.get("commit"), _tip(store, branch, repo)
    merged, conflicts = merge_commit(store, str(ours), theirs, f"am diff --merge-preview: {branch} into {target}")
    from am.packs.slice import world_of

    setup = world_of(vault, SliceRequest(repo=repo, commit=merged, include_pending=include_pending), at=now())
    setup = replace(setup, world=replace(setup.world, branch=target))  # main, once the merge is made
    after = state_of(vault, SliceRequest(repo=repo, branch=target, include_pending=include_pending), setup=setup,
                     label=f"{repo}@{target} after merging {branch}")
    notes = tuple(f"{path}: both sides changed it and Git cannot merge them; the preview keeps {target}'s"
                  for path in conflicts)
    return before, after, notes


def _tip(store: Any, branch: str, repo: str) -> str:
    from am.worlds.branches import branch_names, branch_tip, did_you_mean, known_list

    tip = branch_tip(store, branch)
    if tip is None:
        names = branch_names(store)
        guess = did_you_mean(branch, names)
        raise UnknownWorldError(f"branch {branch} is not in the clone of {repo} (branches: {known_list(names)})",
                                hint=(f"did you mean {guess!r}? " if guess else "") + "fetch it, or check the name")
    return str(tip)


def refuse_same(a: dict[str, Any], b: dict[str, Any]) -> None:
    """Refuse a diff of a world with itself (a typo in one of the names, most likely)."""
    if a == b:
        raise UsageError(f"both sides name the same world ({world_label(a)})", hint="name two different worlds")

"""`am due`: the re-verification queue, in place of decay (DESIGN §14).

A fact does not lose weight with age; it becomes *due* when something says it should be
looked at again, each item with the one command that settles it:

* ``stale``: it holds in the world and code it watches changed since the commit it was
  observed at (``am fact confirm ID --here`` in a clone at the new code, or supersede it);
* ``gone``: a path it watches existed at the commit it was observed at and is not at the
  world's commit (deleted or renamed: supersede it with the new path, or expire it);
* ``unconfirmed``: packs used it at least ``USED`` times in the last 30 days and it was last
  observed more than N days ago (its code commit's time; its ``created`` when it names none);
* ``pending``: a proposal or pending fact waiting for review more than N days.

Decisions: docs/decisions/packs.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from am.packs.pack import SliceRequest

__all__ = ["DueItem", "due_in_world", "pending_due", "USED"]

USED = 5  # uses in the last 30 days that make an old observation worth checking again
_MONTH = 30


@dataclass(frozen=True)
class DueItem:
    """One fact to look at again: why, where, and the command that settles it."""

    kind: str
    fact: str
    text: str
    world: str
    why: str
    settle: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "fact": self.fact, "text": self.text, "world": self.world, "why": self.why,
                "settle": self.settle}


def _first(fact: Any) -> str:
    return str(getattr(fact, "body", "")).strip().split("\n", 1)[0]


def _moment(value: str | None) -> datetime | None:
    from am.records.ids import stored_moment

    return stored_moment(value) if value else None


def due_in_world(vault: Any, repo: str, branch: str | None, now: datetime, days: int) -> list[DueItem]:
    """Return the facts due for a look in one world (stale, watching gone paths, used but long unconfirmed)."""
    from am.packs.worlddiff import state_of
    from am.worlds.ancestry import open_clone
    from am.worlds.codetree import CodeTree

    state = state_of(vault, SliceRequest(repo=repo, branch=branch))
    where = state.label
    out: list[DueItem] = []
    store, _ = open_clone(repo)
    commit = state.world.get("commit")
    now_tree = CodeTree(store, str(commit)) if store is not None and commit else None
    trees: dict[str, CodeTree | None] = {}
    for fid, fact in sorted(state.facts.items()):
        paths, seen_at, mark = getattr(fact, "paths", ()), getattr(fact, "commit", None), state.marks.get(fid)
        if not paths or now_tree is None:
            gone: list[str] = []
        elif mark is not None:  # stale: because a path it watches went, or because one changed
            gone = [p for p in paths if not now_tree.holds(p)]
        else:  # not stale, yet a path it watched when observed is not there (a history rewritten past it)
            if seen_at and seen_at not in trees:
                full = store.find_commit(seen_at) if store is not None else None
                trees[seen_at] = CodeTree(store, full) if store is not None and full else None
            then = trees.get(seen_at) if seen_at else None
            gone = [p for p in paths if then is not None and then.holds(p) and not now_tree.holds(p)]
        if gone:
            out.append(DueItem("gone", fid, _first(fact), where,
                               f"watches {', '.join(gone)}, which {str(commit)[:10]} no longer has",
                               f"am fact supersede {fid} TEXT --path NEW --reason R   (or, if it still holds "
                               f"without it: am fact confirm {fid} --here)"))
        elif mark is not None:
            out.append(DueItem("stale", fid, _first(fact), where,
                               f"{mark.path} changed in {mark.commit[:10]} since it was observed",
                               f"am fact confirm {fid} --here   (or: am fact supersede {fid} TEXT --reason R)"))
    # Up to yesterday, as ranking counts them: what a day of reads lists does not change during that day.
    uses = vault.usage().counts(repo=repo, branch=branch, days=_MONTH, at=now)
    cutoff = now - timedelta(days=days)
    listed = {i.fact for i in out}
    for fid, n in sorted(uses.items()):
        held = state.facts.get(fid)
        if held is None or n < USED or fid in listed:
            continue
        seen = _observed(store, held)
        if seen is not None and seen < cutoff:
            out.append(DueItem("unconfirmed", fid, _first(held), where,
                               f"used {n} times in {_MONTH} days; last observed {seen.date().isoformat()}",
                               f"am fact confirm {fid} --here"))
    return out


def _observed(store: Any, fact: Any) -> datetime | None:
    """When a fact was last observed: its code commit's time, else its ``created`` time."""
    commit = getattr(fact, "commit", None)
    if store is not None and commit:
        full = store.find_commit(commit)
        if full:
            return datetime.fromtimestamp(store.commit_info(full).time).astimezone()
    return _moment(getattr(fact, "created", None))


def pending_due(vault: Any, now: datetime, days: int) -> list[DueItem]:
    """Return the proposals and pending facts waiting for review more than ``days`` days."""
    out = []
    cutoff = now - timedelta(days=days)
    for fact in vault.list_facts(status="pending-review"):
        made = _moment(fact.created)
        if made is not None and made < cutoff:
            age = (now - made).days
            out.append(DueItem("pending", fact.id, _first(fact), "any", f"waiting for review {age} days",
                               f"am review   (or: am review accept {fact.id})"))
    return out

"""What a world makes of the records, kept in the process while the cache's records stay the same.

A slice from the cache (am/packs/cache.py) starts by judging every distinct
group of world fields, reading the supersession edges that may hold, the
topics and the relations: at 100k facts that is half of a warm slice, and the
same again for every slice of the same world (an MCP server, ``am serve``).
It depends on the records, the world and the clock, so it is kept per

- cache file and its records token (``Index.records_token``: a trigger gives it
  a new random value whenever a record row comes, goes or changes, in any process);
- world without its moment (repo, branch, commit, pending);
- span of time between the valid-time bounds the records name: a moment on the
  other side of any ``valid_from`` or ``valid_until`` judges afresh.

Only worlds judged without an ancestry oracle (no registered clone: by branch
name) are kept. An oracle's answers change with the clone (a fetch brings a
commit a fact names), and asking it leaves what the pack's id names (the commits
outside the world's history, am/packs/packid.py), so those worlds are judged each time.

Each use gets its own copy of the dictionaries, so a pack cannot change what is kept.

Decisions: docs/decisions/packs.md.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import datetime
from typing import Any

from am.worlds.rules import Resolution, World, to_moment

__all__ = ["remembered", "forget"]

_KEEP = 8  # worlds kept per process (the oldest dropped first)
# key -> (the valid-time bounds, the span the moment was in, resolution, never, hidden, verdicts)
_MEMO: dict[tuple[Any, ...], tuple[list[datetime], int, Resolution, Any, Any, dict[Any, Any]]] = {}


def forget() -> None:
    """Drop everything kept (tests; a process that wants to measure the first slice)."""
    _MEMO.clear()


def _bounds(values: Iterable[str | None]) -> list[datetime] | None:
    """The valid-time moments named, sorted: a world's verdicts change only when its moment crosses one
    (None when they cannot be ordered: then nothing is kept)."""
    try:
        return sorted({m for v in values if v is not None and (m := to_moment(v)) is not None})
    except TypeError:
        return None


def _span(bounds: list[datetime], at: datetime | None) -> int:
    """Which span between the bounds ``at`` falls in (-1: no moment, valid time is not judged)."""
    try:
        return -1 if at is None else bisect_right(bounds, at)
    except TypeError:
        return -2  # a moment that cannot be compared with the bounds: never the span kept


def _copy(res: Resolution) -> Resolution:
    return replace(res, topics=dict(res.topics), facts=dict(res.facts), relations=dict(res.relations),
                   all_topics=dict(res.all_topics), excluded=dict(res.excluded),
                   superseded_here=dict(res.superseded_here), rules=dict(res.rules))


def remembered(index: Any, world: World, oracle: Any, counts_only: bool, known: dict[Any, Any],
               compute: Callable[[list[str | None]], tuple[Resolution, Any, Any]]) -> tuple[Resolution, Any, Any]:
    """Return ``compute(times)``'s (resolution, never, hidden), or a copy of what it returned before for the same
    records, world and span of time. ``compute`` appends to ``times`` every valid-time bound it judged;
    ``known`` (the verdicts by world fields) is filled with the verdicts kept with it."""
    if oracle is not None or not hasattr(index, "records_token"):
        return compute([])
    key = (str(getattr(index, "path", id(index))), index.records_token(), replace(world, at=None), counts_only)
    found = _MEMO.get(key)
    if found is not None:
        bounds, span, res, never, hidden, verdicts = found
        if span >= -1 and _span(bounds, world.at) == span:
            known.update(verdicts)
            return _copy(res), never, dict(hidden)
    times: list[str | None] = []
    res, never, hidden = compute(times)
    kept = _bounds(times)
    if kept is not None:
        while len(_MEMO) >= _KEEP:
            del _MEMO[next(iter(_MEMO))]
        _MEMO[key] = (kept, _span(kept, world.at), _copy(res), never, dict(hidden), dict(known))
    return res, never, hidden

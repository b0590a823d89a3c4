"""Packs a server already rendered, kept while nothing they depend on has changed.

A pack is deterministic: the same vault content, world and request give the
same bytes (DESIGN §6). So a long-lived server keeps the packs it rendered,
keyed by the request, the world as resolved (the clone's branch tip: a new
commit there is a new key), and the cache's content token (any write to the
vault, by this server, the CLI or a hand edit the cache has taken in, changes
it). Valid time is the one input that moves by itself: a pack for "now" is kept
only until the next moment at which some record's ``valid_from`` or
``valid_until`` falls. Requests that read other vaults or the vault's history
(``follow_links``, ``as_of``) or a vector backend are not kept.

Decisions: docs/decisions/agents.md.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from datetime import datetime
from typing import Any

__all__ = ["PackMemo"]

_SIZE = 32


class PackMemo:
    """A small LRU of rendered packs, one per worker thread (cache tokens are per connection)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def _table(self) -> OrderedDict[Hashable, tuple[Any, datetime | None]]:
        table: OrderedDict[Hashable, tuple[Any, datetime | None]] | None = getattr(self._local, "table", None)
        if table is None:
            table = self._local.table = OrderedDict()
        return table

    def get_or_make(self, key: Hashable, now: datetime, make: Callable[[], Any],
                    bounds: Callable[[], list[str]]) -> Any:
        """Return the value kept for ``key`` if still valid at ``now``, else make, keep and return it."""
        table = self._table()
        found = table.get(key)
        if found is not None and (found[1] is None or now < found[1]):
            table.move_to_end(key)
            return found[0]
        value = make()
        table[key] = (value, _next_bound(bounds(), now))
        table.move_to_end(key)
        while len(table) > _SIZE:
            table.popitem(last=False)
        return value


def _next_bound(values: list[str], now: datetime) -> datetime | None:
    from am.worlds.rules import to_moment

    later = [m for m in (to_moment(v) for v in values) if m is not None and m > now]
    return min(later) if later else None

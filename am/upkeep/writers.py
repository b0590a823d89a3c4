"""Fact writes by actor (am serve's Numbers page), each commit counted once and kept.

What a commit wrote never changes: its actor, and how many facts (one for a ``fact.add`` or
``fact.supersede``, the fact records of an ``import.batch`` or of a hand commit, read from the files it
changed as ``am log`` reads them). Counting a hand commit costs a tree diff and a parse of each file it
changed; at 10k commits the whole count took seconds, every time the page opened. So each commit's count is
kept in ``.am/cache/writers.json`` (derived and disposable, like the rest of ``.am/cache/``), with the total
for the HEAD it was made at: the same HEAD is answered from the file, a new one walks history and counts only
the commits the file lacks. A file that is missing, damaged or of another version is counted anew.

Decisions: docs/decisions/web.md.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections import Counter
from pathlib import Path
from typing import Any, TypeGuard

__all__ = ["fact_writes_by_actor"]

log = logging.getLogger("am")

_VERSION = 1  # the counting rule below; a file of another version is counted anew
_FACT_OPS = ("fact.add", "fact.supersede")


def _file(vault: Any) -> Path:
    return Path(vault.root) / ".am" / "cache" / "writers.json"


def _count(store: Any, info: Any) -> list[Any]:
    """Return [actor, facts written] of one commit, or [] for a commit that writes no fact by the page's rule."""
    from am.upkeep.audit import _record_files, _record_ids, entry_of

    entry = entry_of(store, info, records=False)
    if entry.op in _FACT_OPS:
        return [entry.actor, 1]
    if entry.op == "import.batch" or entry.manual:
        records = _record_ids(store, _record_files(store, info)) if entry.manual else entry.records
        return [entry.actor, sum(1 for r in records if r.startswith("f-"))]
    return []


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != _VERSION or not isinstance(data.get("commits"), dict):
        return {}
    return data


def _valid(value: Any) -> TypeGuard[list[Any]]:
    return value == [] or (isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)
                           and isinstance(value[1], int) and not isinstance(value[1], bool))


def _save(path: Path, head: str | None, commits: dict[str, list[Any]], totals: dict[str, int]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps({"version": _VERSION, "head": head, "totals": totals, "commits": commits}),
                       encoding="utf-8")
        os.replace(tmp, path)
    except OSError as err:  # the count is still right; the next one walks history again
        log.warning("could not keep the fact writes by actor in %s: %s", path, err)


def fact_writes_by_actor(vault: Any) -> dict[str, int]:
    """Return, by actor, the facts written in the vault's history, sorted by actor (``am serve``'s Numbers)."""
    store = vault.store
    path = _file(vault)
    kept = _load(path)
    head = store.head()
    totals = kept.get("totals")
    if head is not None and kept.get("head") == head and isinstance(totals, dict) \
            and all(isinstance(k, str) and isinstance(v, int) for k, v in totals.items()):
        return dict(sorted(totals.items()))
    known: dict[str, Any] = kept.get("commits", {})
    commits: dict[str, list[Any]] = {}
    by_actor: Counter[str] = Counter()
    for info in store.walk(head):
        kept_value = known.get(info.id)
        value = kept_value if _valid(kept_value) else _count(store, info)
        commits[info.id] = value
        if value:
            by_actor[value[0]] += value[1]
    found = dict(sorted(by_actor.items()))
    _save(path, head, commits, found)  # only the commits of this history: a rewritten one's are let go
    return found

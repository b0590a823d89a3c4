"""The vault's numbers: records by status, kind, confidence, provenance, actor, pin and week.

``am stats`` counts what the record files hold now (the same records ``am fact list``
lists) and, for the actor, who first wrote each fact, read from the commits' trailers (a
fact whose first commit is beyond a shallow clone counts as ``(shallow)``; one no commit
names, as ``(unknown)``). The week is the ISO week of a fact's ``created`` time.

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from am.upkeep.audit import SHALLOW_ACTOR, log_entries

__all__ = ["vault_stats"]

_UNKNOWN = "(unknown)"


def _week(created: str | None) -> str:
    """Return the ISO week of a time, e.g. 2026-W39 (a fact with no or an unreadable time: 'undated')."""
    if not created:
        return "undated"
    try:
        year, week, _ = datetime.fromisoformat(created).isocalendar()
    except ValueError:
        return "undated"
    return f"{year}-W{week:02d}"


def _counts(values: Any) -> dict[str, int]:
    """Return a Counter as a dict, largest first, then by name."""
    return dict(sorted(Counter(values).items(), key=lambda kv: (-kv[1], kv[0])))


def first_writers(vault: Any, ids: set[str]) -> dict[str, str]:
    """Return, for each record id in ``ids``, the actor of the oldest commit that names it."""
    found: dict[str, str] = {}
    for entry in log_entries(vault):  # newest first: an older commit overwrites a newer one's claim
        for record_id in entry.records:
            if record_id in ids:
                found[record_id] = entry.actor
    return found


def vault_stats(vault: Any, *, actors: bool = True) -> dict[str, Any]:
    """Return the vault's counts as a JSON-ready mapping."""
    facts = vault.list_facts()
    topics = vault.list_topics()
    relations = vault.list_relations()
    out: dict[str, Any] = {
        "facts": {
            "total": len(facts),
            "by_status": _counts(f.status for f in facts),
            "by_confidence": _counts(f.confidence for f in facts),
            "by_provenance": _counts(f.provenance for f in facts),
            "pinned": sum(1 for f in facts if f.pinned),
            "by_week": dict(sorted(Counter(_week(f.created) for f in facts).items())),
        },
        "topics": {"total": len(topics), "by_kind": _counts(t.kind for t in topics),
                   "by_status": _counts(t.status for t in topics)},
        "relations": {"total": len(relations), "by_type": _counts(r.rel for r in relations),
                      "by_status": _counts(r.status for r in relations)},
    }
    if actors:
        writers = first_writers(vault, {f.id for f in facts})
        shallow = _shallow(vault)
        out["facts"]["by_actor"] = _counts(writers.get(f.id, SHALLOW_ACTOR if shallow else _UNKNOWN) for f in facts)
    index = vault.cache()
    out["unreadable"] = [str(p) for p in index.unreadable_paths()] if index is not None else []
    return out


def _shallow(vault: Any) -> bool:
    from am.upkeep.audit import shallow_note

    return shallow_note(vault) is not None

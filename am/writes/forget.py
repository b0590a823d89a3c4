"""`am fact forget`: a fact's text replaced by a tombstone, in one commit (DESIGN §15, the first level).

Forgetting on purpose keeps the record and its id (links and supersession chains still
resolve) and takes the text out of everything am reads from the working tree: packs, search
and the cache hold the tombstone, never the text. The fact is expired, so it holds nowhere.
History still holds the text; `am purge` (am/upkeep/purge.py) takes it out of history too.

Decisions: docs/decisions/writes.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from am.errors import UsageError
from am.records.model import Fact, replace
from am.records.writes import one_line

if TYPE_CHECKING:
    from am.records.writes import WriteResult
    from am.writes.writer import RecordWriter

__all__ = ["TOMBSTONE", "forget_fact", "is_tombstone", "tombstone_text"]

TOMBSTONE = "[forgotten]"


def tombstone_text(actor: str, when: str, reason: str) -> str:
    """Return the body a forgotten fact keeps: who forgot it, when, and why; never what it said."""
    return f"{TOMBSTONE} by {actor} on {when[:10]}: {one_line(reason)}\n"


def is_tombstone(fact: Fact) -> bool:
    """Return whether a fact's text was forgotten."""
    return fact.body.startswith(TOMBSTONE)


def forget_fact(writer: RecordWriter, fact_id: str, *, reason: str, actor: str, when: str) -> WriteResult:
    """Expire ``fact_id`` and replace its text, reason and watched paths with a tombstone, in one commit."""
    if not reason.strip():
        raise UsageError("forgetting needs a reason (it is kept in the tombstone)", hint='pass --reason "..."')
    path, fact, base = writer.existing_for_update(fact_id, Fact, "fact")
    if is_tombstone(fact):
        raise UsageError(f"{fact_id} is already forgotten",
                         hint=f"to take its text out of history too: am purge {fact_id} --reason \"...\"")
    # Tags and paths may say what the text said; the world and topics say only where it held.
    forgotten = replace(fact, body=tombstone_text(actor, when, reason), status="expired",
                        reason=one_line(f"forgotten: {reason}"), tags=(), paths=(), extra={})
    return writer.write([(path, forgotten, base)], noun="fact", verb="forget", ids=[fact_id], reason=reason,
                        subject=f"fact: forget {fact_id}")

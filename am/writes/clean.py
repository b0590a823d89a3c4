"""`am clean`: expire every holding fact of a vault (or of one topic) in one commit (OpenChronicle's clean memory).

Wiping memory in am deletes nothing: each fact that holds somewhere (active, contested or
pending review) is expired with the reason given, in one commit that `git revert` (or
`am undo`) brings back whole. Topics, relations, superseded and expired facts are left as
they are.

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

__all__ = ["HOLDING", "clean_facts", "holding_facts"]

HOLDING = ("active", "contested", "pending-review")


def holding_facts(facts: list[Fact], topic: str | None) -> list[Fact]:
    """Return the facts a clean would expire: those with a holding status (of ``topic``, when given)."""
    return [f for f in facts if f.status in HOLDING and (topic is None or topic in f.topics)]


def clean_facts(writer: RecordWriter, ids: list[str], *, reason: str, topic: str | None) -> WriteResult:
    """Expire each fact in ``ids`` with ``reason``, all in one commit."""
    if not reason.strip():
        raise UsageError("cleaning memory needs a reason", hint='pass --reason "..."')
    if not ids:
        raise UsageError("no fact holds" + (f" on topic {topic}" if topic else "") + ": nothing to clean")
    items = []
    for fid in ids:
        path, fact, base = writer.existing_for_update(fid, Fact, "fact")
        items.append((path, replace(fact, status="expired", reason=one_line(f"cleaned: {reason}")), base))
    scope = f"topic {topic}" if topic else "the vault"
    # Only the status changes: a text that looks like a credential was already committed, and is not written anew.
    return writer.write(items, noun="fact", verb="clean", ids=ids, reason=reason, allow_secrets=True,
                        subject=f"fact: clean {scope} ({len(ids)} facts expired)")

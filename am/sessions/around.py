"""The turns around a session hit, or its whole session: lossless-memory's transcript recall.

``am search --session --around N`` shows, under each hit, the N messages said before and the
N after it in the same log, in order; ``--full`` shows the whole session. They are read
from the stored (masked) log itself, the same bytes ``am search --session`` indexed, so a
turn shown here is a turn the vault holds.

Decisions: docs/decisions/sessions.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from am.errors import AmError
from am.records.sessionlog import Message, log_file, messages

if TYPE_CHECKING:
    from am.sessions.search import SessionHit
    from am.vault import Vault

__all__ = ["turns_around", "turn_json"]


def _said(vault: Vault, hit: SessionHit, cache: dict[str, list[Message]]) -> list[Message]:
    if hit.topic not in cache:
        said: list[Message] = []
        try:
            topic = vault.get_topic(hit.topic)
        except AmError:  # the topic went (a sync, a rename) since the search: nothing to show
            topic = None
        where = log_file(vault.root, hit.path)
        if topic is not None and where is not None:
            try:
                said = list(messages(where.read_bytes(), str(topic.extra.get("client", "jsonl"))))
            except OSError:
                said = []
        cache[hit.topic] = said
    return cache[hit.topic]


def turns_around(vault: Vault, hits: tuple[SessionHit, ...], around: int | None) -> list[list[Message]]:
    """Return, for each hit, the messages from ``around`` before it to ``around`` after it (None: the whole log)."""
    cache: dict[str, list[Message]] = {}
    out: list[list[Message]] = []
    for hit in hits:
        said = _said(vault, hit, cache)
        if around is None:
            out.append(said)
            continue
        at = next((i for i, m in enumerate(said) if m.line == hit.line and m.role == hit.role), None)
        out.append([] if at is None else said[max(0, at - around):at + around + 1])
    return out


def turn_json(message: Message) -> dict[str, Any]:
    """Return one turn's stable JSON shape."""
    return {"line": message.line, "role": message.role, "ts": message.ts, "text": message.text}

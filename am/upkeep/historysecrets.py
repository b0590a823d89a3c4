"""`am check --secrets`: every version of every record in the vault's history, scanned for credentials.

A secret written before the scanner knew its shape, or with ``--allow-secret``, or by a
hand commit that skipped the hooks, lives in history even after the record changed. This
reads each distinct record blob reachable from the local branches once (walking the
commits' changes, not every tree) and reports which record holds which kind of credential
at which commit, with the `am purge` that takes it out of history (docs/forget.md).

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["HistorySecret", "secrets_in_history"]


@dataclass(frozen=True)
class HistorySecret:
    """A record version that holds a suspected credential: where, since which commit, and what it looks like."""

    record: str
    path: str
    commit: str
    kind: str
    excerpt: str
    current: bool  # the record as it is now still holds it

    def to_json(self) -> dict[str, Any]:
        return {"record": self.record, "path": self.path, "commit": self.commit, "kind": self.kind,
                "excerpt": self.excerpt, "current": self.current}


def secrets_in_history(vault: Any) -> list[HistorySecret]:
    """Return each record version in history with a suspected credential (oldest commit that wrote it)."""
    from am.records.secrets import scan_text

    store = vault.store
    seen: set[str] = set()
    found: dict[tuple[str, str], HistorySecret] = {}
    current = {str(p): True for p in vault.iter_record_paths()}
    for info in store.walk():
        parent = info.parents[0] if info.parents else None
        for path, blob in store.diff_paths(parent, info.id):
            if blob is None or blob in seen or not path.endswith(".md"):
                continue
            seen.add(blob)
            text = store.read_object(blob).decode("utf-8", "replace")
            hits = scan_text(text)
            if not hits:
                continue
            record = _record_id(text, path)
            now = current.get(path, False) and store.blob_id(path) == blob
            for hit in hits:
                # Walked newest first: an older commit that wrote the same kind into the record replaces it.
                found[(record, hit.kind)] = HistorySecret(record, path, info.id, hit.kind, hit.excerpt, now)
    return sorted(found.values(), key=lambda s: (s.record, s.kind))


def _record_id(text: str, path: str) -> str:
    for line in text.splitlines()[1:40]:
        if line.startswith("id:"):
            return line[3:].strip().strip("'\"")
        if line.strip() == "---":
            break
    return path.rsplit("/", 1)[-1].removesuffix(".md")

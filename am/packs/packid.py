"""A pack's id: ``p-<vault commit>-<digest of the question>[-<code commit>[-<digest of outside commits>]]``.

Every pack names itself by it in its header (am/packs/pack.py), and ``am slice --since`` takes it back
(am/packs/delta.py): below both, it imports neither.

Decisions: docs/decisions/packs.md.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from am.worlds.ancestry import WorldSetup

__all__ = ["Question", "outside_digest", "pack_id"]


class Question(Protocol):
    """What a pack's id needs of its request (``am.packs.pack.SliceRequest`` is one): the question as words."""

    def argv(self) -> str: ...


def pack_id(vault_commit: str | None, request: Question, setup: WorldSetup | None = None) -> str:
    """Return a pack's id: the vault commit it read, a digest of the question (no clock), and in a
    world judged by commit ancestry the code commit, whose history decides what holds as much as the vault does."""
    # CRC-32, not hashlib: a slice must not load OpenSSL (tests/test_startup.py); this only tells questions apart.
    digest = f"{zlib.crc32(request.argv().encode('utf-8')):08x}"[:6]
    code = f"-{setup.world.commit[:12]}" if setup is not None and setup.oracle is not None and setup.world.commit else ""
    return f"p-{(vault_commit or '0' * 12)[:12]}-{digest}{code}{outside_digest(setup)}"


def outside_digest(setup: WorldSetup | None) -> str:
    """Return ``-<digest>`` of how the commits outside the world's history were judged, or "" when none were.

    Whether such a commit is in the clone, and where it landed (a squash of a branch the clone has), changes
    with a fetch or a deleted branch while the world's commit stays: the id must change with it.
    """
    outside = getattr(setup.oracle, "outside", None) if setup is not None else None
    if not outside or not setup or not setup.world.commit:
        return ""
    text = "".join(f"{c} {o}\n" for c, o in sorted(outside.items()))
    return f"-{zlib.crc32(text.encode('ascii', 'replace')):08x}"[:7]

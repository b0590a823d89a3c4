"""The GitStore class: reading, writing and repair in one object (importing this imports pygit2)."""

from __future__ import annotations

from am.git.repair import Repairer

__all__ = ["GitStore"]


class GitStore(Repairer):
    """A vault's (or a code repository's) Git repository, seen through the operations am needs."""
